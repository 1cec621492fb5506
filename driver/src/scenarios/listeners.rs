//! Group I, the app-server's listeners: the executor group (a plain turn, streaming, a
//! dynamic tool, a command approval, an interrupt) again with the client on a connection of
//! `codex app-server --listen ws://127.0.0.1:0` (I1–I5) and `--listen unix://PATH` (I6–I10)
//! instead of stdio, same assertions; and E4's concurrent turns on two threads over one
//! ws:// connection (I17). Each twin applies where the binary's `app-server
//! --help` lists the listener ([`Scenario::over_listener`]).

use crate::harness::scenario::Scenario;
use crate::harness::world::Listen;

/// The executor scenarios run again over each listener, with their twins' suffix.
const TWINNED: [&str; 5] = [
    "smoke_uses_mock_responses",
    "streaming_deltas",
    "dynamic_tool_round_trip",
    "approval_command_accept",
    "turn_interrupt_ends_turn_interrupted",
];

/// The twins' names, in [`TWINNED`]'s order: over ws:// then over unix://.
const TWIN_NAMES: [&str; 10] = [
    "smoke_uses_mock_responses_over_ws_listener",
    "streaming_deltas_over_ws_listener",
    "dynamic_tool_round_trip_over_ws_listener",
    "approval_command_accept_over_ws_listener",
    "turn_interrupt_ends_turn_interrupted_over_ws_listener",
    "smoke_uses_mock_responses_over_unix_listener",
    "streaming_deltas_over_unix_listener",
    "dynamic_tool_round_trip_over_unix_listener",
    "approval_command_accept_over_unix_listener",
    "turn_interrupt_ends_turn_interrupted_over_unix_listener",
];

/// The twins' ids, as [`TWIN_NAMES`].
const TWIN_IDS: [&str; 10] = ["I1", "I2", "I3", "I4", "I5", "I6", "I7", "I8", "I9", "I10"];

/// E4 (two threads' turns at once) over one ws:// connection: its twin's name and id.
const TWO_THREADS: (&str, &str, &str) = (
    "interleaved_turns_route_by_thread",
    "interleaved_turns_route_by_thread_over_ws_listener",
    "I17",
);

/// I1–I10: the executor group over each listener; I17: E4 over ws://.
pub fn scenarios() -> Vec<Scenario> {
    let originals: Vec<Scenario> = super::executor::scenarios()
        .into_iter()
        .chain(super::approvals::scenarios())
        .chain(super::interaction::scenarios())
        .chain(super::threads::scenarios())
        .filter(|s| TWINNED.contains(&s.name) || s.name == TWO_THREADS.0)
        .collect();
    let mut twins = Vec::new();
    for (k, listen) in [Listen::WebSocket, Listen::Unix].into_iter().enumerate() {
        for (i, name) in TWINNED.iter().enumerate() {
            let n = k * TWINNED.len() + i;
            if let Some(s) = originals.iter().find(|s| s.name == *name) {
                twins.push(s.clone().over_listener(TWIN_NAMES[n], TWIN_IDS[n], listen));
            }
        }
    }
    let (original, name, id) = TWO_THREADS;
    if let Some(s) = originals.iter().find(|s| s.name == original) {
        twins.push(s.clone().over_listener(name, id, Listen::WebSocket));
    }
    twins
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codex::capabilities::Capabilities;

    #[test]
    fn every_twin_runs_its_original_over_a_listener_it_needs() {
        let twins = scenarios();
        let names = TWIN_NAMES.iter().chain([&TWO_THREADS.1]);
        assert_eq!(twins.len(), TWIN_NAMES.len() + 1, "an original is missing");
        for (twin, &name) in twins.iter().zip(names) {
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
