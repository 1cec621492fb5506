//! The registry: every parity scenario, in catalogue order. The same list feeds the test
//! harness and `codex-parity run`. Each group declares its own scenarios in its file
//! (`scenarios()`); adding a scenario to a group touches only that file.

use crate::harness::scenario::Scenario;
use crate::scenarios;

/// Every scenario, in catalogue order.
pub fn registry() -> Vec<Scenario> {
    [
        scenarios::executor::scenarios,
        scenarios::goal::scenarios,
        scenarios::goal_continuation::scenarios,
        scenarios::history::scenarios,
        scenarios::files::scenarios,
        scenarios::request_shape::scenarios,
        scenarios::lifecycle::scenarios,
        scenarios::threads::scenarios,
        scenarios::dynamic_tools::scenarios,
        scenarios::interaction::scenarios,
        scenarios::approvals::scenarios,
        scenarios::reasoning::scenarios,
        scenarios::fault::scenarios,
        scenarios::protocol::scenarios,
        scenarios::websocket::scenarios,
        scenarios::websocket_fallback::scenarios,
        scenarios::websocket_faults::scenarios,
        scenarios::sse_stream::scenarios,
        scenarios::rate_limits::scenarios,
        scenarios::compaction::scenarios,
        scenarios::overrides::scenarios,
        scenarios::user_input::scenarios,
        scenarios::thread_lifecycle::scenarios,
        scenarios::plan_items::scenarios,
        scenarios::mcp::scenarios,
        scenarios::review::scenarios,
        scenarios::paged_history::scenarios,
        scenarios::settings_updates::scenarios,
        scenarios::startup_reads::scenarios,
        scenarios::thread_metadata::scenarios,
        scenarios::server_requests::scenarios,
        scenarios::auth_refresh::scenarios,
        scenarios::mcp_elicitation::scenarios,
        scenarios::model_notices::scenarios,
        scenarios::listeners::scenarios,
        scenarios::listener_clients::scenarios,
        scenarios::app_server_faults::scenarios,
        scenarios::configuration::scenarios,
        scenarios::exec::scenarios,
        scenarios::exec_flags::scenarios,
        scenarios::performance::scenarios,
    ]
    .into_iter()
    .flat_map(|group| group())
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codex::binaries::CodexBinary;
    use crate::drift::{golden, golden_transcript};
    use crate::harness::baseline::Baselines;
    use crate::harness::expectations::Expectations;
    use crate::harness::scenario::test_name;
    use crate::harness::shard::Shard;
    use crate::harness::world::Transport;

    fn names() -> Vec<&'static str> {
        registry().iter().map(|s| s.name).collect()
    }

    #[test]
    fn names_are_unique_and_snake_case() {
        // No count to keep by hand: the catalogue document (docs/scenarios.md, checked by
        // tests/docs.rs) is generated from this registry.
        let mut names = names();
        assert!(!names.is_empty());
        names.sort();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "duplicate scenario names");
        for n in names {
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{n}"
            );
        }
    }

    #[test]
    fn test_names_carry_the_version() {
        let s = &registry()[0];
        let b = CodexBinary {
            path: "/x/codex".into(),
            version: "0.171.0".into(),
        };
        assert_eq!(test_name(s, &b), format!("{}[codex-0.171.0]", s.name));
    }

    /// The scenarios that declare golden expectations of `kind`.
    fn golden_ones(requests: bool) -> Vec<&'static str> {
        registry()
            .iter()
            .filter(|s| {
                if requests {
                    s.golden.requests
                } else {
                    s.golden.transcript
                }
            })
            .map(|s| s.name)
            .collect()
    }

    #[test]
    fn every_golden_file_belongs_to_a_scenario_that_declares_it_and_the_comparison_set_is_covered()
    {
        let e = Expectations::Compiled;
        for (kind, requests) in [(golden::KIND, true), (golden_transcript::KIND, false)] {
            let declared = golden_ones(requests);
            assert!(!declared.is_empty(), "no scenario declares {kind}");
            for file in crate::harness::expectations::compiled_files() {
                let Some(rest) = file.strip_prefix(&format!("{kind}/")) else {
                    continue;
                };
                let scenario = rest.rsplit('/').next().unwrap().trim_end_matches(".json");
                assert!(
                    declared.contains(&scenario),
                    "{file}: no scenario declares it"
                );
                let doc: serde_json::Value =
                    serde_json::from_str(&e.read(file).unwrap().unwrap()).unwrap();
                assert_eq!(doc["scenario"], scenario, "{file}");
                let version = rest.split('/').next().unwrap();
                assert_eq!(doc["codex"], version, "{file}");
            }
            let set = crate::codex::versions::load().unwrap();
            for version in set.compare.iter().chain([&set.pinned]) {
                for s in &declared {
                    assert!(
                        e.covering(kind, s, version).unwrap().is_some(),
                        "no {kind} file of {s} covers {version}"
                    );
                }
            }
        }
        // A WebSocket twin keeps no golden expectation of its own.
        assert!(
            registry()
                .iter()
                .all(|s| s.transport == Transport::Http || s.golden == Default::default())
        );
    }

    #[test]
    fn the_repository_baselines_name_registered_scenarios() {
        let all = Baselines::builtin().unwrap();
        let names = names();
        for e in &all.entries {
            assert!(
                names.contains(&e.scenario.as_str()),
                "{}: {}",
                all.source,
                e.scenario
            );
        }
    }

    fn cells() -> Vec<(&'static str, String)> {
        let labels = ["codex-0.131.0", "codex-0.161.0", "codex-0.171.0"];
        names()
            .into_iter()
            .flat_map(|s| labels.iter().map(move |l| (s, l.to_string())))
            .collect()
    }

    #[test]
    fn shards_partition_the_cells() {
        let cells = cells();
        for count in 1..=5 {
            let shards: Vec<Shard> = (1..=count).map(|index| Shard { index, count }).collect();
            for (scenario, label) in &cells {
                let owners = shards
                    .iter()
                    .filter(|s| s.contains(scenario, label))
                    .count();
                assert_eq!(
                    owners, 1,
                    "{scenario}[{label}] in {owners} of {count} shards"
                );
            }
        }
    }

    #[test]
    fn shards_of_the_real_matrix_are_roughly_even() {
        let cells = cells();
        for count in 2..=4u32 {
            let fair = cells.len() / count as usize;
            for index in 1..=count {
                let shard = Shard { index, count };
                let n = cells.iter().filter(|(s, l)| shard.contains(s, l)).count();
                assert!(
                    n * 2 >= fair,
                    "shard {shard} has {n} of {} cells (fair share {fair})",
                    cells.len()
                );
            }
        }
    }
}
