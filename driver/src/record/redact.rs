//! Secrets out of a recording: the values that must never be written (the API key the
//! upstream was called with) and the `--redact REGEX` patterns, whose matches become
//! `<redacted>` in every text the recorder writes. What was redacted is counted, so the
//! file can say so.

use anyhow::Context;
use regex::Regex;
use serde_json::Value;

/// What replaces a match of a `--redact` pattern.
pub const REDACTED: &str = "<redacted>";

/// The patterns and secret values of one recording, and what they matched.
#[derive(Debug, Default)]
pub struct Redactor {
    patterns: Vec<Regex>,
    secrets: Vec<(String, String)>,
    matched: usize,
}

impl Redactor {
    /// The `--redact` patterns (refused with the pattern named when one does not compile)
    /// and the secret values, each with what it is (`"the API key in OPENAI_API_KEY"`).
    pub fn new(patterns: &[String], secrets: Vec<(String, String)>) -> anyhow::Result<Redactor> {
        let patterns = patterns
            .iter()
            .map(|p| {
                Regex::new(p).with_context(|| format!("--redact {p:?} is not a regular expression"))
            })
            .collect::<anyhow::Result<_>>()?;
        // Short values would match by accident: a key is long, an empty variable no secret.
        let secrets = secrets.into_iter().filter(|(v, _)| v.len() >= 8).collect();
        Ok(Redactor {
            patterns,
            secrets,
            matched: 0,
        })
    }

    /// `text` with every pattern's matches replaced by [`REDACTED`].
    pub fn text(&mut self, text: &str) -> String {
        let mut out = text.to_string();
        for p in &self.patterns {
            let n = p.find_iter(&out).count();
            if n > 0 {
                self.matched += n;
                out = p.replace_all(&out, REDACTED).into_owned();
            }
        }
        out
    }

    /// `value` with [`Redactor::text`] applied to every string (keys included).
    pub fn value(&mut self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.text(s)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.value(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (self.text(k), self.value(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// How many pattern matches were replaced so far.
    pub fn matched(&self) -> usize {
        self.matched
    }

    /// The patterns, as given.
    pub fn patterns(&self) -> Vec<&str> {
        self.patterns.iter().map(Regex::as_str).collect()
    }

    /// What secret `text` holds, if any (`"the API key in OPENAI_API_KEY"`): such a text
    /// cannot be written, and a replay that needs it cannot be recorded.
    pub fn secret_in(&self, text: &str) -> Option<&str> {
        self.secrets
            .iter()
            .find(|(v, _)| text.contains(v.as_str()))
            .map(|(_, what)| what.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patterns_are_replaced_everywhere_and_counted() {
        let mut r = Redactor::new(&["acct_[0-9]+".into()], vec![]).unwrap();
        let v = r.value(&json!({"a": "user acct_12 and acct_3", "acct_9": ["acct_4"], "n": 1}));
        assert_eq!(
            v,
            json!({"a": "user <redacted> and <redacted>", "<redacted>": ["<redacted>"], "n": 1})
        );
        assert_eq!(r.matched(), 4);
    }

    #[test]
    fn a_bad_pattern_is_named() {
        let err = Redactor::new(&["(".into()], vec![]).unwrap_err();
        assert!(format!("{err:#}").contains("--redact \"(\""), "{err:#}");
    }

    #[test]
    fn secrets_are_found_and_short_values_ignored() {
        let r = Redactor::new(
            &[],
            vec![
                ("sk-test-123456".into(), "the key".into()),
                ("x".into(), "y".into()),
            ],
        )
        .unwrap();
        assert_eq!(r.secret_in("Bearer sk-test-123456"), Some("the key"));
        assert_eq!(r.secret_in("x marks"), None);
    }
}
