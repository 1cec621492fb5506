//! Property tests: no line, however odd, panics the command parser or the scripted-response
//! parser, and every line gets exactly one reply from the running binary.

mod common;

use codex_parity_sidecar::Scripted;
use codex_parity_sidecar::protocol::{Command, Reply, parse_command};
use common::raw::Sidecar;
use proptest::prelude::*;
use serde_json::{Value, json};

/// Arbitrary JSON values, nested a few levels.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        // Quarter steps are exact in binary, so values survive a print-parse round trip.
        (-4000i32..4000).prop_map(|n| json!(f64::from(n) / 4.0)),
        ".{0,12}".prop_map(Value::from),
        prop_oneof![
            Just("requests"),
            Just("shutdown"),
            Just("enqueue"),
            Just("models"),
            Just("status"),
            Just("reset"),
            Just("events"),
            Just("status"),
            Just("raw"),
            Just("when"),
            Just("release"),
            Just("wait_gate"),
            Just("websocket"),
            Just("compact"),
            Just("auto"),
            Just("queue")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("op".to_string()),
                        Just("id".to_string()),
                        Just("min".to_string()),
                        Just("responses".to_string()),
                        Just("events".to_string()),
                        Just("status".to_string()),
                        Just("when".to_string()),
                        Just("headers".to_string()),
                        prop_oneof![
                            Just("gap_ms"),
                            Just("gates"),
                            Just("stall_after"),
                            Just("stall_gate"),
                            Just("disconnect_after"),
                            Just("disconnect_after_ms"),
                            Just("endpoint"),
                            Just("gate"),
                            Just("timeout_ms"),
                            Just("warmup"),
                            Just("connections"),
                            Just("refuse"),
                            Just("hang")
                        ]
                        .prop_map(str::to_string),
                        "[a-z_]{1,8}"
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// Scripted SSE responses with timing fields, valid or not.
fn timed_script() -> impl Strategy<Value = Value> {
    (
        0usize..5,
        prop::option::of(prop_oneof![
            (0u64..300).prop_map(Value::from),
            prop::collection::vec(0u64..300, 0..6).prop_map(|v| json!(v)),
        ]),
        prop::option::of(0usize..7),
        prop::option::of(0usize..7),
        prop::option::of(0u64..1000),
        prop::collection::vec(("[a-z]{0,3}", 0usize..7), 0..3),
        prop::option::of("[a-z]{0,3}"),
        prop::option::of(prop_oneof![Just("compact"), Just("responses"), Just("x")]),
    )
        .prop_map(
            |(n, gap, stall, disconnect, after_ms, gates, stall_gate, endpoint)| {
                let events: Vec<Value> = (0..n)
                    .map(|i| json!({"type": "response.output_text.delta", "delta": i.to_string()}))
                    .collect();
                let mut object = json!({"events": events});
                let o = object.as_object_mut().unwrap();
                if let Some(gap) = gap {
                    o.insert("gap_ms".into(), gap);
                }
                if let Some(n) = stall {
                    o.insert("stall_after".into(), json!(n));
                }
                if let Some(n) = disconnect {
                    o.insert("disconnect_after".into(), json!(n));
                }
                if let Some(ms) = after_ms {
                    o.insert("disconnect_after_ms".into(), json!(ms));
                }
                if !gates.is_empty() {
                    let map: serde_json::Map<String, Value> =
                        gates.into_iter().map(|(k, v)| (k, json!(v))).collect();
                    o.insert("gates".into(), Value::Object(map));
                }
                if let Some(name) = stall_gate {
                    o.insert("stall_gate".into(), json!(name));
                }
                if let Some(endpoint) = endpoint {
                    o.insert("endpoint".into(), json!(endpoint));
                }
                object
            },
        )
}

/// WebSocket connection scripts, valid or not.
fn connection_script() -> impl Strategy<Value = Value> {
    prop_oneof![
        (90u64..1000, json_value()).prop_map(|(status, body)| json!({"refuse": status, "body": body})),
        Just(json!({"hang": true})),
        json_value().prop_map(|v| json!({"hang": v})),
        (prop::collection::vec(timed_script(), 0..3), prop_oneof![Just("auto"), Just("queue"), Just("other")])
            .prop_map(|(responses, warmup)| json!({"headers": {"x-a": "1"}, "responses": responses, "warmup": warmup})),
        json_value(),
    ]
}

/// Lines: raw strings, JSON values, and commands with arbitrary fields.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(timed_script(), 0..4)
            .prop_map(|list| json!({"op": "enqueue", "responses": list, "id": 2}).to_string()),
        (
            prop::collection::vec(connection_script(), 0..3),
            json_value()
        )
            .prop_map(|(list, warmup)| {
                json!({"op": "websocket", "connections": list, "warmup": warmup}).to_string()
            }),
        (
            prop_oneof![Just("release"), Just("wait_gate")],
            json_value(),
            json_value()
        )
            .prop_map(
                |(op, gate, ms)| json!({"op": op, "gate": gate, "timeout_ms": ms}).to_string()
            ),
        "[^\n\r]{0,200}",
        json_value().prop_map(|v| v.to_string()),
        (
            prop_oneof![
                Just("requests"),
                Just("enqueue"),
                Just("models"),
                Just("status"),
                Just("bogus")
            ],
            json_value(),
            json_value()
        )
            .prop_map(|(op, a, b)| {
                json!({"op": op, "responses": a, "min": b.clone(), "body": b, "id": 1}).to_string()
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn the_command_parser_never_panics_and_replies_serialize(line in line()) {
        let (id, command) = parse_command(&line);
        let reply = match command {
            Ok(_) => Reply::Ok,
            Err(e) => Reply::Error { message: e.to_string() },
        };
        let text = reply.to_line(id.as_ref());
        prop_assert!(!text.contains('\n'));
        let (echoed, _) = Reply::parse_line(&text).unwrap();
        prop_assert_eq!(echoed, id);
    }

    #[test]
    fn parsed_scripts_round_trip(value in prop_oneof![json_value(), timed_script()]) {
        if let Ok(scripted) = Scripted::from_json(&value) {
            prop_assert_eq!(Scripted::from_json(&scripted.to_json()).unwrap(), scripted);
        }
    }

    #[test]
    fn timed_scripts_are_accepted_exactly_when_possible(value in timed_script()) {
        let n = value["events"].as_array().unwrap().len();
        let index = |key: &str| value.get(key).and_then(Value::as_u64).map(|v| v as usize);
        let gaps_ok = value.get("gap_ms").and_then(Value::as_array).is_none_or(|g| g.len() == n);
        let gates_ok = value.get("gates").and_then(Value::as_object).is_none_or(|m| {
            m.iter().all(|(name, at)| !name.is_empty() && (at.as_u64().unwrap() as usize) < n)
        });
        let stall = index("stall_after");
        let disconnect = index("disconnect_after");
        let stall_gate_ok = match value.get("stall_gate").and_then(Value::as_str) {
            None => true,
            Some(name) => !name.is_empty() && stall.is_some(),
        };
        let possible = gaps_ok
            && gates_ok
            && stall.is_none_or(|s| s <= n)
            && disconnect.is_none_or(|d| d <= n)
            && !(stall.is_some() && disconnect.is_some())
            && stall_gate_ok
            && value.get("endpoint").is_none_or(|e| e != "x");
        let parsed = Scripted::from_json(&value);
        prop_assert_eq!(parsed.is_ok(), possible, "{} -> {:?}", value, parsed);
    }

    #[test]
    fn parsed_commands_round_trip(line in line()) {
        if let (_, Ok(command)) = parse_command(&line) {
            let (_, again) = parse_command(&command.to_line(None));
            prop_assert_eq!(again.unwrap(), command);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// The process answers every line of an arbitrary batch (shutdown excluded) with one
    /// reply and is still alive afterwards.
    #[test]
    fn the_binary_replies_once_per_line(lines in prop::collection::vec(line(), 1..60)) {
        let mut sidecar = Sidecar::start();
        for line in lines.iter().filter(|l| !l.trim().is_empty()) {
            if matches!(parse_command(line).1, Ok(Command::Shutdown)) {
                continue;
            }
            // Keep `requests` waits short.
            let line = line
                .replace("\"min\":", "\"ignored_min\":")
                .replace("\"timeout_ms\":", "\"ignored_timeout_ms\":");
            sidecar.send_line(&line);
            let reply = sidecar.read_line().expect("a reply");
            prop_assert!(reply["type"].is_string(), "{}", reply);
        }
        let status = sidecar.call(json!({"op": "status", "id": "alive"}));
        prop_assert_eq!(&status["id"], "alive");
    }
}
