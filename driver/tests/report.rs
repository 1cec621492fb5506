//! End to end: `codex-parity run --report` on the pinned codex writes reports that say what
//! ran, writes the same files again on a second run (durations aside), and its shards
//! merge into the unsplit result; `report.html` is loaded in a real headless Chromium.
//!
//! Chromium (Debian's `chromium`, installed by `.ci/run`) is looked up on PATH, or taken
//! from `CODEX_PARITY_CHROMIUM`. Without it the browser checks are skipped with a message,
//! except under `CI`, where they fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use codex_parity::codex::versions;
use codex_parity::harness::outcome::{Drift, KnownDrift, Outcome};
use codex_parity::report::{self, Column, Entry, Matrix, Row};
use codex_parity::scenarios;

/// A few quick scenarios: the point is the reports, the parity suite covers the rest.
const FILTER: &str = "E16";

/// Runs `codex-parity ARGS` on the pinned version (CODEX_TEST_BINS removed) and returns
/// its exit code.
fn codex_parity(args: &[&str]) -> i32 {
    let out = Command::new(env!("CARGO_BIN_EXE_codex-parity"))
        .args(args)
        .env_remove("CODEX_TEST_BINS")
        .output()
        .expect("codex-parity runs");
    eprintln!(
        "$ codex-parity {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out.status.code().unwrap_or(-1)
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A report file with its durations blanked: what must repeat exactly.
fn without_durations(dir: &Path, name: &str) -> String {
    let text = read(dir, name);
    let mut out = String::new();
    for line in text.lines() {
        let line = if line.trim_start().starts_with("\"duration_ms\"") {
            "\"duration_ms\": _".to_string()
        } else {
            blank_attr(line, "time")
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// `line` with every ` NAME="..."` value replaced by `_`.
fn blank_attr(line: &str, name: &str) -> String {
    let key = format!(" {name}=\"");
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find(&key) {
        out.push_str(&rest[..i + key.len()]);
        rest = &rest[i + key.len()..];
        let end = rest.find('"').unwrap_or(rest.len());
        out.push('_');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[test]
fn run_writes_reports_that_repeat_and_whose_shards_merge() {
    let pinned = versions::load().unwrap().pinned;
    let label = format!("codex-{pinned}");
    let expected: Vec<&str> = scenarios::registry()
        .iter()
        .filter(|s| s.matches(FILTER))
        .map(|s| s.name)
        .collect();
    assert!(!expected.is_empty());
    let tmp = tempfile::tempdir().unwrap();
    let dir = |name: &str| tmp.path().join(name);
    let arg = |p: PathBuf| p.to_str().unwrap().to_string();

    let code = codex_parity(&["run", "--filter", FILTER, "--report", &arg(dir("a"))]);
    let a = dir("a");
    for name in report::FILES {
        assert!(a.join(name).is_file(), "{name} not written");
    }

    // results.json: one record per scenario on the pinned version, in registry order.
    let json: serde_json::Value = serde_json::from_str(&read(&a, "results.json")).unwrap();
    let results = json["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(names, expected);
    let mut failed = false;
    for r in results {
        assert_eq!(r["codex"], label.as_str());
        assert_eq!(r["codex_version"], pinned.as_str());
        assert!(r["duration_ms"].is_u64());
        match r["status"].as_str().unwrap() {
            "passed" => {}
            "drift" | "contradicts" => {
                let known = r["known"].as_array().unwrap();
                assert!(!known.is_empty(), "{r}");
                for k in known {
                    assert!(
                        k["drift"]["key"].is_string() && k["reason"].is_string(),
                        "{k}"
                    );
                    assert!(!k["versions"].as_array().unwrap().is_empty(), "{k}");
                }
            }
            "failed" | "not_applicable" => {
                failed |= r["status"] == "failed";
                assert!(!r["reason"].as_str().unwrap().is_empty(), "{r}");
            }
            other => panic!("status {other}"),
        }
    }
    assert_eq!(code, if failed { 1 } else { 0 }, "exit status");

    // junit.xml parses, with one suite for the version and one case per scenario.
    let junit = read(&a, "junit.xml");
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let suites: Vec<_> = doc
        .root_element()
        .children()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    assert_eq!(suites.len(), 1);
    assert_eq!(suites[0].attribute("name"), Some(label.as_str()));
    let cases: Vec<&str> = suites[0]
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| n.attribute("name").unwrap())
        .collect();
    assert_eq!(cases, expected);

    // report.md: the table has a row per scenario.
    let md = read(&a, "report.md");
    assert!(md.contains(&format!("| scenario | id | {label} |")), "{md}");
    for name in &expected {
        assert_eq!(md.matches(&format!("\n| {name} |")).count(), 1, "{name}");
    }
    assert_eq!(
        read(&a, "report.html").matches("<td class=\"cell ").count(),
        expected.len()
    );

    // The same inputs give the same files, durations aside.
    assert_eq!(
        codex_parity(&["run", "--filter", FILTER, "--report", &arg(dir("b"))]),
        code
    );
    for name in report::FILES {
        assert_eq!(
            without_durations(&a, name),
            without_durations(&dir("b"), name),
            "{name} differs between two runs"
        );
    }

    // Two shards merge into the unsplit result.
    for k in 1..=2 {
        let shard = format!("{k}/2");
        let out = arg(dir(&format!("shard{k}")));
        codex_parity(&[
            "run", "--filter", FILTER, "--shard", &shard, "--report", &out,
        ]);
    }
    let parts: Vec<Matrix> = (1..=2)
        .map(|k| report::read_dir(&dir(&format!("shard{k}"))).unwrap())
        .collect();
    assert_eq!(
        parts.iter().map(|p| p.entries.len()).sum::<usize>(),
        expected.len(),
        "the shards split the cells"
    );
    let merged_code = codex_parity(&[
        "merge",
        &arg(dir("shard1")),
        &arg(dir("shard2")),
        "--report",
        &arg(dir("merged")),
    ]);
    assert_eq!(merged_code, code);
    for name in report::FILES {
        assert_eq!(
            without_durations(&a, name),
            without_durations(&dir("merged"), name),
            "{name} of the merged shards differs from the unsplit run"
        );
    }
    // A missing shard is an error, not a smaller matrix.
    assert_eq!(codex_parity(&["merge", &arg(dir("shard1"))]), 2);

    if let Some(browser) = Browser::find() {
        let dom = browser.dump_dom(&a.join("report.html"));
        let cells = grid_cells(&dom);
        let want: Vec<(String, String)> = expected
            .iter()
            .map(|s| (s.to_string(), label.clone()))
            .collect();
        assert_eq!(cells, want, "one grid cell per scenario and version");
        browser.screenshot(&a.join("report.html"), "report-screenshot.png");
    }
}

/// A report with every kind of cell and reasons that try to break out of their markup.
fn hostile_matrix() -> Matrix {
    let rows: Vec<Row> = ["alpha", "beta", "gamma"]
        .iter()
        .map(|n| Row {
            name: n.to_string(),
            id: "X1".into(),
            summary: format!("<b>{n}</b> \"summary\""),
        })
        .collect();
    let columns: Vec<Column> = ["0.131.0", "0.161.0", "0.171.0"]
        .iter()
        .map(|v| Column {
            label: format!("codex-{v}"),
            version: v.to_string(),
            protocol: None,
        })
        .collect();
    let attack = "</td><td class=\"cell pass\" data-scenario=\"x\" data-codex=\"y\">pass</td>\
                  <script>document.title='pwned'</script>\"' onmouseover=\"x\"";
    let outcomes = [
        Outcome::Passed,
        Outcome::Failed(format!("{attack}\n\u{1b}[31mstderr tail\u{1b}[0m")),
        Outcome::NotApplicable(format!("no method {attack}")),
        Outcome::Drift(vec![known(&format!("known: {attack}"), false)]),
    ];
    let mut entries = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        for (j, column) in columns.iter().enumerate() {
            if (i, j) == (2, 2) {
                continue; // one cell without a result
            }
            entries.push(Entry {
                scenario: row.name.clone(),
                codex: column.label.clone(),
                // One cell of contradicting drift, in its own colour.
                outcome: if (i, j) == (2, 1) {
                    Outcome::Contradicts(vec![known(&format!("contradicts: {attack}"), true)])
                } else {
                    outcomes[(i + j) % outcomes.len()].clone()
                },
                duration: Duration::from_millis(10),
                // One cell carries an observation, in markup that must stay text.
                observations: if (i, j) == (0, 0) {
                    vec!["observed <b>bold</b>".to_string()]
                } else {
                    Vec::new()
                },
                checked: None,
                drift: Vec::new(),
                failure: None,
                exercised: Default::default(),
                perf: Default::default(),
            });
        }
    }
    Matrix {
        shard: None,
        rows,
        columns,
        entries,
    }
}

#[test]
fn reports_strip_terminal_escapes_and_show_contradicting_drift() {
    let m = hostile_matrix();
    let tmp = tempfile::tempdir().unwrap();
    report::write_dir(tmp.path(), &m, &report::sections::standard(&m)).unwrap();
    // The colour codes of a codex stderr tail are gone from every report, not mangled.
    for name in report::FILES {
        let text = read(tmp.path(), name);
        assert!(text.contains("stderr tail"), "{name}");
        assert!(
            !text.contains("[31m") && !text.contains('\u{1b}') && !text.contains('\u{fffd}'),
            "{name} keeps a terminal escape"
        );
    }
    let json = read(tmp.path(), "results.json");
    assert_eq!(json.matches("\"status\": \"contradicts\"").count(), 1);
    assert!(read(tmp.path(), "report.md").contains("CONTRA"));
    assert!(read(tmp.path(), "junit.xml").contains("value=\"contradicts\""));
    // merge reads every status back (the text without its escapes).
    let words = |m: &Matrix| -> Vec<&str> { m.entries.iter().map(|e| e.outcome.word()).collect() };
    assert_eq!(words(&report::read_dir(tmp.path()).unwrap()), words(&m));
}

#[test]
fn html_report_keeps_its_grid_in_a_browser_whatever_the_reasons_say() {
    let Some(browser) = Browser::find() else {
        return;
    };
    let m = hostile_matrix();
    let tmp = tempfile::tempdir().unwrap();
    report::write_dir(tmp.path(), &m, &report::sections::standard(&m)).unwrap();
    let page = tmp.path().join("report.html");
    let dom = browser.dump_dom(&page);
    let want: Vec<(String, String)> = m
        .rows
        .iter()
        .flat_map(|r| m.columns.iter().map(|c| (r.name.clone(), c.label.clone())))
        .collect();
    assert_eq!(
        grid_cells(&dom),
        want,
        "one grid cell per scenario and version"
    );
    assert!(
        dom.contains("<title>codex-parity report</title>"),
        "no script ran"
    );
    // The reasons arrive as text in their expandable items.
    assert!(
        dom.contains("&lt;/td&gt;&lt;td class=\"cell pass\""),
        "{dom}"
    );
    assert_eq!(
        dom.matches("<details").count(),
        8,
        "one item per cell that did not pass, and one for the observation"
    );
    assert!(dom.contains("observed &lt;b&gt;bold&lt;/b&gt;"), "{dom}");
    assert!(
        dom.contains("class=\"cell contra\""),
        "the contradicting cell"
    );

    browser.screenshot(&page, "report-screenshot-every-kind.png");
}

/// The `(data-scenario, data-codex)` of every `<td class="cell ...">` in a DOM dump, in
/// document order.
fn grid_cells(dom: &str) -> Vec<(String, String)> {
    let attr = |tag: &str, name: &str| {
        let key = format!(" {name}=\"");
        let start = tag.find(&key).map(|i| i + key.len())?;
        let len = tag[start..].find('"')?;
        Some(tag[start..start + len].to_string())
    };
    let mut cells = Vec::new();
    let mut rest = dom;
    while let Some(i) = rest.find("<td ") {
        rest = &rest[i..];
        let end = rest.find('>').unwrap_or(rest.len());
        let tag = &rest[..end];
        if attr(tag, "class").is_some_and(|c| c.split(' ').any(|w| w == "cell")) {
            cells.push((
                attr(tag, "data-scenario").unwrap_or_default(),
                attr(tag, "data-codex").unwrap_or_default(),
            ));
        }
        rest = &rest[end..];
    }
    cells
}

/// A headless Chromium.
struct Browser {
    program: PathBuf,
    profile: tempfile::TempDir,
}

impl Browser {
    /// Chromium, or `None` with a printed reason (a failure under CI).
    fn find() -> Option<Browser> {
        let program = std::env::var_os("CODEX_PARITY_CHROMIUM")
            .map(PathBuf::from)
            .or_else(|| {
                ["chromium", "chromium-browser", "google-chrome"]
                    .iter()
                    .find_map(|name| on_path(name))
            });
        match program {
            Some(program) => Some(Browser {
                program,
                profile: tempfile::tempdir().unwrap(),
            }),
            None if std::env::var_os("CI").is_some() => {
                panic!("chromium is not installed: .ci/run installs it (apt-get install chromium)")
            }
            None => {
                eprintln!(
                    "SKIPPED the browser check of report.html: no chromium on PATH \
                     (apt-get install chromium, or set CODEX_PARITY_CHROMIUM)"
                );
                None
            }
        }
    }

    /// Runs chromium headless on `page` with `args`, within a minute.
    fn run(&self, page: &Path, args: &[String], stdout: Stdio) {
        let mut child = Command::new(&self.program)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", self.profile.path().display()))
            .args(args)
            .arg(format!("file://{}", page.display()))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium starts");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(status.success(), "chromium {args:?} failed: {status}");
                return;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("chromium {args:?} did not finish within 60 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The DOM of `page` after Chromium parsed it.
    fn dump_dom(&self, page: &Path) -> String {
        let out = self.profile.path().join("dom.html");
        let file = std::fs::File::create(&out).unwrap();
        self.run(page, &["--dump-dom".into()], Stdio::from(file));
        let dom = std::fs::read_to_string(&out).unwrap();
        assert!(
            dom.contains("<table class=\"grid\""),
            "no grid in the DOM:\n{dom}"
        );
        dom
    }

    /// Saves a screenshot of `page` as `target/NAME`, the CI artifact.
    fn screenshot(&self, page: &Path, name: &str) {
        let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .unwrap()
            .join(name);
        let _ = std::fs::remove_file(&target);
        self.run(
            page,
            &[
                "--window-size=1280,1024".into(),
                format!("--screenshot={}", target.display()),
            ],
            Stdio::null(),
        );
        let png = std::fs::read(&target).unwrap();
        assert!(
            png.starts_with(b"\x89PNG"),
            "{} is not a PNG",
            target.display()
        );
        eprintln!("screenshot: {}", target.display());
    }
}

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// A listed drift whose entry's reason and message are `text`.
fn known(text: &str, contradicts: bool) -> KnownDrift {
    KnownDrift {
        drift: Drift::new("report.key", serde_json::json!(text), text),
        more: 0,
        reason: text.to_string(),
        versions: vec![">=0.131.0".into()],
        contradicts,
    }
}
