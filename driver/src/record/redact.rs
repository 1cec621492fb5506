//! Secrets out of everything `record` writes or prints: the scenario file (header, summary,
//! comments, notes, every value), `--keep`'s directory, `rejected.toml`, its messages.
//! One [`Redactor`] per recording replaces, by [`REDACTED`]:
//!
//! - the *secret values*: the API key's variable and every variable of the environment
//!   whose name says it holds a secret ([`is_secret_name`]: `…_KEY`, `…TOKEN…`,
//!   `…CREDENTIAL…`, `…PASSWORD…`, …), as written and as JSON escapes them;
//! - *secret-shaped* text whatever its source ([`SHAPES`]: OpenAI, GitHub, Slack and AWS
//!   keys, bearer tokens, JSON Web Tokens);
//! - the matches of the user's `--redact REGEX` patterns.
//!
//! Replacements are counted, so the file can say how many. [`Redactor::leak`] is the guard
//! behind the replacement: it finds any of those still in a text (or the bytes of a file
//! that is not text), and the recorder refuses to write what it finds one in. Files that are
//! not text (codex's sqlite databases) are masked byte for byte ([`Redactor::bytes`]), so
//! their structure stays readable.

use std::ffi::OsString;

use anyhow::Context;
use regex::Regex;
use serde_json::Value;

/// What replaces a secret or a match in text.
pub const REDACTED: &str = "<redacted>";

/// The byte a secret is masked with in a file that is not text.
const MASK: u8 = b'*';

/// Secret values shorter than this are not secrets (an empty or one-word variable would
/// match by accident).
const MIN_SECRET_LEN: usize = 8;

/// Text that is a secret by its shape, wherever it appears.
pub const SHAPES: &[&str] = &[
    // OpenAI keys (sk-…, sk-proj-…).
    r"sk-[A-Za-z0-9_-]{16,}",
    // GitHub tokens.
    r"gh[pousr]_[A-Za-z0-9]{20,}",
    r"github_pat_[A-Za-z0-9_]{20,}",
    // Slack tokens.
    r"xox[abpors]-[A-Za-z0-9-]{10,}",
    // AWS access key ids.
    r"AKIA[0-9A-Z]{16}",
    // A bearer credential, whatever its format.
    r"(?i)bearer\s+[A-Za-z0-9._~+/=-]{8,}",
    // JSON Web Tokens (header and payload are base64url JSON: `eyJ`).
    r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
];

/// The words of a variable's name that say it holds a secret.
const SECRET_WORDS: &[&str] = &[
    "KEY",
    "APIKEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "CREDENTIAL",
    "CREDENTIALS",
    "COOKIE",
    "SESSION",
    "AUTH",
    "BEARER",
    "PRIVATE",
    "SIGNATURE",
    "DSN",
];

/// Whether a variable named `name` holds a secret: one of the words of its name (split at
/// `_`, `-` and `.`, upper-cased) is a word such as `KEY`, `TOKEN`, `SECRET`, `PASSWORD`,
/// `CREDENTIAL`, `COOKIE`, `SESSION` or `AUTH`, or it ends in `KEY` or `TOKEN`
/// (`OPENAI_APIKEY`, `GHTOKEN`).
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper
        .split(['_', '-', '.'])
        .any(|word| SECRET_WORDS.contains(&word))
        || upper.ends_with("KEY")
        || upper.ends_with("TOKEN")
}

/// One secret value and what it is (`"the value of $OPENAI_API_KEY"`).
#[derive(Debug, Clone)]
struct Secret {
    value: String,
    what: String,
}

/// The patterns and secret values of one recording, and how many replacements they made.
#[derive(Debug, Default)]
pub struct Redactor {
    secrets: Vec<Secret>,
    patterns: Vec<(Regex, regex::bytes::Regex)>,
    shapes: Vec<(Regex, regex::bytes::Regex)>,
    replaced: usize,
}

impl Redactor {
    /// The `--redact` patterns (refused with the pattern named when one does not compile),
    /// the secret shapes, and the secret values, each with what it is. Values shorter than
    /// 8 characters are left out; each value is also looked for as JSON escapes it.
    pub fn new(patterns: &[String], secrets: Vec<(String, String)>) -> anyhow::Result<Redactor> {
        let compile = |p: &str| -> anyhow::Result<(Regex, regex::bytes::Regex)> {
            Ok((Regex::new(p)?, regex::bytes::Regex::new(p)?))
        };
        let patterns = patterns
            .iter()
            .map(|p| {
                compile(p).with_context(|| format!("--redact {p:?} is not a regular expression"))
            })
            .collect::<anyhow::Result<_>>()?;
        let shapes = SHAPES
            .iter()
            .map(|p| compile(p).with_context(|| format!("the secret shape {p:?}")))
            .collect::<anyhow::Result<_>>()?;
        let mut list: Vec<Secret> = Vec::new();
        for (value, what) in secrets {
            if value.len() < MIN_SECRET_LEN {
                continue;
            }
            let escaped = serde_json::to_string(&value).unwrap_or_default();
            let escaped = escaped.trim_matches('"').to_string();
            if escaped != value {
                list.push(Secret {
                    value: escaped,
                    what: what.clone(),
                });
            }
            list.push(Secret { value, what });
        }
        // The longest first: a value that contains another is replaced whole.
        list.sort_by_key(|s| std::cmp::Reverse(s.value.len()));
        list.dedup_by(|a, b| a.value == b.value);
        Ok(Redactor {
            secrets: list,
            patterns,
            shapes,
            replaced: 0,
        })
    }

    /// A recording's redactor: the `--redact` patterns, the value of `$api_key_env` and of
    /// every variable of `env` whose name holds a secret ([`is_secret_name`]), and
    /// `extra` values (each with what it is).
    pub fn for_recording(
        patterns: &[String],
        api_key_env: &str,
        env: impl IntoIterator<Item = (OsString, OsString)>,
        extra: Vec<(String, String)>,
    ) -> anyhow::Result<Redactor> {
        let mut secrets = extra;
        for (name, value) in env {
            let (name, value) = (name.to_string_lossy(), value.to_string_lossy());
            if name == api_key_env || is_secret_name(&name) {
                secrets.push((value.into_owned(), format!("the value of ${name}")));
            }
        }
        Redactor::new(patterns, secrets)
    }

    /// `text` with every secret value, secret shape and pattern match replaced by
    /// [`REDACTED`].
    pub fn text(&mut self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            out = each_piece(&out, |piece| {
                let n = piece.matches(s.value.as_str()).count();
                self.replaced += n;
                if n > 0 {
                    piece.replace(s.value.as_str(), REDACTED)
                } else {
                    piece.to_string()
                }
            });
        }
        for (re, _) in self.shapes.iter().chain(&self.patterns) {
            out = each_piece(&out, |piece| {
                let n = re.find_iter(piece).count();
                self.replaced += n;
                if n > 0 {
                    re.replace_all(piece, REDACTED).into_owned()
                } else {
                    piece.to_string()
                }
            });
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

    /// A file's bytes redacted: text (UTF-8) as [`Redactor::text`] does it; anything else
    /// masked in place with `*`, byte for byte, so that a database stays a database.
    pub fn bytes(&mut self, bytes: &[u8]) -> Vec<u8> {
        if let Ok(text) = std::str::from_utf8(bytes) {
            return self.text(text).into_bytes();
        }
        let mut out = bytes.to_vec();
        for s in &self.secrets {
            let needle = s.value.as_bytes();
            let mut from = 0;
            while let Some(at) = find(&out[from..], needle) {
                let start = from + at;
                out[start..start + needle.len()].fill(MASK);
                self.replaced += 1;
                from = start + needle.len();
            }
        }
        for (_, re) in self.shapes.iter().chain(&self.patterns) {
            let spans: Vec<(usize, usize)> = re
                .find_iter(&out)
                .filter(|m| m.as_bytes().iter().any(|b| *b != MASK))
                .map(|m| (m.start(), m.end()))
                .collect();
            self.replaced += spans.len();
            for (start, end) in spans {
                out[start..end].fill(MASK);
            }
        }
        out
    }

    /// How many replacements were made so far.
    pub fn matched(&self) -> usize {
        self.replaced
    }

    /// How many `--redact` patterns there are (never their text: a pattern may be the very
    /// secret it is meant to hide).
    pub fn pattern_count(&self) -> usize {
        self.patterns.len()
    }

    /// What `bytes` still hold that must not be written, if anything: a secret value (what
    /// it is), a secret shape or a `--redact` pattern's match (named by its place only).
    /// [`REDACTED`] itself and masked bytes are not matches.
    pub fn leak(&self, bytes: &[u8]) -> Option<String> {
        if let Some(s) = self
            .secrets
            .iter()
            .find(|s| find(bytes, s.value.as_bytes()).is_some())
        {
            return Some(s.what.clone());
        }
        let cleared = clear_redacted(bytes);
        for (n, (_, re)) in self.patterns.iter().enumerate() {
            if let Some(m) = re.find_iter(&cleared).find(|m| !is_masked(m.as_bytes())) {
                return Some(format!(
                    "a match of the --redact pattern #{} at byte {}",
                    n + 1,
                    m.start()
                ));
            }
        }
        for (_, re) in &self.shapes {
            if let Some(m) = re.find_iter(&cleared).find(|m| !is_masked(m.as_bytes())) {
                return Some(format!("a secret-shaped value at byte {}", m.start()));
            }
        }
        None
    }
}

/// `text` with `f` applied to each piece between [`REDACTED`] markers: what is already
/// redacted stays as it is, and no pattern reaches into a marker.
fn each_piece(text: &str, mut f: impl FnMut(&str) -> String) -> String {
    text.split(REDACTED)
        .map(&mut f)
        .collect::<Vec<_>>()
        .join(REDACTED)
}

/// `bytes` with each [`REDACTED`] blanked to NULs, so that no pattern matches it.
fn clear_redacted(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let needle = REDACTED.as_bytes();
    let mut from = 0;
    while let Some(at) = find(&out[from..], needle) {
        let start = from + at;
        out[start..start + needle.len()].fill(0);
        from = start + needle.len();
    }
    out
}

fn is_masked(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| *b == MASK || *b == 0)
}

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > hay.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
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
    fn secrets_are_replaced_and_found_and_short_values_ignored() {
        let mut r = Redactor::new(
            &[],
            vec![
                ("key-12345678".into(), "the key".into()),
                ("x".into(), "y".into()),
            ],
        )
        .unwrap();
        assert_eq!(
            r.leak(b"Authorisation key-12345678"),
            Some("the key".into())
        );
        assert_eq!(r.text("a key-12345678 b, x"), "a <redacted> b, x");
        assert_eq!(r.leak(b"x marks"), None);
    }

    #[test]
    fn secret_names_are_told_by_their_words() {
        for name in [
            "OPENAI_API_KEY",
            "MY_LLM_CREDENTIAL",
            "GITHUB_TOKEN",
            "GHTOKEN",
            "db_password",
            "AWS_SECRET_ACCESS_KEY",
            "SESSION_COOKIE",
            "SENTRY_DSN",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "PWD", "LANG", "KEYBOARD_LAYOUT", "TERM"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn the_environment_gives_its_secret_values_only() {
        let env = [
            ("MY_LLM_CREDENTIAL", "cred-0123456789"),
            ("LANG", "en_US.UTF-8-long-enough"),
            ("CUSTOM", "sk-api-key-in-a-custom-var"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let mut r = Redactor::for_recording(&[], "CUSTOM", env, vec![]).unwrap();
        assert_eq!(
            r.text("cred-0123456789 en_US.UTF-8-long-enough sk-api-key-in-a-custom-var"),
            "<redacted> en_US.UTF-8-long-enough <redacted>"
        );
    }

    #[test]
    fn secret_shapes_are_replaced_without_being_named() {
        let mut r = Redactor::new(&[], vec![]).unwrap();
        let text = "k=sk-proj-AbCdEfGhIjKlMnOpQrStUv h=Bearer abc.def-123456 \
                    jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig gh=ghp_0123456789abcdefghij0123";
        let out = r.text(text);
        assert_eq!(
            out,
            "k=<redacted> h=<redacted> jwt=<redacted> gh=<redacted>"
        );
        assert_eq!(r.leak(out.as_bytes()), None);
        assert!(r.leak(text.as_bytes()).is_some());
    }

    #[test]
    fn a_json_escaped_secret_is_found_too() {
        let mut r = Redactor::new(&[], vec![("pa\"ss/wo\\rd!".into(), "it".into())]).unwrap();
        let json = serde_json::to_string(&json!({"v": "x pa\"ss/wo\\rd! y"})).unwrap();
        assert_eq!(r.leak(json.as_bytes()), Some("it".into()));
        assert_eq!(r.text(&json), "{\"v\":\"x <redacted> y\"}");
    }

    #[test]
    fn bytes_that_are_not_text_are_masked_in_place() {
        let mut r = Redactor::new(
            &["PLANTED[0-9]+".into()],
            vec![("secret-value-1".into(), "s".into())],
        )
        .unwrap();
        let mut db = vec![0xff, 0xfe, 0x00];
        db.extend_from_slice(b"xx secret-value-1 yy PLANTED42 zz");
        let out = r.bytes(&db);
        assert_eq!(out.len(), db.len(), "the length is kept");
        assert_eq!(&out[..3], &[0xff, 0xfe, 0x00]);
        assert_eq!(&out[3..], b"xx ************** yy ********* zz");
        assert_eq!(r.leak(&out), None);
        assert_eq!(r.matched(), 2);
    }

    #[test]
    fn redacted_itself_is_never_a_leak() {
        // A pattern that matches part of the replacement marker.
        let mut r = Redactor::new(&["red".into()], vec![]).unwrap();
        let out = r.text("a red b");
        assert_eq!(out, "a <redacted> b");
        assert_eq!(r.leak(out.as_bytes()), None);
        assert_eq!(r.text(&out), out, "redacting twice changes nothing");
        assert_eq!(r.pattern_count(), 1);
    }
}
