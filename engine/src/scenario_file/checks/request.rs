//! `on = "request"`: one model request, normalised (`docs/transcripts.md` placeholders),
//! matched, and its raw body searched.

use anyhow::bail;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::drift::normalize::Normalizer;
use crate::scenario_file::execute::Run;
use crate::scenario_file::matching;
use crate::scenario_file::steps::Uses;

/// One model request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestCheck {
    /// Its place among the model requests; negative counts from the end (-1: the last).
    pub index: i64,
    /// A subset the normalised request (`method`, `path`, `headers`, `body`) must match.
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    pub matches: Option<Value>,
    /// Texts the raw body must contain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contains: Vec<String>,
    /// Texts the raw body must not contain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lacks: Vec<String>,
    /// The text of the last user message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_user_text: Option<String>,
    /// A mismatch is drift under this key instead of a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<String>,
}

impl RequestCheck {
    pub(super) fn needs_app_server(&self) -> bool {
        false
    }

    pub(super) fn uses<'a>(&'a self, u: &mut Uses<'a>) {
        u.expectations.extend(&self.matches);
        u.texts.extend(
            self.contains
                .iter()
                .chain(&self.lacks)
                .chain(&self.last_user_text)
                .map(String::as_str),
        );
    }

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        let index = self.index;
        let drift = self.drift.as_ref();
        let want = usize::try_from(index).map_or(1, |i| i + 1);
        let requests = run.model_requests(want).await?;
        let at = if index < 0 {
            requests.len().checked_sub(index.unsigned_abs() as usize)
        } else {
            usize::try_from(index).ok().filter(|i| *i < requests.len())
        };
        let Some(at) = at else {
            bail!(
                "expected a model request #{index}, found {} request(s)",
                requests.len()
            );
        };
        let mut normalizer = Normalizer::default();
        let normalised: Vec<Value> = requests.iter().map(|r| normalizer.request(r)).collect();
        let r = &requests[at];
        let what = format!("model request #{at}");
        if let Some(m) = &self.matches {
            let expected = normalizer.json(&run.value(m)?);
            let result = matching::check(&expected, Some(&normalised[at]), "");
            run.judge(drift, result, &normalised[at], &what)?;
        }
        for t in &self.contains {
            let t = run.text(t)?;
            let result = if r.body_contains_text(&t) {
                Ok(())
            } else {
                Err(format!(
                    "at /body: expected a body containing {t:?}, found none"
                ))
            };
            run.judge(drift, result, &json!({"body": false}), &what)?;
        }
        for t in &self.lacks {
            let t = run.text(t)?;
            let result = if r.body_contains_text(&t) {
                Err(format!("at /body: expected a body without {t:?}, found it"))
            } else {
                Ok(())
            };
            run.judge(drift, result, &json!({"body": true}), &what)?;
        }
        if let Some(t) = &self.last_user_text {
            let t = run.text(t)?;
            let got = json!(r.last_user_text());
            let result = matching::check(&json!(t), Some(&got), "");
            run.judge(drift, result, &got, &format!("{what} last user text"))?;
        }
        Ok(())
    }
}
