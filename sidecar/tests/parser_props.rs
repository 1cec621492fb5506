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
            Just("when")
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

/// Lines: raw strings, JSON values, and commands with arbitrary fields.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
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
    fn parsed_scripts_round_trip(value in json_value()) {
        if let Ok(scripted) = Scripted::from_json(&value) {
            prop_assert_eq!(Scripted::from_json(&scripted.to_json()).unwrap(), scripted);
        }
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
            let line = line.replace("\"min\":", "\"ignored_min\":");
            sidecar.send_line(&line);
            let reply = sidecar.read_line().expect("a reply");
            prop_assert!(reply["type"].is_string(), "{}", reply);
        }
        let status = sidecar.call(json!({"op": "status", "id": "alive"}));
        prop_assert_eq!(&status["id"], "alive");
    }
}
