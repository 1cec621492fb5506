//! The integrator profile: one TOML file saying how a program launches and configures codex,
//! which `codex-parity config check` judges on real binaries (docs/config.md).
//!
//! ```toml
//! args = ["app-server", "--listen", "stdio://"]   # what follows the codex program
//! package = ["vendor/x86_64-unknown-linux-musl/codex/codex"]   # paths the launcher expects
//!
//! [home]                                           # files of CODEX_HOME, by name
//! "config.toml" = '''
//! approval_policy = "on-failure"
//! [features]
//! codex_hooks = true
//! '''
//! "work.config.toml" = { path = "codex/work.config.toml" }   # relative to the profile
//!
//! [thread_start]                                   # the params of its thread/start
//! approvalPolicy = "on-failure"
//! config = { model_reasoning_effort = "high" }
//! ```
//!
//! A profile that cannot be read is refused before any codex runs, every problem named as
//! `file:line:column: message` ([`ProfileError`]). Where each line of a home file is, in the
//! profile or in the file it was read from, is kept ([`HomeFile::place`]) so that codex's own
//! messages (`<CODEX_HOME>/config.toml:3:16: …`) lead back to the integrator's text.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde_json::Value;
use toml::de::{DeTable, DeValue};

/// The top-level keys a profile may have.
const KEYS: [&str; 4] = ["args", "package", "home", "thread_start"];

/// Files a profile never carries: codex's credentials.
const REFUSED_FILES: [&str; 2] = ["auth.json", ".credentials.json"];

/// A problem in a profile, at `file:line:column`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileError {
    /// The file (the profile, or a file it names).
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong and what was expected.
    pub message: String,
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.path.display(),
            self.line,
            self.column,
            self.message
        )
    }
}

/// Every problem found in one profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileErrors(pub Vec<ProfileError>);

impl fmt::Display for ProfileErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        write!(
            f,
            "{} problem(s) in the profile (nothing was run):\n{}",
            self.0.len(),
            lines.join("\n")
        )
    }
}

impl std::error::Error for ProfileErrors {}

/// A value of the profile with the line it is on.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed<T> {
    /// The value.
    pub value: T,
    /// Its line in the profile.
    pub line: usize,
}

/// One file of the `CODEX_HOME` the profile describes.
#[derive(Debug, Clone, PartialEq)]
pub struct HomeFile {
    /// Its name in the home (`config.toml`, `work.config.toml`, `rules/default.rules`).
    pub name: String,
    /// Its text.
    pub text: String,
    /// The file its text is in (the profile, or the file `path` names).
    pub source: PathBuf,
    /// The line of `source` on which the text's first line is.
    pub first_line: usize,
    /// The line of the profile that names it.
    pub line: usize,
}

impl HomeFile {
    /// Whether codex reads it as configuration (`config.toml`, `NAME.config.toml`).
    pub fn is_config(&self) -> bool {
        self.name.ends_with(".toml") && !self.name.contains('/')
    }

    /// Where line `line` of the file is in the integrator's text: `source:LINE`.
    pub fn place(&self, line: usize) -> String {
        format!(
            "{}:{}",
            self.source.display(),
            self.first_line + line.saturating_sub(1)
        )
    }
}

/// A profile, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The profile file.
    pub path: PathBuf,
    /// The arguments after the codex program, each with its line.
    pub args: Vec<Placed<String>>,
    /// Paths the integrator's launcher expects inside the npm package.
    pub package: Vec<Placed<String>>,
    /// The files of `CODEX_HOME`.
    pub home: Vec<HomeFile>,
    /// The `thread/start` params, each with its line.
    pub thread_start: Vec<(String, Placed<Value>)>,
}

impl Profile {
    /// Reads and checks the profile at `path`; home files named by `path = …` are read
    /// relative to it.
    pub fn read(path: &Path) -> Result<Profile, ProfileErrors> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ProfileErrors(vec![ProfileError {
                path: path.to_path_buf(),
                line: 1,
                column: 1,
                message: format!("cannot read the profile: {e}"),
            }])
        })?;
        Profile::parse(path, &text)
    }

    /// Checks the text of a profile named `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Profile, ProfileErrors> {
        let mut p = Parser {
            path,
            text,
            errors: Vec::new(),
        };
        let profile = p.profile();
        if p.errors.is_empty() {
            Ok(profile)
        } else {
            Err(ProfileErrors(p.errors))
        }
    }

    /// The home file named `name`.
    pub fn home_file(&self, name: &str) -> Option<&HomeFile> {
        self.home.iter().find(|f| f.name == name)
    }
}

/// The profile being read, and what is wrong with it so far.
struct Parser<'a> {
    path: &'a Path,
    text: &'a str,
    errors: Vec<ProfileError>,
}

impl Parser<'_> {
    fn position(&self, offset: usize) -> (usize, usize) {
        position(self.text, offset)
    }

    fn error(&mut self, span: &Range<usize>, message: impl Into<String>) {
        let (line, column) = self.position(span.start);
        self.errors.push(ProfileError {
            path: self.path.to_path_buf(),
            line,
            column,
            message: message.into(),
        });
    }

    fn line(&self, span: &Range<usize>) -> usize {
        self.position(span.start).0
    }

    fn profile(&mut self) -> Profile {
        let mut profile = Profile {
            path: self.path.to_path_buf(),
            args: Vec::new(),
            package: Vec::new(),
            home: Vec::new(),
            thread_start: Vec::new(),
        };
        let table = match DeTable::parse(self.text) {
            Ok(t) => t,
            Err(e) => {
                let span = e.span().unwrap_or(0..0);
                self.error(&span, format!("not TOML: {}", e.message()));
                return profile;
            }
        };
        for (key, value) in table.get_ref() {
            let (name, span) = (key.get_ref().as_ref(), key.span());
            match name {
                "args" => profile.args = self.strings(value, "args", true),
                "package" => profile.package = self.strings(value, "package", false),
                "home" => profile.home = self.home(value),
                "thread_start" => profile.thread_start = self.thread_start(value),
                other => {
                    let hint = KEYS
                        .iter()
                        .find(|k| close(k, other))
                        .map(|k| format!(" (did you mean {k}?)"))
                        .unwrap_or_default();
                    self.error(
                        &span,
                        format!(
                            "unknown key {other:?}{hint}: a profile has args, package, [home] and \
                             [thread_start]"
                        ),
                    );
                }
            }
        }
        if profile.args.is_empty() && self.errors.is_empty() {
            self.error(
                &(0..0),
                "no args: say what follows the codex program on your command line, e.g. \
                 args = [\"app-server\"]",
            );
        }
        profile
    }

    /// An array of strings, each with its line.
    fn strings(
        &mut self,
        value: &toml::Spanned<DeValue<'_>>,
        what: &str,
        args: bool,
    ) -> Vec<Placed<String>> {
        let Some(array) = value.get_ref().as_array() else {
            self.error(
                &value.span(),
                format!(
                    "{what} is an array of strings, found {}",
                    value.get_ref().type_str()
                ),
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in array.iter().enumerate() {
            match item.get_ref().as_str() {
                Some(s) if args && i == 0 && (s == "codex" || s.ends_with("/codex")) => self.error(
                    &item.span(),
                    format!(
                        "args start after the codex program: drop {s:?} (the release under \
                         check is the program)"
                    ),
                ),
                Some(s) if !args && (s.is_empty() || s.split('/').any(|p| p == "..")) => self
                    .error(
                        &item.span(),
                        format!("{s:?} is not a path inside the package"),
                    ),
                Some(s) => out.push(Placed {
                    value: s.to_string(),
                    line: self.line(&item.span()),
                }),
                None => self.error(
                    &item.span(),
                    format!(
                        "{what}[{i}] is a string, found {}",
                        item.get_ref().type_str()
                    ),
                ),
            }
        }
        out
    }

    /// `[home]`: name -> text or `{ path = "…" }`.
    fn home(&mut self, value: &toml::Spanned<DeValue<'_>>) -> Vec<HomeFile> {
        let Some(table) = value.get_ref().as_table() else {
            self.error(
                &value.span(),
                "home is a table of file name -> text or { path = \"…\" }",
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        for (key, entry) in table {
            let (name, key_span) = (key.get_ref().to_string(), key.span());
            if REFUSED_FILES.contains(&name.as_str()) {
                self.error(
                    &key_span,
                    format!("{name} holds credentials: a profile never carries them (the check needs none)"),
                );
                continue;
            }
            if name.is_empty()
                || name.starts_with('/')
                || name.split('/').any(|p| p == ".." || p.is_empty())
            {
                self.error(
                    &key_span,
                    format!("{name:?} is not a file name inside CODEX_HOME"),
                );
                continue;
            }
            let line = self.line(&key_span);
            match entry.get_ref() {
                DeValue::String(s) => {
                    let (first_line, _) = self.position(content_start(self.text, &entry.span()));
                    out.push(HomeFile {
                        name,
                        text: s.to_string(),
                        source: self.path.to_path_buf(),
                        first_line,
                        line,
                    });
                }
                DeValue::Table(t) => {
                    let path = t.iter().find(|(k, _)| k.get_ref() == "path");
                    let other = t.iter().find(|(k, _)| k.get_ref() != "path");
                    if let Some((k, _)) = other {
                        self.error(
                            &k.span(),
                            format!("unknown key {:?} in home.{name:?}: only path", k.get_ref()),
                        );
                        continue;
                    }
                    let Some((_, file)) = path else {
                        self.error(&entry.span(), format!("home.{name:?} has no path"));
                        continue;
                    };
                    let Some(rel) = file.get_ref().as_str() else {
                        self.error(&file.span(), "path is a string");
                        continue;
                    };
                    let base = self.path.parent().unwrap_or(Path::new("."));
                    let source = base.join(rel);
                    match std::fs::read_to_string(&source) {
                        Ok(text) => out.push(HomeFile {
                            name,
                            text,
                            source,
                            first_line: 1,
                            line,
                        }),
                        Err(e) => self.error(
                            &file.span(),
                            format!("cannot read {} for home.{name:?}: {e}", source.display()),
                        ),
                    }
                }
                other => self.error(
                    &entry.span(),
                    format!(
                        "home.{name:?} is the file's text or {{ path = \"…\" }}, found {}",
                        other.type_str()
                    ),
                ),
            }
        }
        out
    }

    /// `[thread_start]`: each param as JSON.
    fn thread_start(&mut self, value: &toml::Spanned<DeValue<'_>>) -> Vec<(String, Placed<Value>)> {
        let Some(table) = value.get_ref().as_table() else {
            self.error(
                &value.span(),
                "thread_start is a table of thread/start params",
            );
            return Vec::new();
        };
        table
            .iter()
            .map(|(k, v)| {
                (
                    k.get_ref().to_string(),
                    Placed {
                        value: to_json(v.get_ref()),
                        line: self.line(&k.span()),
                    },
                )
            })
            .collect()
    }
}

/// Whether two keys differ by one edit or a swapped pair (a typo).
fn close(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > 1 {
        return false;
    }
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let (ra, rb) = (&a[common..], &b[common..]);
    let tail = |x: &[char], y: &[char]| {
        x.iter()
            .rev()
            .zip(y.iter().rev())
            .take_while(|(p, q)| p == q)
            .count()
    };
    let t = tail(ra, rb);
    ra.len().max(rb.len()) - t <= 1
        || (ra.len() == 2 && rb.len() == 2 && ra[0] == rb[1] && ra[1] == rb[0])
}

/// 1-based line and column of byte `offset` of `text`.
pub fn position(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before.get(start..).unwrap_or("").chars().count() + 1)
}

/// Where a string literal's content starts: after its quotes, and after the newline that
/// directly follows the opening `'''`/`"""` of a multi-line string (TOML drops it).
fn content_start(text: &str, span: &Range<usize>) -> usize {
    let raw = text.get(span.clone()).unwrap_or("");
    for quotes in ["'''", "\"\"\""] {
        if let Some(rest) = raw.strip_prefix(quotes) {
            let skip = if rest.starts_with("\r\n") {
                2
            } else {
                usize::from(rest.starts_with('\n'))
            };
            return span.start + quotes.len() + skip;
        }
    }
    span.start + 1
}

/// A TOML value as JSON (a datetime as its text).
pub fn to_json(value: &DeValue<'_>) -> Value {
    match value {
        DeValue::String(s) => Value::String(s.to_string()),
        DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
            .map_or_else(|_| Value::String(i.as_str().to_string()), Value::from),
        DeValue::Float(f) => f
            .as_str()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| Value::String(f.as_str().to_string()), Value::Number),
        DeValue::Boolean(b) => Value::Bool(*b),
        DeValue::Datetime(d) => Value::String(d.to_string()),
        DeValue::Array(a) => Value::Array(a.iter().map(|v| to_json(v.get_ref())).collect()),
        DeValue::Table(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.get_ref().to_string(), to_json(v.get_ref())))
                .collect(),
        ),
    }
}

/// The leaves of a TOML file: dotted key, the value as JSON, the value's text as written,
/// and the byte range from the key to the end of the value (to blank it out). A key that
/// holds an array of tables is one leaf. `Err` with the parser's message and the line it
/// points at when the file is not TOML.
pub fn leaves(text: &str) -> Result<Vec<Leaf>, (String, usize)> {
    let table = DeTable::parse(text).map_err(|e| {
        let line = e.span().map_or(1, |s| position(text, s.start).0);
        (e.message().to_string(), line)
    })?;
    let mut out = Vec::new();
    walk(text, table.get_ref(), "", &mut out);
    out.sort_by_key(|l| l.span.start);
    Ok(out)
}

/// One leaf of a TOML file (see [`leaves`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Leaf {
    /// Its dotted key (`features.codex_hooks`; a quoted part keeps its quotes' content).
    pub key: String,
    /// Its value.
    pub value: Value,
    /// Its value as written.
    pub raw: String,
    /// 1-based line of its key.
    pub line: usize,
    /// The last line of its value.
    pub end_line: usize,
    /// From its key to the end of its value.
    pub span: Range<usize>,
}

fn walk(text: &str, table: &DeTable<'_>, prefix: &str, out: &mut Vec<Leaf>) {
    for (k, v) in table {
        let key = if prefix.is_empty() {
            k.get_ref().to_string()
        } else {
            format!("{prefix}.{}", k.get_ref())
        };
        let is_array_of_tables = v
            .get_ref()
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(|i| i.get_ref().is_table()))
            && text.get(k.span().start.saturating_sub(2)..k.span().start) == Some("[[");
        match v.get_ref() {
            DeValue::Table(t) if !is_inline(text, &v.span()) => walk(text, t, &key, out),
            _ => {
                let (start, end) = (k.span().start, v.span().end.max(k.span().end));
                let span = if is_array_of_tables {
                    start..section_end(text, end)
                } else {
                    start..end
                };
                out.push(Leaf {
                    key,
                    value: to_json(v.get_ref()),
                    raw: text.get(v.span()).unwrap_or("").to_string(),
                    line: position(text, start).0,
                    end_line: position(text, span.end.saturating_sub(1).max(start)).0,
                    span,
                });
            }
        }
    }
}

/// Whether the table at `span` is written inline (`{ … }`).
fn is_inline(text: &str, span: &Range<usize>) -> bool {
    text.get(span.clone())
        .is_some_and(|s| s.trim_start().starts_with('{'))
}

/// The end of the table section that `from` is in: the next line starting with `[`.
fn section_end(text: &str, from: usize) -> usize {
    text.get(from..)
        .and_then(|rest| rest.find("\n["))
        .map_or(text.len(), |i| from + i + 1)
}

/// `text` with the bytes of `span` replaced by spaces (newlines kept): the leaf is gone and
/// every other line stays where it was, so codex's `file:line` still leads to the same text.
pub fn blank(text: &str, span: &Range<usize>) -> String {
    text.char_indices()
        .map(|(i, c)| {
            if span.contains(&i) && c != '\n' && c != '\r' {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// A JSON value's home files by name (for messages that list them).
pub fn names(files: &[HomeFile]) -> BTreeMap<&str, &HomeFile> {
    files.iter().map(|f| (f.name.as_str(), f)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PROFILE: &str = r#"# my integration
args = ["app-server", "--listen", "stdio://"]
package = ["vendor/x86_64-unknown-linux-musl/codex/codex"]

[home]
"config.toml" = '''
approval_policy = "on-failure"
[features]
codex_hooks = true
'''

[thread_start]
approvalPolicy = "on-failure"
config = { model_reasoning_effort = "high" }
"#;

    #[test]
    fn a_profile_with_every_part() {
        let p = Profile::parse(Path::new("p.toml"), PROFILE).unwrap();
        assert_eq!(
            p.args
                .iter()
                .map(|a| (a.value.as_str(), a.line))
                .collect::<Vec<_>>(),
            [("app-server", 2), ("--listen", 2), ("stdio://", 2)]
        );
        assert_eq!(p.package[0].line, 3);
        let config = p.home_file("config.toml").unwrap();
        assert_eq!(config.first_line, 7);
        assert_eq!(config.place(3), "p.toml:9");
        assert!(config.text.starts_with("approval_policy"));
        assert_eq!(p.thread_start[0].0, "approvalPolicy");
        assert_eq!(p.thread_start[0].1.line, 13);
        assert_eq!(
            p.thread_start[1].1.value,
            json!({"model_reasoning_effort": "high"})
        );
    }

    #[test]
    fn bad_profiles_are_refused_at_file_line_column() {
        let errors = |text: &str| -> Vec<String> {
            Profile::parse(Path::new("bad.toml"), text)
                .unwrap_err()
                .0
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert_eq!(
            errors("args = [\"app-server\"]\narsg = 1\n"),
            [
                "bad.toml:2:1: unknown key \"arsg\" (did you mean args?): a profile has args, \
              package, [home] and [thread_start]"
            ]
        );
        assert_eq!(
            errors("args = [\"app-server\", 3]\n"),
            ["bad.toml:1:23: args[1] is a string, found integer"]
        );
        assert_eq!(
            errors("args = [\"codex\", \"exec\"]\n")[0],
            "bad.toml:1:9: args start after the codex program: drop \"codex\" (the release \
             under check is the program)"
        );
        let syntax = errors("args = [\n");
        assert!(
            syntax[0].starts_with("bad.toml:1:") && syntax[0].contains("not TOML"),
            "{syntax:?}"
        );
        assert!(
            errors("args = [\"exec\"]\n[home]\n\"auth.json\" = \"{}\"\n")[0]
                .starts_with("bad.toml:3:1: auth.json holds credentials")
        );
        let missing =
            errors("args = [\"exec\"]\n[home]\n\"config.toml\" = { path = \"nope.toml\" }\n");
        assert!(
            missing[0].starts_with("bad.toml:3:26: cannot read nope.toml"),
            "{missing:?}"
        );
        assert!(errors("")[0].starts_with("bad.toml:1:1: no args"));
    }

    #[test]
    fn leaves_of_a_config_with_lines_and_blanking_keeps_lines() {
        let text = "model = \"o3\"\n[features]\ncodex_hooks = true\n[mcp_servers.x]\n\
                    command = \"x\"\nenv = { A = \"1\" }\n";
        let leaves = leaves(text).unwrap();
        let keys: Vec<(&str, usize)> = leaves.iter().map(|l| (l.key.as_str(), l.line)).collect();
        assert_eq!(
            keys,
            [
                ("model", 1),
                ("features.codex_hooks", 3),
                ("mcp_servers.x.command", 5),
                ("mcp_servers.x.env", 6)
            ]
        );
        assert_eq!(leaves[1].value, json!(true));
        assert_eq!(leaves[0].raw, "\"o3\"");
        let blanked = blank(text, &leaves[1].span);
        assert_eq!(blanked.lines().nth(2).unwrap().trim(), "");
        assert_eq!(blanked.lines().count(), text.lines().count());
        assert_eq!(super::leaves("x = 1\na = [\n").unwrap_err().1, 2);
    }
}
