//! The scenario-file model both ways: a file written from the model reads back as the same
//! model, for generated files of every step and check kind (values with quotes, line
//! breaks, `'''`, `#`, `$$` escapes, nested tables, comments that would end a line) and for
//! every scenario file in the repository.

use std::collections::BTreeMap;
use std::path::Path;

use codex_parity::harness::world::Listen;
use codex_parity::scenario_file::checks::Check;
use codex_parity::scenario_file::checks::file::FileCheck;
use codex_parity::scenario_file::checks::messages::{NotificationCheck, ServerRequestCheck};
use codex_parity::scenario_file::checks::request::RequestCheck;
use codex_parity::scenario_file::checks::requests::RequestsCheck;
use codex_parity::scenario_file::checks::value::ValueCheck;
use codex_parity::scenario_file::fields::Input;
use codex_parity::scenario_file::format::{CodexSection, Requires, ScenarioFile, WorkspaceSection};
use codex_parity::scenario_file::load::compile;
use codex_parity::scenario_file::steps::Step;
use codex_parity::scenario_file::steps::exec::ExecStep;
use codex_parity::scenario_file::steps::interrupt::InterruptStep;
use codex_parity::scenario_file::steps::release::ReleaseStep;
use codex_parity::scenario_file::steps::reply::ReplyStep;
use codex_parity::scenario_file::steps::request::RequestStep;
use codex_parity::scenario_file::steps::restart::RestartStep;
use codex_parity::scenario_file::steps::script::ScriptStep;
use codex_parity::scenario_file::steps::sleep::SleepStep;
use codex_parity::scenario_file::steps::steer::SteerStep;
use codex_parity::scenario_file::steps::turn::TurnStep;
use codex_parity::scenario_file::steps::wait::WaitStep;
use codex_parity::scenario_file::steps::wait_requests::WaitRequestsStep;
use codex_parity::scenario_file::steps::wait_turn::WaitTurnStep;
use codex_parity::scenario_file::steps::write_file::WriteFileStep;
use codex_parity::scenario_file::write::{Comments, write};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Text that is no variable reference: any of the characters a file makes hard (quotes,
/// backslashes, line breaks, `#`, `=`, brackets, `'''`), or a `$$` literal, `$null`, or a
/// built-in variable.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => "[a-zA-Z0-9 _'\"\\\\\n\t{}\\[\\]#=.,:é-]{0,14}",
        1 => Just("'''".to_string()),
        1 => "[a-z]{1,6}".prop_map(|s| format!("$${s}")),
        1 => Just("$null".to_string()),
        1 => Just("$workspace".to_string()),
        1 => "[a-z]{0,4}".prop_map(|s| format!("${{home}}/{s}")),
    ]
}

/// A key of a JSON object (no operator: no leading `$`).
fn key() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 _.\"'#=-]{0,8}".prop_filter("no operator", |k| !k.starts_with('$'))
}

/// JSON values as a step holds them, nested a few levels.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-4000i32..4000).prop_map(|n| json!(f64::from(n) / 4.0)),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// An object value (params, expectations).
fn object() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(key(), value(), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,10}"
}

fn path() -> impl Strategy<Value = String> {
    "[a-z]{1,5}(/[a-z]{1,5}){0,2}\\.txt"
}

fn captures() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(name(), "(/[a-z]{1,4}){0,3}", 0..3)
}

fn opt<T: std::fmt::Debug + Clone>(
    s: impl Strategy<Value = T>,
) -> impl Strategy<Value = Option<T>> {
    prop::option::of(s)
}

/// A scripted response of the sidecar (literal JSON: any strings, nulls included).
fn response() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec((".{0,10}", value()), 1..4),
        opt(0u64..50),
    )
        .prop_map(|(events, delay)| {
            let events: Vec<Value> = events
                .into_iter()
                .map(|(t, v)| json!({"type": format!("response.{t}"), "data": v, "n": null}))
                .collect();
            let mut r = json!({"events": events});
            if let Some(d) = delay {
                r["delay_ms"] = json!(d);
            }
            r
        })
}

/// `v` as a step holds it: nulls written `"$null"` (TOML has no null).
fn as_written(v: Value) -> Value {
    match v {
        Value::Null => Value::String("$null".into()),
        Value::Array(items) => Value::Array(items.into_iter().map(as_written).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, as_written(v))).collect())
        }
        other => other,
    }
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        text().prop_map(Input::Text),
        prop::collection::vec(object(), 0..3).prop_map(Input::Items),
    ]
}

/// A step that talks to the app-server.
fn app_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (
            name(),
            object(),
            opt(object()),
            opt(object()),
            captures(),
            opt(0u64..9999),
            opt(name())
        )
            .prop_map(
                |(method, params, expect, expect_error, capture, timeout_ms, drift)| {
                    Step::Request(RequestStep {
                        method,
                        params,
                        expect,
                        expect_error,
                        capture,
                        timeout_ms,
                        drift,
                    })
                }
            ),
        (
            name(),
            input(),
            opt(object()),
            any::<bool>(),
            opt(object()),
            captures(),
            opt(1u64..9999),
            opt(name())
        )
            .prop_map(
                |(thread, input, params, wait, expect, capture, timeout_ms, drift)| {
                    Step::Turn(TurnStep {
                        thread,
                        input,
                        params: params.unwrap_or(Value::Null),
                        wait,
                        expect,
                        capture,
                        timeout_ms,
                        drift,
                    })
                }
            ),
        (
            name(),
            opt(object()),
            captures(),
            opt(1u64..99),
            opt(name())
        )
            .prop_map(|(turn, expect, capture, timeout_ms, drift)| {
                Step::WaitTurn(WaitTurnStep {
                    turn,
                    expect,
                    capture,
                    timeout_ms,
                    drift,
                })
            }),
        (name(), opt(object()), captures(), opt(1u64..99)).prop_map(
            |(notification, matches, capture, timeout_ms)| {
                Step::Wait(WaitStep {
                    notification,
                    matches,
                    capture,
                    timeout_ms,
                })
            }
        ),
        (name(), 0..3usize, value()).prop_map(|(method, which, v)| {
            let mut r = ReplyStep {
                method,
                ..ReplyStep::default()
            };
            match which {
                0 => r.result = Some(v),
                1 => r.error = Some(json!({"code": -32000, "message": v})),
                _ => r.unanswered = true,
            }
            Step::Reply(r)
        }),
        (name(), name(), input(), opt(object()), opt(object())).prop_map(
            |(thread, turn, input, expect, expect_error)| {
                Step::Steer(SteerStep {
                    thread,
                    turn,
                    input,
                    expect,
                    expect_error,
                })
            }
        ),
        (name(), name(), opt(object()), opt(object())).prop_map(
            |(thread, turn, expect, expect_error)| {
                Step::Interrupt(InterruptStep {
                    thread,
                    turn,
                    expect,
                    expect_error,
                })
            }
        ),
        Just(Step::Restart(RestartStep {})),
    ]
}

/// A step that needs no app-server.
fn other_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0usize..9, opt(0u64..99)).prop_map(|(count, timeout_ms)| {
            Step::WaitRequests(WaitRequestsStep { count, timeout_ms })
        }),
        // A step holds values as written: null is "$null" there.
        prop::collection::vec(response().prop_map(as_written), 0..3)
            .prop_map(|response| Step::Script(ScriptStep { response })),
        name().prop_map(|gate| Step::Release(ReleaseStep { gate })),
        (path(), text())
            .prop_map(|(path, content)| Step::WriteFile(WriteFileStep { path, content })),
        (0u64..9).prop_map(|ms| Step::Sleep(SleepStep { ms })),
        (
            opt(text()),
            prop::collection::vec(text(), 0..3),
            opt(text()),
            opt(path()),
            opt(object()),
            captures(),
            opt(1u64..9999),
            opt(name()),
        )
            .prop_map(
                |(prompt, args, stdin, cwd, expect, capture, timeout_ms, drift)| {
                    Step::Exec(ExecStep {
                        prompt,
                        args,
                        stdin,
                        cwd,
                        expect,
                        capture,
                        timeout_ms,
                        drift,
                    })
                }
            ),
    ]
}

/// A check that needs no app-server.
fn other_check() -> impl Strategy<Value = Check> {
    prop_oneof![
        (0usize..9, opt(name()))
            .prop_map(|(count, drift)| Check::Requests(RequestsCheck { count, drift })),
        (
            -3i64..5,
            opt(object()),
            prop::collection::vec(text(), 0..2),
            prop::collection::vec(text(), 0..2),
            opt(text()),
            opt(name()),
        )
            .prop_map(|(index, matches, contains, lacks, last_user_text, drift)| {
                Check::Request(RequestCheck {
                    index,
                    matches,
                    contains,
                    lacks,
                    last_user_text,
                    drift,
                })
            }),
        (value(), opt(name())).prop_map(|(matches, drift)| {
            Check::Value(ValueCheck {
                value: "$workspace".into(),
                matches,
                drift,
            })
        }),
        (
            path(),
            opt(text()),
            opt(text()),
            opt(Just(true)),
            opt(name())
        )
            .prop_map(|(path, content, contains, exists, drift)| {
                Check::File(FileCheck {
                    path,
                    content,
                    contains,
                    exists,
                    drift,
                })
            }),
    ]
}

/// A check on what the app-server sent.
fn app_check() -> impl Strategy<Value = Check> {
    prop_oneof![
        (name(), opt(object()), opt(0usize..4), opt(name())).prop_map(
            |(method, matches, count, drift)| {
                Check::Notification(NotificationCheck {
                    drift,
                    ..NotificationCheck::new(&method, matches, count)
                })
            }
        ),
        (name(), opt(object()), opt(0usize..4), opt(name())).prop_map(
            |(method, matches, count, drift)| {
                Check::ServerRequest(ServerRequestCheck {
                    drift,
                    ..ServerRequestCheck::new(&method, matches, count)
                })
            }
        ),
    ]
}

fn requires() -> impl Strategy<Value = Requires> {
    let list = |s: &'static str| prop::collection::vec(s, 0..3);
    (
        list("[a-z]{1,5}/[a-z]{1,5}"),
        list("[a-z]{1,5}/[a-z]{1,5}"),
        list("[a-z]{1,5}/[a-z]{1,5}"),
        list("[A-Z][a-z]{1,5}\\.[a-z]{1,5}"),
        list("[A-Z][a-z]{1,5}\\.[a-z]{1,5}"),
    )
        .prop_map(
            |(methods, server_requests, notifications, fields, enum_values)| Requires {
                methods,
                server_requests,
                notifications,
                fields,
                enum_values,
            },
        )
}

fn codex() -> impl Strategy<Value = CodexSection> {
    (
        (
            opt(name()),
            opt(name()),
            opt(0u32..5),
            opt(0u32..5),
            opt(1u64..99999),
        ),
        (
            prop::collection::vec(text(), 0..2),
            prop::collection::vec(text(), 0..2),
            opt(any::<bool>()),
            opt(any::<bool>()),
            opt(any::<bool>()),
            opt(prop_oneof![
                Just(Listen::Stdio),
                Just(Listen::WebSocket),
                Just(Listen::Unix)
            ]),
            prop::collection::btree_map(name(), "[a-z]{1,5}/[a-z]{1,5}", 0..2),
        ),
    )
        .prop_map(|(a, b)| CodexSection {
            approval_policy: a.0,
            sandbox_mode: a.1,
            request_max_retries: a.2,
            stream_max_retries: a.3,
            stream_idle_timeout_ms: a.4,
            config: b.0,
            args: b.1,
            experimental_api: b.2,
            allow_autonomous_turns: b.3,
            websocket: b.4,
            listen: b.5,
            enable_when_experimental: b.6,
        })
}

/// A whole valid file: app-server steps (and the checks and thread that need them) only
/// together.
fn file() -> impl Strategy<Value = ScenarioFile> {
    (
        (name(), "[A-Z]{1,3}-[0-9]{1,2}", text(), opt(1u64..600)),
        (
            requires(),
            codex(),
            any::<bool>(),
            prop::collection::btree_map(path(), text(), 0..2),
        ),
        prop::collection::vec(response(), 0..3),
        any::<bool>(),
        prop::collection::vec(prop_oneof![app_step(), other_step()], 0..6),
        prop::collection::vec(other_step(), 0..4),
        prop::collection::vec(prop_oneof![app_check(), other_check()], 0..4),
        prop::collection::vec(other_check(), 0..3),
        (
            opt(any::<bool>()),
            opt(prop::collection::btree_map(key(), value(), 0..3)),
        ),
    )
        .prop_map(
            |(
                head,
                sections,
                responses,
                with_app,
                app_steps,
                steps,
                app_checks,
                checks,
                thread,
            )| {
                let (steps, checks) = if with_app {
                    (app_steps, app_checks)
                } else {
                    (steps, checks)
                };
                let app_server = steps.iter().any(Step::needs_app_server);
                let (start_thread, thread) = match (app_server, thread) {
                    (true, (Some(false), _)) => (Some(false), None),
                    (true, (start, t)) => (start, t.map(|m| m.into_iter().collect::<Map<_, _>>())),
                    (false, (start, _)) => (start.filter(|s| !s), None),
                };
                let checks = checks
                    .into_iter()
                    .filter(|c| app_server || !c.needs_app_server())
                    .collect();
                ScenarioFile {
                    name: head.0,
                    id: head.1,
                    summary: head.2,
                    timeout_secs: head.3,
                    start_thread,
                    requires: sections.0,
                    codex: sections.1,
                    workspace: WorkspaceSection {
                        git: sections.2,
                        files: sections.3,
                    },
                    thread,
                    responses,
                    steps,
                    checks,
                }
            },
        )
}

/// Comments with everything a line can hold.
fn comments(file: &ScenarioFile) -> impl Strategy<Value = Comments> + use<> {
    let line = || ".{0,20}";
    (
        prop::collection::vec(line(), 0..3),
        opt(line()),
        prop::collection::vec(line(), file.responses.len()),
        prop::collection::vec(line(), file.steps.len()),
        prop::collection::vec(line(), file.checks.len()),
        prop::collection::vec(line(), 0..3),
    )
        .prop_map(
            |(header, codex, responses, steps, checks, notes)| Comments {
                header,
                codex: codex.clone(),
                requires: codex.clone(),
                thread: codex.clone(),
                start_thread: codex,
                responses,
                steps,
                checks,
                notes,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn a_written_file_reads_back_as_the_same_model(
        (file, comments) in file().prop_flat_map(|f| { let c = comments(&f); (Just(f), c) })
    ) {
        let text = write(&file, &comments);
        let read = compile(Path::new("gen.toml"), &text)
            .unwrap_or_else(|e| panic!("{}\n--- the file:\n{text}", e.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")));
        prop_assert_eq!(&read.file, &file, "the file:\n{}", text);
        // And the model's own JSON form is a round trip too (what record's redactor uses).
        prop_assert_eq!(ScenarioFile::from_json(&file.to_json()).unwrap(), file);
    }
}

/// Every scenario file of the repository reads, writes and reads back to the same model.
#[test]
fn every_scenario_file_of_the_repository_round_trips() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/scenarios");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let first = compile(&path, &text).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        let written = write(&first.file, &Comments::default());
        let again = compile(&path, &written)
            .unwrap_or_else(|e| panic!("{}: {e:?}\n{written}", path.display()));
        assert_eq!(again.file, first.file, "{}:\n{written}", path.display());
        seen += 1;
    }
    assert!(seen >= 9, "only {seen} example files");
}
