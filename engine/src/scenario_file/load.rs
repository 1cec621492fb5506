//! Reading and validating one scenario file before anything runs: the TOML is parsed into
//! [`FileSpec`] (each part with its place), every step and check into its kind
//! (`super::steps`, `super::checks`), every scripted response through the sidecar's own
//! parser, and the variables and operators each kind uses are checked (a variable used
//! before a step binds it, an unknown operator, a path out of the workspace). The result is
//! the file's model ([`ScenarioFile`]) with what a run needs beside it ([`Compiled`]). Every
//! problem is a [`FileError`] with its line and column, all of them at once.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use codex_parity_sidecar::Scripted;
use serde_json::{Map, Value};
use toml::Spanned;

use super::checks::{CHECK_KINDS, Check};
use super::diagnostic::{FileError, Source, quoted_found};
use super::format::{FileSpec, Requires, ScenarioFile, to_json};
use super::matching::{bad_operators, literals, references};
use super::steps::{STEP_KINDS, Step, Uses};

/// A step or check with where it is written.
#[derive(Debug, Clone)]
pub struct Placed<T> {
    /// The step or check.
    pub item: T,
    /// `file:line:column` of its table.
    pub place: String,
}

/// A scenario file, read and checked: its model and what the run needs beside it.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The file's text and path.
    pub source: Source,
    /// The file's model.
    pub file: ScenarioFile,
    /// The time limit.
    pub timeout: Duration,
    /// Whether `codex app-server` starts before the steps: a step talks to it.
    pub app_server: bool,
    /// `thread/start` params, when a thread is started before the steps.
    pub thread: Option<Value>,
    /// The responses queued before codex starts, parsed.
    pub responses: Vec<Scripted>,
    /// The steps with their places.
    pub steps: Vec<Placed<Step>>,
    /// The checks with their places.
    pub checks: Vec<Placed<Check>>,
    /// Where the name is written (byte range), for duplicate-name errors.
    pub name_span: Range<usize>,
}

/// Dotted parts of a key the TOML reader refuses without saying where (its recursion
/// limit: 80 in `toml` 1.x, counted here with a margin below it).
const DEEP_KEY: usize = 64;

/// The first table header or key of `text` with more than [`DEEP_KEY`] dotted parts: its
/// offset and its number of parts. Lines inside multi-line strings are skipped.
fn deep_key(text: &str) -> Option<(usize, usize)> {
    let mut offset = 0;
    let mut in_string: Option<&str> = None;
    for line in text.split_inclusive('\n') {
        let here = offset;
        offset += line.len();
        if let Some(quotes) = in_string {
            if line.matches(quotes).count() % 2 == 1 {
                in_string = None;
            }
            continue;
        }
        let trimmed = line.trim_start();
        let start = here + (line.len() - trimmed.len());
        let key = match trimmed.strip_prefix('[') {
            Some(header) => until_outside_quotes(header.trim_start_matches('['), ']'),
            None => until_outside_quotes(trimmed, '='),
        };
        let parts = key.map_or(0, |k| dots_outside_quotes(k) + 1);
        if parts > DEEP_KEY {
            return Some((start, parts));
        }
        for quotes in ["\"\"\"", "'''"] {
            if line.matches(quotes).count() % 2 == 1 {
                in_string = Some(quotes);
            }
        }
    }
    None
}

/// `text` up to the first `end` outside quotes (`None`: there is none).
fn until_outside_quotes(text: &str, end: char) -> Option<&str> {
    let mut quote: Option<char> = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c == end => return Some(&text[..i]),
            (None, '#') => return None,
            _ => {}
        }
    }
    None
}

/// How many `.` of `key` are outside quotes.
fn dots_outside_quotes(key: &str) -> usize {
    let mut quote: Option<char> = None;
    let mut dots = 0;
    for c in key.chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '.') => dots += 1,
            _ => {}
        }
    }
    dots
}

/// The built-in variables every scenario has.
pub const BUILTIN_VARS: [&str; 2] = ["workspace", "home"];

/// Reads and checks the scenario file `path` holding `text`.
pub fn compile(path: &Path, text: &str) -> Result<Compiled, Vec<FileError>> {
    let source = Source::new(path, text);
    let spec: FileSpec = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().to_string();
        vec![match (e.span(), deep_key(text)) {
            (Some(span), _) => source.error_at(span.start, message),
            // The reader's limit on dotted keys comes without a place: find the key.
            (None, Some((offset, parts))) => source.error_at(
                offset,
                format!(
                    "expected a key of fewer dotted parts, found one of {parts} parts, more than \
                     the TOML reader takes ({message})"
                ),
            ),
            (None, None) => source.error_at(0, message),
        }]
    })?;
    let mut errors = Vec::new();
    let whole = 0..text.len();
    let name = checked(
        &source,
        &spec.name,
        &mut errors,
        "a snake_case name (a-z, 0-9, _)",
        |n| {
            !n.is_empty()
                && n.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        },
    );
    let id = checked(
        &source,
        &spec.id,
        &mut errors,
        "an id without spaces (e.g. X-A2)",
        |i| !i.is_empty() && !i.chars().any(char::is_whitespace),
    );
    check_requires(&source, &whole, &spec.requires, &mut errors);
    for path in spec.workspace.files.keys() {
        if let Err(m) = relative_path(path) {
            errors.push(source.error_in(&whole, Some(path), m));
        }
    }
    let (responses, scripted) = responses_of(&source, &spec.response, &mut errors);
    let steps = read_all(&source, &spec.step, &mut errors, read_step);
    // A step that does not parse counts as one that needs the app-server, so its error
    // is not followed by errors about a thread that is missing only because of it.
    let app_server =
        steps.len() < spec.step.len() || steps.iter().any(|(_, s)| s.needs_app_server());
    let thread = thread_of(&source, &whole, &spec, app_server, &mut errors);
    let checks = read_all(&source, &spec.check, &mut errors, read_check);
    check_variables(
        &source,
        &steps,
        &checks,
        thread.is_some(),
        app_server,
        &mut errors,
    );
    if !errors.is_empty() {
        return Err(errors);
    }
    let file = ScenarioFile {
        name,
        id,
        summary: spec.summary,
        timeout_secs: spec.timeout_secs,
        start_thread: spec.start_thread,
        requires: spec.requires,
        codex: spec.codex,
        workspace: spec.workspace,
        thread: spec.thread.map(table_json),
        responses,
        steps: steps.iter().map(|(_, s)| s.clone()).collect(),
        checks: checks.iter().map(|(_, c)| c.clone()).collect(),
    };
    Ok(Compiled {
        timeout: Duration::from_secs(file.timeout_secs.unwrap_or(60)),
        app_server,
        thread,
        responses: scripted,
        steps: placed(&source, steps),
        checks: placed(&source, checks),
        name_span: spec.name.span(),
        source,
        file,
    })
}

/// What every step and check uses, checked in order (a variable is bound by a step before
/// the steps and checks after it), and no check on the app-server's messages in a file
/// that starts none.
fn check_variables(
    source: &Source,
    steps: &[(Range<usize>, Step)],
    checks: &[(Range<usize>, Check)],
    thread: bool,
    app_server: bool,
    errors: &mut Vec<FileError>,
) {
    let mut bound: BTreeSet<String> = BUILTIN_VARS.iter().map(|s| s.to_string()).collect();
    if thread {
        bound.insert("thread".into());
    }
    for (span, step) in steps {
        let mut uses = Uses::default();
        step.uses(&mut uses);
        check_uses(source, span, &uses, &mut bound, errors);
    }
    for (span, check) in checks {
        let mut uses = Uses::default();
        check.uses(&mut uses);
        check_uses(source, span, &uses, &mut bound.clone(), errors);
        if !app_server && check.needs_app_server() {
            errors.push(source.error_at(
                span.start,
                format!(
                    "expected a step that talks to the app-server for a check on {}s, \
                     found none (a file of exec steps starts no app-server)",
                    check.kind()
                ),
            ));
        }
    }
}

/// Items with their places.
fn placed<T>(source: &Source, items: Vec<(Range<usize>, T)>) -> Vec<Placed<T>> {
    items
        .into_iter()
        .map(|(span, item)| Placed {
            place: source.place(span.start),
            item,
        })
        .collect()
}

/// A head value checked by `ok`, else an error saying what was `expected`.
fn checked(
    source: &Source,
    value: &Spanned<String>,
    errors: &mut Vec<FileError>,
    expected: &str,
    ok: impl Fn(&str) -> bool,
) -> String {
    let text = value.get_ref().clone();
    if !ok(&text) {
        errors.push(source.error_at(
            value.span().start,
            format!("expected {expected}, found {text:?}"),
        ));
    }
    text
}

/// A TOML table as the model's JSON object.
fn table_json(table: toml::Table) -> Map<String, Value> {
    match to_json(toml::Value::Table(table)) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// The responses as the model holds them (literal JSON) and as the sidecar takes them.
fn responses_of(
    source: &Source,
    responses: &[Spanned<toml::Value>],
    errors: &mut Vec<FileError>,
) -> (Vec<Value>, Vec<Scripted>) {
    let mut model = Vec::new();
    let mut scripted = Vec::new();
    for r in responses {
        match response(r.get_ref()) {
            Ok((json, s)) => {
                model.push(json);
                scripted.push(s);
            }
            Err(m) => errors.push(source.error_at(r.span().start, m)),
        }
    }
    (model, scripted)
}

/// One scripted response: the sidecar's JSON written as TOML (`"$null"` is null, `"$$…"` a
/// `$…`), or a `json` string holding it as text, taken as is (a recorded script pasted).
fn response(value: &toml::Value) -> Result<(Value, Scripted), String> {
    let json = match value.as_table() {
        Some(t) if t.len() == 1 && t.contains_key("json") => {
            let text = t
                .get("json")
                .and_then(toml::Value::as_str)
                .ok_or("expected json = '''<the sidecar's response JSON>''', found a non-string")?;
            serde_json::from_str(text).map_err(|e| {
                format!("expected the sidecar's response JSON in json = '''…''', found text that is not JSON: {e}")
            })?
        }
        _ => literals(&to_json(value.clone())?),
    };
    let scripted = Scripted::from_json(&json).map_err(|e| {
        format!("expected a scripted response as docs/sidecar-protocol.md §2 defines it: {e}")
    })?;
    Ok((json, scripted))
}

/// Reads every table with `read`, keeping those that read with their spans.
fn read_all<T>(
    source: &Source,
    tables: &[Spanned<toml::Table>],
    errors: &mut Vec<FileError>,
    read: fn(&Source, &Range<usize>, &toml::Table) -> Result<T, FileError>,
) -> Vec<(Range<usize>, T)> {
    let mut out = Vec::new();
    for t in tables {
        match read(source, &t.span(), t.get_ref()) {
            Ok(item) => out.push((t.span(), item)),
            Err(e) => errors.push(e),
        }
    }
    out
}

/// `[thread]` and `start_thread` checked against whether any step talks to the
/// app-server; the params of the thread started before the steps, if one is.
fn thread_of(
    source: &Source,
    whole: &Range<usize>,
    spec: &FileSpec,
    app_server: bool,
    errors: &mut Vec<FileError>,
) -> Option<Value> {
    if !app_server && (spec.thread.is_some() || spec.start_thread == Some(true)) {
        errors.push(source.error_in(
            whole,
            Some(if spec.thread.is_some() {
                "[thread]"
            } else {
                "start_thread"
            }),
            "expected no [thread] and no start_thread = true in a file whose steps never talk \
             to the app-server (none is started, so no thread), found one",
        ));
        return None;
    }
    if spec.start_thread == Some(false) {
        if spec.thread.is_some() {
            errors.push(source.error_in(
                whole,
                Some("[thread]"),
                "expected no [thread] with start_thread = false (no thread is started), found one",
            ));
        }
        return None;
    }
    if !app_server {
        return None;
    }
    let params = match spec.thread.clone().map(|t| to_json(toml::Value::Table(t))) {
        None => serde_json::json!({}),
        Some(Ok(t)) => t,
        Some(Err(m)) => {
            errors.push(source.error_in(
                whole,
                Some("[thread]"),
                format!("expected JSON-like values in [thread]: {m}"),
            ));
            return None;
        }
    };
    for name in references(&params) {
        if !BUILTIN_VARS.contains(&name.as_str()) {
            errors.push(source.error_in(
                whole,
                Some(&format!("${name}")),
                format!(
                    "expected $workspace or $home in [thread] (no step has run yet), found ${name}"
                ),
            ));
        }
    }
    Some(params)
}

/// One step: its `do` names its kind, the other keys its fields.
fn read_step(source: &Source, span: &Range<usize>, table: &toml::Table) -> Result<Step, FileError> {
    read_kind(source, span, table, Kind::STEP, Step::read)
}

/// One check: its `on` names its kind, the other keys its fields.
fn read_check(
    source: &Source,
    span: &Range<usize>,
    table: &toml::Table,
) -> Result<Check, FileError> {
    read_kind(source, span, table, Kind::CHECK, Check::read)
}

/// How a kind of table names its kind.
struct Kind {
    /// The key that names it (`do`, `on`).
    tag: &'static str,
    /// What the table is (`step`, `check`).
    what: &'static str,
    /// What the tag says, for the error when it is missing.
    purpose: &'static str,
    /// The kinds there are.
    kinds: &'static [&'static str],
}

impl Kind {
    const STEP: Kind = Kind {
        tag: "do",
        what: "step",
        purpose: "a step kind, do",
        kinds: STEP_KINDS,
    };
    const CHECK: Kind = Kind {
        tag: "on",
        what: "check",
        purpose: "what the check is on, on",
        kinds: CHECK_KINDS,
    };
}

/// A table whose tag names its kind, read by `read`.
fn read_kind<T>(
    source: &Source,
    span: &Range<usize>,
    table: &toml::Table,
    kind: Kind,
    read: fn(&str, toml::Table) -> Option<Result<T, String>>,
) -> Result<T, FileError> {
    let mut rest = table.clone();
    let Some(tag) = rest.remove(kind.tag) else {
        return Err(source.error_at(
            span.start,
            format!(
                "expected {} = one of {}, found none{}",
                kind.purpose,
                kind.kinds.join(", "),
                keys_found(table)
            ),
        ));
    };
    let toml::Value::String(name) = tag else {
        return Err(item_error(
            source,
            span,
            kind.what,
            &format!(
                "invalid type: {}, expected a string for `{}`",
                tag.type_str(),
                kind.tag
            ),
        ));
    };
    match read(&name, rest) {
        Some(Ok(item)) => Ok(item),
        Some(Err(message)) => Err(item_error(source, span, kind.what, &message)),
        None => {
            let expected: Vec<String> = kind.kinds.iter().map(|k| format!("`{k}`")).collect();
            let message = format!(
                "unknown variant `{name}`, expected one of {}",
                expected.join(", ")
            );
            Err(item_error(source, span, kind.what, &message))
        }
    }
}

/// The keys a table without its kind has, for the error (a misspelt `do` or `on` shows).
fn keys_found(table: &toml::Table) -> String {
    if table.is_empty() {
        String::new()
    } else {
        let keys: Vec<&str> = table.keys().map(String::as_str).collect();
        format!(" (its keys: {})", keys.join(", "))
    }
}

/// A serde error inside a step or check, placed on the text it names.
fn item_error(source: &Source, span: &Range<usize>, what: &str, message: &str) -> FileError {
    let message = message.trim();
    let needle = quoted_found(message);
    let message = if message.starts_with("unknown variant") {
        message.replacen("unknown variant", &format!("unknown {what} kind"), 1)
    } else {
        format!("in this {what}: {message}")
    };
    source.error_in(span, needle, message)
}

/// A workspace path: relative, without `..` (variables such as `${name}` are allowed).
fn relative_path(path: &str) -> Result<(), String> {
    let p = Path::new(path);
    if path.is_empty()
        || p.is_absolute()
        || p.components().any(|c| c == std::path::Component::ParentDir)
    {
        Err(format!(
            "expected a path inside the workspace (relative, no ..), found {path:?}"
        ))
    } else {
        Ok(())
    }
}

fn check_requires(
    source: &Source,
    whole: &Range<usize>,
    r: &Requires,
    errors: &mut Vec<FileError>,
) {
    for (list, example) in [
        (&r.fields, "ThreadStartParams.dynamicTools"),
        (&r.enum_values, "ThreadGoalStatus.blocked"),
    ] {
        for entry in list {
            if entry
                .split_once('.')
                .is_none_or(|(t, f)| t.is_empty() || f.is_empty())
            {
                errors.push(source.error_in(
                    whole,
                    Some(entry),
                    format!("expected Type.name (e.g. {example}), found {entry:?}"),
                ));
            }
        }
    }
}

/// What a step or check uses, checked: its own problems, its paths, the variables it
/// refers to (bound before it), its operators (known); then what it binds is bound.
fn check_uses(
    source: &Source,
    span: &Range<usize>,
    uses: &Uses<'_>,
    bound: &mut BTreeSet<String>,
    errors: &mut Vec<FileError>,
) {
    for (needle, message) in &uses.problems {
        errors.push(if needle.is_empty() {
            source.error_at(span.start, message.clone())
        } else {
            source.error_in(span, Some(needle), message.clone())
        });
    }
    for path in &uses.paths {
        if let Err(m) = relative_path(path) {
            errors.push(source.error_in(span, Some(path), m));
        }
    }
    check_references(source, span, uses, bound, errors);
    for e in &uses.expectations {
        for op in bad_operators(e) {
            let needle = op.split(' ').next().unwrap_or(&op).to_string();
            let message = if needle == op {
                format!(
                    "unknown assertion operator {op}; valid operators: {}, and the values $any, $absent, $null",
                    super::matching::OPERATORS.join(", ")
                )
            } else {
                format!(
                    "expected an operator alone in its table ({{ \"{needle}\" = … }}), found {op}"
                )
            };
            errors.push(source.error_in(span, Some(&needle), message));
        }
    }
    if let Some(captures) = uses.captures {
        for (name, pointer) in captures {
            if !(pointer.is_empty() || pointer.starts_with('/')) {
                errors.push(source.error_in(
                    span,
                    Some(pointer),
                    format!("expected a JSON pointer (\"/thread/id\") to capture {name}, found {pointer:?}"),
                ));
            }
            bound.insert(name.clone());
        }
    }
    bound.extend(uses.binds.iter().map(|b| b.to_string()));
}

/// Every variable `uses` refers to must be bound: an error per one that is not, placed on
/// its reference.
fn check_references(
    source: &Source,
    span: &Range<usize>,
    uses: &Uses<'_>,
    bound: &BTreeSet<String>,
    errors: &mut Vec<FileError>,
) {
    let mut refs: Vec<String> = uses
        .values
        .iter()
        .chain(&uses.expectations)
        .flat_map(|v| references(v))
        .collect();
    for t in &uses.texts {
        refs.extend(references(&Value::String(t.to_string())));
    }
    for name in refs.into_iter().filter(|n| !bound.contains(n)) {
        let mut known: Vec<String> = bound.iter().map(|b| format!("${b}")).collect();
        known.sort();
        let whole = format!("\"${name}\"");
        let inner = format!("${{{name}}}");
        let inside = source.text.get(source.section(span)).unwrap_or("");
        let needle = if inside.contains(&whole) {
            whole
        } else {
            inner
        };
        errors.push(source.error_in(
            span,
            Some(&needle),
            format!(
                "expected a variable bound by an earlier step ({}), found ${name}",
                known.join(", ")
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "name = \"x_y\"\nid = \"X-1\"\nsummary = \"s\"\n";

    fn errors(body: &str) -> Vec<String> {
        let text = format!("{HEAD}{body}");
        match compile(Path::new("f.toml"), &text) {
            Ok(_) => Vec::new(),
            Err(e) => e.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn a_malformed_file_names_line_column_expected_and_found() {
        let e = errors("timeout_secs = \"ten\"\n");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("f.toml:4:16: "), "{e:?}");
        assert!(
            e[0].contains("expected u64") || e[0].contains("invalid type"),
            "{e:?}"
        );
        let e = errors("[[step]\ndo = \"turn\"\n");
        assert!(e[0].starts_with("f.toml:4:"), "{e:?}");
        let e = errors("colour = 1\n");
        assert!(
            e[0].contains("unknown field `colour`, expected one of `name`"),
            "{e:?}"
        );
        let e = errors("[codex]\nlisten = \"tcp\"\n");
        assert!(
            e[0].starts_with(
                "f.toml:5:10: unknown variant `tcp`, expected one of `stdio`, `ws`, `unix`"
            ),
            "{e:?}"
        );
    }

    #[test]
    fn a_key_of_thousands_of_dotted_parts_is_reported_where_it_is() {
        let deep = vec!["a"; 5000].join(".");
        let e = errors(&format!("\n[{deep}]\n"));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with(
                "f.toml:5:1: expected a key of fewer dotted parts, found one of 5000 parts"
            ),
            "{}",
            &e[0][..200.min(e[0].len())]
        );
        let e = errors(&format!("note = '''\n[not.a.key]\n'''\n  {deep} = 1\n"));
        assert!(e[0].starts_with("f.toml:7:3: "), "{}", &e[0][..100]);
        assert_eq!(deep_key("[\"a.b.c\"]\nx = \"1.2.3\"\n"), None);
    }

    #[test]
    fn unknown_step_kinds_and_checks_list_the_valid_ones() {
        let e = errors("\n[[step]]\ndo = \"trun\"\ninput = \"hi\"\n");
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with("f.toml:6:7: unknown step kind `trun`"),
            "{e:?}"
        );
        for kind in STEP_KINDS {
            assert!(e[0].contains(&format!("`{kind}`")), "{kind} missing: {e:?}");
        }
        let e = errors("[[check]]\non = \"files\"\n");
        assert!(e[0].contains("unknown check kind `files`"), "{e:?}");
        for kind in CHECK_KINDS {
            assert!(e[0].contains(&format!("`{kind}`")), "{kind} missing: {e:?}");
        }
        let e = errors("[[step]]\ninput = \"hi\"\n");
        assert!(
            e[0].contains("expected a step kind, do = one of request, turn"),
            "{e:?}"
        );
        assert!(e[0].ends_with("found none (its keys: input)"), "{e:?}");
        let e = errors("[[check]]\nkind = \"notification\"\n");
        assert!(
            e[0].ends_with("found none (its keys: kind)"),
            "a misspelt `on` shows: {e:?}"
        );
        let e = errors("[[step]]\ndo = \"turn\"\ninput = \"hi\"\nwait_for = 1\n");
        assert!(
            e[0].starts_with("f.toml:7:1: in this step: unknown field `wait_for`"),
            "{e:?}"
        );
    }

    #[test]
    fn variables_must_be_bound_by_an_earlier_step() {
        let body = "start_thread = false\n[[step]]\ndo = \"request\"\nmethod = \"thread/start\"\n\
                    params = { cwd = \"$workspace\" }\ncapture = { t = \"/thread/id\" }\n\
                    [[step]]\ndo = \"turn\"\nthread = \"$t\"\ninput = \"${thread} and $turn\"\n";
        let e = errors(body);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].contains("expected a variable bound by an earlier step ($home, $t, $workspace), found $thread"),
            "{e:?}"
        );
        assert!(e[0].starts_with("f.toml:13:10:"), "{e:?}");
        let ok = errors(
            "[[step]]\ndo = \"turn\"\ninput = \"hi\"\n[[check]]\non = \"notification\"\nmethod = \"m\"\nmatch = { turnId = \"$turn\", threadId = \"$thread\" }\n",
        );
        assert!(ok.is_empty(), "{ok:?}");
    }

    #[test]
    fn operators_replies_and_responses_are_checked() {
        let e = errors(
            "[[check]]\non = \"notification\"\nmethod = \"m\"\nmatch = { a = { \"$regexp\" = \"x\" } }\n",
        );
        assert!(
            e[0].contains("unknown assertion operator $regexp; valid operators: $contains, $regex"),
            "{e:?}"
        );
        assert!(e[0].starts_with("f.toml:7:18:"), "{e:?}");
        let e = errors("[[step]]\ndo = \"reply\"\nmethod = \"item/tool/call\"\n");
        assert!(
            e[0].contains("expected exactly one of result, error or unanswered = true"),
            "{e:?}"
        );
        let e = errors("[[response]]\nstatus = 500\nevents = []\n");
        assert!(
            e[0].starts_with("f.toml:4:1: expected a scripted response"),
            "{e:?}"
        );
        let e = errors("[[response]]\njson = '''[{\"type\": ]'''\n");
        assert!(e[0].contains("not JSON"), "{e:?}");
        let e = errors("[requires]\nfields = [\"ThreadStartParams\"]\n");
        assert!(e[0].contains("expected Type.name"), "{e:?}");
        let e = errors("[[check]]\non = \"value\"\nvalue = \"done\"\nmatch = {}\n");
        assert!(
            e[0].contains("expected a variable (\"$name\") as the value to check, found \"done\""),
            "{e:?}"
        );
        let e = errors("[[check]]\non = \"value\"\nvalue = \"$done\"\nmatch = {}\n");
        assert!(
            e[0].contains("expected a variable bound by an earlier step"),
            "{e:?}"
        );
        let e = errors("[[check]]\non = \"file\"\npath = \"../etc/passwd\"\n");
        assert!(
            e[0].starts_with("f.toml:6:9: expected a path inside the workspace"),
            "{e:?}"
        );
    }

    #[test]
    fn a_good_file_compiles_with_its_places() {
        let text = format!(
            "{HEAD}[[response]]\njson = '''[{{\"type\": \"response.created\", \"response\": {{\"id\": \"r\"}}}}]'''\n\
             [[response]]\nstatus = 500\nbody = {{ error = {{ message = \"x\", data = \"$null\" }} }}\n\
             [[step]]\ndo = \"turn\"\ninput = \"hi\"\n"
        );
        let c = compile(Path::new("f.toml"), &text).unwrap();
        assert_eq!((c.file.name.as_str(), c.file.id.as_str()), ("x_y", "X-1"));
        assert_eq!(c.responses.len(), 2);
        assert_eq!(
            c.responses[1].to_json()["body"]["error"]["data"],
            Value::Null
        );
        assert_eq!(c.steps[0].place, "f.toml:9:1");
        assert_eq!(c.thread, Some(serde_json::json!({})));
    }

    #[test]
    fn a_file_of_exec_steps_starts_no_app_server_and_no_thread() {
        let exec = "[[step]]\ndo = \"exec\"\nprompt = \"hi $workspace\"\n\
                    args = [\"--skip-git-repo-check\", \"-o\", \"${workspace}/l.txt\"]\n\
                    stdin = \"x\"\ncwd = \"sub\"\ntimeout_ms = 5000\n\
                    expect = { exit = 0, types = { \"$contains\" = \"turn.completed\" } }\n\
                    capture = { session = \"/events/0/thread_id\" }\n\
                    [[step]]\ndo = \"exec\"\nargs = [\"resume\", \"$session\"]\nprompt = \"again\"\n";
        let c = compile(Path::new("f.toml"), &format!("{HEAD}{exec}")).unwrap();
        assert!(!c.app_server);
        assert_eq!(c.thread, None);
        assert_eq!(c.steps[1].item.kind(), "exec");
        let e = errors(&format!(
            "{exec}[[check]]\non = \"value\"\nvalue = \"$thread\"\nmatch = 1\n"
        ));
        assert!(
            e[0].contains("expected a variable bound by an earlier step ($home, $session, $workspace), found $thread"),
            "{e:?}"
        );
        let e = errors(&format!("[thread]\nephemeral = true\n{exec}"));
        assert!(
            e[0].starts_with("f.toml:4:1: expected no [thread] and no start_thread = true in a file whose steps never talk"),
            "{e:?}"
        );
        let e = errors(&format!(
            "{exec}[[check]]\non = \"notification\"\nmethod = \"turn/completed\"\n"
        ));
        assert!(
            e[0].contains(
                "expected a step that talks to the app-server for a check on notifications"
            ),
            "{e:?}"
        );
        let mixed = compile(
            Path::new("f.toml"),
            &format!("{HEAD}{exec}[[step]]\ndo = \"turn\"\ninput = \"$session\"\n"),
        )
        .unwrap();
        assert!(mixed.app_server && mixed.thread.is_some());
    }

    #[test]
    fn exec_steps_name_their_problems() {
        let e = errors("[[step]]\ndo = \"exec\"\nargs = 3\n");
        assert!(
            e[0].starts_with(
                "f.toml:6:8: in this step: invalid type: integer `3`, expected a sequence"
            ),
            "{e:?}"
        );
        let e = errors("[[step]]\ndo = \"exec\"\nprompt = \"p\"\njson = true\n");
        assert!(
            e[0].contains(
                "f.toml:7:1: in this step: unknown field `json`, expected one of `prompt`, `args`"
            ),
            "{e:?}"
        );
        let e = errors("[[step]]\ndo = \"exec\"\nprompt = \"p\"\ncapture = { s = \"events/0\" }\n");
        assert!(
            e[0].starts_with("f.toml:7:18: expected a JSON pointer (\"/thread/id\") to capture s, found \"events/0\""),
            "{e:?}"
        );
        let e = errors("[[step]]\ndo = \"exec\"\nprompt = \"p\"\ncwd = \"/tmp\"\n");
        assert!(
            e[0].starts_with("f.toml:7:8: expected a path inside the workspace"),
            "{e:?}"
        );
        let e = errors("[[step]]\ndo = \"exec\"\nprompt = \"p\"\nargs = [\"resume\", \"$s\"]\n");
        assert!(
            e[0].contains("found $s") && e[0].starts_with("f.toml:7:19:"),
            "{e:?}"
        );
        let e = errors(
            "[[step]]\ndo = \"exec\"\nprompt = \"p\"\nexpect = { exit = { \"$gt\" = 0 } }\n",
        );
        assert!(e[0].contains("unknown assertion operator $gt"), "{e:?}");
    }
}
