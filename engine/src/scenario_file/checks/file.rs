//! `on = "file"`: a file in the workspace: whether it exists, its content, a text in it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::scenario_file::execute::{Run, inside};
use crate::scenario_file::steps::Uses;

/// A file of the workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileCheck {
    /// The path, relative to the workspace.
    pub path: String,
    /// Its whole content (a trailing newline is ignored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// A text it contains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    /// Whether it exists (true when `content` or `contains` is given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    /// A mismatch is drift under this key instead of a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<String>,
}

impl FileCheck {
    pub(super) fn needs_app_server(&self) -> bool {
        false
    }

    pub(super) fn uses<'a>(&'a self, u: &mut Uses<'a>) {
        u.paths.push(&self.path);
        u.texts.push(&self.path);
        u.texts.extend(
            self.content
                .iter()
                .chain(&self.contains)
                .map(String::as_str),
        );
        if self.exists == Some(false) && (self.content.is_some() || self.contains.is_some()) {
            u.problems.push((
                "exists".into(),
                "expected content or contains only for a file that exists, found exists = \
                 false beside them"
                    .into(),
            ));
        }
    }

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        let path = inside(&run.world.workspace, &run.text(&self.path)?)?;
        let want_exists = self.exists.unwrap_or(true);
        let got = std::fs::read_to_string(&path).ok();
        let what = format!("file {}", path.display());
        let observed = got.clone().map_or(Value::Null, Value::String);
        let result = match (&got, want_exists) {
            (None, true) => Err("at /: expected the file to exist, found none".to_string()),
            (Some(_), false) => Err("at /: expected no file, found one".to_string()),
            (None, false) => Ok(()),
            (Some(text), true) => {
                let mut r = Ok(());
                if let Some(c) = &self.content {
                    let c = run.text(c)?;
                    if text.strip_suffix('\n').unwrap_or(text) != c.strip_suffix('\n').unwrap_or(&c)
                    {
                        r = Err(format!("at /: expected the content {c:?}, found {text:?}"));
                    }
                }
                if let Some(c) = &self.contains {
                    let c = run.text(c)?;
                    if !text.contains(&c) {
                        r = Err(format!(
                            "at /: expected a text containing {c:?}, found {text:?}"
                        ));
                    }
                }
                r
            }
        };
        run.judge(self.drift.as_ref(), result, &observed, &what)
    }
}
