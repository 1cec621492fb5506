//! Group I, the app-server's listeners: the executor group (a plain turn, streaming, a
//! dynamic tool, a command approval, an interrupt) again with the client on a connection of
//! `codex app-server --listen ws://127.0.0.1:0` (I1–I5) and `--listen unix://PATH` (I6–I10)
//! instead of stdio, same assertions; and E4's concurrent turns on two threads over one
//! ws:// connection (I17). Each twin applies where the binary's `app-server
//! --help` lists the listener ([`Scenario::over_listener`]).

use crate::harness::scenario::Scenario;
use crate::harness::world::Listen;

/// Each twin: the scenario it runs again, its name and id, and the listener it runs over.
const TWINS: [(&str, &str, &str, Listen); 11] = [
    (
        "smoke_uses_mock_responses",
        "smoke_uses_mock_responses_over_ws_listener",
        "I1",
        Listen::WebSocket,
    ),
    (
        "streaming_deltas",
        "streaming_deltas_over_ws_listener",
        "I2",
        Listen::WebSocket,
    ),
    (
        "dynamic_tool_round_trip",
        "dynamic_tool_round_trip_over_ws_listener",
        "I3",
        Listen::WebSocket,
    ),
    (
        "approval_command_accept",
        "approval_command_accept_over_ws_listener",
        "I4",
        Listen::WebSocket,
    ),
    (
        "turn_interrupt_ends_turn_interrupted",
        "turn_interrupt_ends_turn_interrupted_over_ws_listener",
        "I5",
        Listen::WebSocket,
    ),
    (
        "smoke_uses_mock_responses",
        "smoke_uses_mock_responses_over_unix_listener",
        "I6",
        Listen::Unix,
    ),
    (
        "streaming_deltas",
        "streaming_deltas_over_unix_listener",
        "I7",
        Listen::Unix,
    ),
    (
        "dynamic_tool_round_trip",
        "dynamic_tool_round_trip_over_unix_listener",
        "I8",
        Listen::Unix,
    ),
    (
        "approval_command_accept",
        "approval_command_accept_over_unix_listener",
        "I9",
        Listen::Unix,
    ),
    (
        "turn_interrupt_ends_turn_interrupted",
        "turn_interrupt_ends_turn_interrupted_over_unix_listener",
        "I10",
        Listen::Unix,
    ),
    (
        "interleaved_turns_route_by_thread",
        "interleaved_turns_route_by_thread_over_ws_listener",
        "I17",
        Listen::WebSocket,
    ),
];

/// I1–I10: the executor group over each listener; I17: E4 over ws://.
pub fn scenarios() -> Vec<Scenario> {
    let originals: Vec<Scenario> = super::executor::scenarios()
        .into_iter()
        .chain(super::approvals::scenarios())
        .chain(super::interaction::scenarios())
        .chain(super::threads::scenarios())
        .collect();
    TWINS
        .iter()
        .filter_map(|&(original, name, id, listen)| {
            let s = originals.iter().find(|s| s.name == original)?;
            Some(s.clone().over_listener(name, id, listen))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codex::capabilities::Capabilities;

    #[test]
    fn every_twin_runs_its_original_over_a_listener_it_needs() {
        let twins = scenarios();
        let names = TWINS.map(|(_, name, _, _)| name);
        assert_eq!(twins.len(), names.len(), "an original is missing");
        for (twin, name) in twins.iter().zip(names) {
            assert_eq!(twin.name, name);
            let want = if name.ends_with("_ws_listener") {
                Listen::WebSocket
            } else {
                Listen::Unix
            };
            assert_eq!(twin.listen, want);
            assert!(twin.golden == Default::default(), "{name} keeps no golden");
            let refused = (twin.applies)(&Capabilities::default()).unwrap_err();
            assert!(refused.contains("app-server"), "{name}: {refused}");
        }
    }
}
