//! Reading and validating one scenario file before anything runs: the TOML is parsed into
//! [`FileSpec`], every step and check into its kind, every scripted response through the
//! sidecar's own parser, and the variables and operators are checked (a variable used
//! before a step binds it, an unknown operator). Every problem is a [`FileError`] with its
//! line and column.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use codex_parity_sidecar::Scripted;
use serde_json::Value;

use super::diagnostic::{FileError, Source, quoted_found};
use super::format::{Check, CodexSection, FileSpec, Requires, Step, WorkspaceSection};
use super::matching::{bad_operators, literals, references};

/// A step or check with where it is written.
#[derive(Debug, Clone)]
pub struct Placed<T> {
    /// The step or check.
    pub item: T,
    /// `file:line:column` of its table.
    pub place: String,
}

/// A scenario file, read and checked: everything the run needs.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The file's text and path.
    pub source: Source,
    /// The name.
    pub name: String,
    /// The id.
    pub id: String,
    /// The summary.
    pub summary: String,
    /// The time limit.
    pub timeout: Duration,
    /// What the binary must have.
    pub requires: Requires,
    /// The world's codex configuration.
    pub codex: CodexSection,
    /// The workspace's files.
    pub workspace: WorkspaceSection,
    /// Whether `codex app-server` starts before the steps: a step talks to it.
    pub app_server: bool,
    /// `thread/start` params, when a thread is started before the steps.
    pub thread: Option<Value>,
    /// Responses queued before codex starts.
    pub responses: Vec<Scripted>,
    /// The steps.
    pub steps: Vec<Placed<Step>>,
    /// The checks.
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
    let name_span = spec.name.span();
    let name = spec.name.into_inner();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        errors.push(source.error_at(
            name_span.start,
            format!("expected a snake_case name (a-z, 0-9, _), found {name:?}"),
        ));
    }
    let id_span = spec.id.span();
    let id = spec.id.into_inner();
    if id.is_empty() || id.chars().any(char::is_whitespace) {
        errors.push(source.error_at(
            id_span.start,
            format!("expected an id without spaces (e.g. X-A2), found {id:?}"),
        ));
    }
    check_requires(&source, text, &spec.requires, &mut errors);
    for path in spec.workspace.files.keys() {
        if let Err(m) = relative_path(path) {
            errors.push(source.error_in(&(0..text.len()), Some(path), m));
        }
    }
    let mut responses = Vec::new();
    for r in &spec.response {
        match response(&r.get_ref().clone()) {
            Ok(s) => responses.push(s),
            Err(m) => errors.push(source.error_at(r.span().start, m)),
        }
    }
    // A step that does not parse counts as one that needs the app-server, so its error
    // is not followed by errors about a thread that is missing only because of it.
    let mut parsed = Vec::new();
    let mut app_server = false;
    for s in &spec.step {
        let span = s.span();
        match parse_step(&source, &span, s.get_ref()) {
            Ok(step) => {
                app_server |= step.needs_app_server();
                parsed.push((span, step));
            }
            Err(e) => {
                app_server = true;
                errors.push(e);
            }
        }
    }
    let start_thread = app_server && spec.start_thread != Some(false);
    if !app_server && (spec.thread.is_some() || spec.start_thread == Some(true)) {
        errors.push(source.error_in(
            &(0..text.len()),
            Some(if spec.thread.is_some() {
                "[thread]"
            } else {
                "start_thread"
            }),
            "expected no [thread] and no start_thread = true in a file whose steps never talk \
             to the app-server (none is started, so no thread), found one",
        ));
    } else if spec.start_thread == Some(false) && spec.thread.is_some() {
        errors.push(source.error_in(
            &(0..text.len()),
            Some("[thread]"),
            "expected no [thread] with start_thread = false (no thread is started), found one",
        ));
    }
    let thread = if start_thread {
        let params = spec.thread.map(toml::Value::Table).map(|t| {
            serde_json::to_value(t)
                .map_err(|e| format!("expected JSON-like values in [thread]: {e}"))
        });
        match params.transpose() {
            Ok(t) => {
                let t = t.unwrap_or_else(|| serde_json::json!({}));
                for name in references(&t) {
                    if !BUILTIN_VARS.contains(&name.as_str()) {
                        errors.push(source.error_in(
                            &(0..text.len()),
                            Some(&format!("${name}")),
                            format!("expected $workspace or $home in [thread] (no step has run yet), found ${name}"),
                        ));
                    }
                }
                Some(t)
            }
            Err(m) => {
                errors.push(source.error_in(&(0..text.len()), Some("[thread]"), m));
                None
            }
        }
    } else {
        None
    };
    let mut bound: BTreeSet<String> = BUILTIN_VARS.iter().map(|s| s.to_string()).collect();
    if start_thread {
        bound.insert("thread".into());
    }
    let mut steps = Vec::new();
    for (span, step) in parsed {
        check_step(&source, &span, &step, &mut bound, &mut errors);
        steps.push(Placed {
            item: step,
            place: source.place(span.start),
        });
    }
    let mut checks = Vec::new();
    for c in &spec.check {
        let span = c.span();
        match parse_check(&source, &span, c.get_ref()) {
            Ok(check) => {
                check_check(&source, &span, &check, &bound, &mut errors);
                if !app_server
                    && matches!(
                        check,
                        Check::Notification { .. } | Check::ServerRequest { .. }
                    )
                {
                    errors.push(source.error_at(
                        span.start,
                        format!(
                            "expected a step that talks to the app-server for a check on {}s, \
                             found none (a file of exec steps starts no app-server)",
                            check.kind()
                        ),
                    ));
                }
                checks.push(Placed {
                    item: check,
                    place: source.place(span.start),
                });
            }
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Compiled {
        source,
        name,
        id,
        summary: spec.summary,
        timeout: Duration::from_secs(spec.timeout_secs.unwrap_or(60)),
        requires: spec.requires,
        codex: spec.codex,
        workspace: spec.workspace,
        app_server,
        thread,
        responses,
        steps,
        checks,
        name_span,
    })
}

/// A TOML value as JSON, `"$null"` read as null (TOML has no null).
pub fn to_json(value: toml::Value) -> Result<Value, String> {
    let json = serde_json::to_value(value).map_err(|e| format!("not JSON: {e}"))?;
    Ok(literals(&json))
}

/// One scripted response: the sidecar's JSON written as TOML, or `json = '''…'''` holding
/// it as text (a recorded script pasted as is).
fn response(value: &toml::Value) -> Result<Scripted, String> {
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
        _ => to_json(value.clone())?,
    };
    Scripted::from_json(&json).map_err(|e| {
        format!("expected a scripted response as docs/sidecar-protocol.md §2 defines it: {e}")
    })
}

fn parse_step(
    source: &Source,
    span: &Range<usize>,
    table: &toml::Table,
) -> Result<Step, FileError> {
    if !table.contains_key("do") {
        return Err(source.error_at(
            span.start,
            format!(
                "expected a step kind, do = one of {}, found none{}",
                STEP_KINDS.join(", "),
                keys_found(table)
            ),
        ));
    }
    toml::Value::Table(table.clone())
        .try_into::<Step>()
        .map_err(|e| item_error(source, span, "step", e.message()))
}

fn parse_check(
    source: &Source,
    span: &Range<usize>,
    table: &toml::Table,
) -> Result<Check, FileError> {
    if !table.contains_key("on") {
        return Err(source.error_at(
            span.start,
            format!(
                "expected what the check is on, on = one of {}, found none{}",
                CHECK_KINDS.join(", "),
                keys_found(table)
            ),
        ));
    }
    toml::Value::Table(table.clone())
        .try_into::<Check>()
        .map_err(|e| item_error(source, span, "check", e.message()))
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

/// The kinds of step, as `do = "…"` names them.
pub const STEP_KINDS: [&str; 14] = [
    "request",
    "turn",
    "wait_turn",
    "wait",
    "reply",
    "steer",
    "interrupt",
    "wait_requests",
    "restart",
    "script",
    "release",
    "write_file",
    "sleep",
    "exec",
];

/// The kinds of check, as `on = "…"` names them.
pub const CHECK_KINDS: [&str; 6] = [
    "requests",
    "request",
    "notification",
    "server_request",
    "value",
    "file",
];

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

fn check_requires(source: &Source, text: &str, r: &Requires, errors: &mut Vec<FileError>) {
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
                    &(0..text.len()),
                    Some(entry),
                    format!("expected Type.name (e.g. {example}), found {entry:?}"),
                ));
            }
        }
    }
}

/// Variables a step refers to must be bound before it; its operators must be known; then
/// its captures are bound.
fn check_step(
    source: &Source,
    span: &Range<usize>,
    step: &Step,
    bound: &mut BTreeSet<String>,
    errors: &mut Vec<FileError>,
) {
    let mut used: Vec<&Value> = Vec::new();
    let mut expectations: Vec<&Value> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut captures = None;
    match step {
        Step::Request {
            params,
            expect,
            expect_error,
            capture,
            ..
        } => {
            used.push(params);
            expectations.extend(expect.iter().chain(expect_error));
            captures = Some(capture);
        }
        Step::Turn {
            thread,
            input,
            params,
            expect,
            capture,
            ..
        } => {
            names.push(thread.clone());
            match input {
                super::format::Input::Items(items) => used.extend(items),
                super::format::Input::Text(t) => names.push(t.clone()),
            }
            used.push(params);
            expectations.extend(expect);
            captures = Some(capture);
        }
        Step::WaitTurn {
            turn,
            expect,
            capture,
            ..
        } => {
            names.push(turn.clone());
            expectations.extend(expect);
            captures = Some(capture);
        }
        Step::Wait {
            matches, capture, ..
        } => {
            expectations.extend(matches);
            captures = Some(capture);
        }
        Step::Reply {
            method,
            result,
            error,
            unanswered,
        } => {
            let given = usize::from(result.is_some())
                + usize::from(error.is_some())
                + usize::from(*unanswered);
            if given != 1 {
                errors.push(source.error_in(
                    span,
                    Some(method),
                    format!("expected exactly one of result, error or unanswered = true in a reply to {method}, found {given}"),
                ));
            }
            used.extend(result.iter().chain(error));
        }
        Step::Steer {
            thread,
            turn,
            expect,
            expect_error,
            input,
        } => {
            names.push(thread.clone());
            names.push(turn.clone());
            match input {
                super::format::Input::Items(items) => used.extend(items),
                super::format::Input::Text(t) => names.push(t.clone()),
            }
            expectations.extend(expect.iter().chain(expect_error));
        }
        Step::Interrupt {
            thread,
            turn,
            expect,
            expect_error,
        } => {
            names.push(thread.clone());
            names.push(turn.clone());
            expectations.extend(expect.iter().chain(expect_error));
        }
        Step::Script { response } => {
            for (i, r) in response.iter().enumerate() {
                let scripted = Scripted::from_json(&literals(r)).map_err(|e| e.to_string());
                if let Err(e) = scripted {
                    errors.push(source.error_at(span.start, format!("expected a scripted response (docs/sidecar-protocol.md §2) as response #{i}: {e}")));
                }
            }
        }
        Step::WriteFile { path, content } => {
            if let Err(m) = relative_path(path) {
                errors.push(source.error_in(span, Some(path), m));
            }
            names.push(path.clone());
            names.push(content.clone());
        }
        Step::Exec {
            prompt,
            args,
            stdin,
            cwd,
            expect,
            capture,
            ..
        } => {
            if let Some(cwd) = cwd
                && let Err(m) = relative_path(cwd)
            {
                errors.push(source.error_in(span, Some(cwd), m));
            }
            names.push(prompt.clone());
            names.extend(args.iter().chain(stdin).chain(cwd).cloned());
            expectations.extend(expect);
            captures = Some(capture);
        }
        Step::WaitRequests { .. }
        | Step::Restart {}
        | Step::Release { .. }
        | Step::Sleep { .. } => {}
    }
    let mut refs: Vec<String> = used
        .iter()
        .chain(&expectations)
        .flat_map(|v| references(v))
        .collect();
    for n in &names {
        refs.extend(references(&Value::String(n.clone())));
    }
    for name in refs {
        if !bound.contains(&name) {
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
    for e in &expectations {
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
    if let Some(captures) = captures {
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
    if matches!(step, Step::Turn { .. }) {
        bound.insert("turn".into());
    }
}

fn check_check(
    source: &Source,
    span: &Range<usize>,
    check: &Check,
    bound: &BTreeSet<String>,
    errors: &mut Vec<FileError>,
) {
    let mut bound = bound.clone();
    let mut expectations = Vec::new();
    let mut texts = Vec::new();
    match check {
        Check::Request {
            matches,
            contains,
            lacks,
            last_user_text,
            ..
        } => {
            expectations.extend(matches.iter().cloned());
            texts.extend(contains.iter().chain(lacks).chain(last_user_text).cloned());
        }
        Check::Notification { matches, .. } | Check::ServerRequest { matches, .. } => {
            expectations.extend(matches.iter().cloned());
        }
        Check::File {
            path,
            content,
            contains,
            exists,
            ..
        } => {
            if let Err(m) = relative_path(path) {
                errors.push(source.error_in(span, Some(path), m));
            }
            texts.push(path.clone());
            texts.extend(content.iter().chain(contains).cloned());
            if *exists == Some(false) && (content.is_some() || contains.is_some()) {
                errors.push(source.error_in(
                    span,
                    Some("exists"),
                    "expected content or contains only for a file that exists, found exists = false beside them",
                ));
            }
        }
        Check::Value { value, matches, .. } => {
            if !value.starts_with('$') || value.starts_with("${") {
                errors.push(source.error_in(
                    span,
                    Some(value),
                    format!(
                        "expected a variable (\"$name\") as the value to check, found {value:?}"
                    ),
                ));
            }
            texts.push(value.clone());
            expectations.push(matches.clone());
        }
        Check::Requests { .. } => {}
    }
    expectations.extend(texts.into_iter().map(Value::String));
    // A check reuses the step checker: it has no captures.
    let step = Step::Wait {
        notification: String::new(),
        matches: Some(Value::Array(expectations)),
        capture: Default::default(),
        timeout_ms: None,
    };
    check_step(source, span, &step, &mut bound, errors);
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
        assert_eq!((c.name.as_str(), c.id.as_str()), ("x_y", "X-1"));
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
        let e = errors("[[step]]\ndo = \"exec\"\nargs = []\n");
        assert!(
            e[0].starts_with("f.toml:4:1: in this step: missing field `prompt`"),
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
