//! The scenario catalogue as a document: `docs/scenarios.md` is [`markdown`] of the
//! registry, printed by `codex-parity list --markdown`. A test fails when the committed file
//! is stale, so the document never says something the registry does not.

use std::fmt::Write;

use crate::harness::scenario::Scenario;

/// The catalogue groups: id prefix, title, what the group proves.
pub const GROUPS: [(&str, &str, &str); 12] = [
    (
        "A",
        "Executor and turn parity",
        "What an executor built on `codex app-server` relies on in every turn: the request \
         reaches the model, streamed deltas arrive in order, usage and per-turn overrides \
         cross the boundary, the final response is chosen by phase, retries stay invisible \
         until the terminal failure, dynamic tools round-trip.",
    ),
    (
        "B",
        "Goal operations",
        "Thread goals: set, get, clear, pause and resume; token budgets; autonomous \
         continuations and how they end (`update_goal`, budget exhaustion, failures, \
         interrupts); the statuses each version knows.",
    ),
    (
        "C",
        "Fork and resume carry history",
        "A thread resumed in a new process, forked, or cloned from its rollout file into a \
         fresh home or worktree still knows what was said; unknown threads are refused.",
    ),
    (
        "D",
        "File changes",
        "Files the model creates, overwrites or deletes are reported as file changes (in a \
         plain directory and in a git repository); a plain shell write is not.",
    ),
    (
        "E",
        "Protocol, requests and faults",
        "The model request's shape per version (golden requests), the turn lifecycle, \
         interleaved threads, thread bookkeeping, dynamic-tool edge cases, interrupt and \
         steer, approvals, image input, reasoning events, the failure matrix (E14) and the \
         protocol's basics.",
    ),
    (
        "F",
        "Transports, stream timing, compaction and rate limits",
        "The Responses WebSocket (warm-up, incremental frames, refused upgrades, closed \
         sockets), HTTP streams that stall, are cut mid-body or drip slowly, and rate-limit \
         headers: request and connection counts, the transport of each request, the retry \
         notices and the turn's outcome. F2 runs the executor group (A) again with the \
         WebSocket on (names ending in `_ws`, same assertions, and every model request must \
         have gone over the socket). Compaction: manual and automatic local compaction (the \
         summary request and what follows it) and remote compaction (v1 and v2).",
    ),
    (
        "G",
        "Turn settings, user input, thread lifecycle and items",
        "Per-turn overrides (cwd, model, effort, sandbox, approval policy) and structured \
         output: what reaches the model request and what outlives its turn. Asking the user \
         (`request_user_input`): answered, declined, unavailable outside plan mode, never \
         answered before an interrupt. A thread's lifecycle: unarchive, delete and rollback \
         where the schema has them, `thread/list` paging, search and order, loaded threads, \
         unsubscribe, metadata. Plan updates, web-search items and `command/exec` outside a \
         turn. MCP tools, hermetically: the project's scripted MCP server started from \
         `config.toml`, its tools offered, called, failing, interrupted, not starting, \
         crashing or answering garbage, and `mcpServerStatus/list`. Review mode on a git \
         workspace: uncommitted changes, a commit, a base branch, detached delivery and the \
         targets codex refuses.",
    ),
    (
        "H",
        "Paginated history, settings and the server requests integrators broke on",
        "Where integrations broke in the releases after 0.150: a thread in paginated \
         history mode (`thread/turns/list` and `thread/items/list` paged by cursor, \
         `thread/revert`, a fork before a turn, `thread/rollback` refused where it is, the \
         active-writer refusal), thread and turn settings updates and what reaches the next \
         model request, the reads a client makes at start-up, the server requests not asked \
         elsewhere (permissions approval, MCP elicitation, the ChatGPT token refresh, a \
         request withdrawn) and the model-side notifications a strict client may not know.",
    ),
    (
        "I",
        "The app-server's listeners, several clients and codex's own faults",
        "The app-server as integrators run it beside stdio: the executor group over \
         `--listen ws://` and `unix://`, initialize per connection, two clients on one \
         thread, a client that disconnects and one that comes back, `--ws-auth`, `/readyz`, \
         `/healthz` and the `Origin` refusal, the control socket's `proxy` and `daemon \
         version`; and codex failing on its side: killed mid-turn and resumed, its stdin \
         closed, a client that stops reading while requests pile up, the model server gone \
         mid-response.",
    ),
    (
        "J",
        "Configuration: config.toml, overrides, features and their refusals",
        "How the configuration an integrator launches codex with is taken, on the real \
         app-server: `approval_policy = \"on-failure\"` applied as `on-request` (in \
         config.toml and through `-c`) and refused as a `thread/start` param, `untrusted` \
         refused in the thread's config map, a type error soft in config.toml and hard \
         through `-c`, unknown keys warned about or refused by `--strict-config`, unknown \
         features refused by `--enable` and warned about under `[features]`, a legacy \
         feature alias and a retired feature, the legacy top-level `profile`, and \
         `config/value/write`'s validation. `codex-parity config check` judges an \
         integrator's own profile the same way (docs/config.md).",
    ),
    (
        "X",
        "`codex exec --json`",
        "The other surface CI bots and scripts parse: `codex exec --json` against the \
         sidecar, hermetic like every world. The JSONL event stream of a plain prompt, \
         streamed text, a shell command, a file change, model API failures, \
         `--output-schema`, `--output-last-message`, `exec resume`, attached images and \
         the git-repository check, with the exit status of each. The events are kept as a \
         transcript (kind `event`), so golden exec streams and `--transcript-diff` show \
         what changed from one version to the next.",
    ),
    (
        "P",
        "Performance on a big home",
        "How a release performs where integrators' histories are large: start-up, \
         `thread/list` (first page, all pages), `thread/read` with and without turns, \
         `thread/resume` and `thread/turns/list` of one rollout of 20,000 records, and the \
         first turn after resume, on homes of 1,000 and 10,000 threads made offline and \
         kept per release, in the legacy and (where the release migrates to it) the paginated \
         layout. Each measures wall time, codex's CPU time and peak memory as the median of \
         interleaved repetitions against a reference binary in the same run (the pinned \
         version unless `--perf-reference` names another), and fails when a median is over \
         the scenario's budget (1.5x) by more than a noise floor; growth with the home's \
         size is reported as an exponent. Run with `--filter P` only: the group takes \
         minutes, so the default run leaves it out (see docs/performance.md).",
    ),
];

/// The groups a run leaves out unless `--filter` selects them: they cost more than a minute
/// (group P measures on homes of thousands of threads, several minutes a release).
pub const OPT_IN: [&str; 1] = ["P"];

/// Whether `scenario` belongs to a group of [`OPT_IN`].
pub fn opt_in(scenario: &Scenario) -> bool {
    group_of(scenario.id).is_some_and(|(prefix, ..)| OPT_IN.contains(prefix))
}

/// The group an id belongs to (its leading letter), if it is a catalogue group.
pub fn group_of(id: &str) -> Option<&'static (&'static str, &'static str, &'static str)> {
    GROUPS.iter().find(|(prefix, ..)| id.starts_with(prefix))
}

/// `docs/scenarios.md`: every scenario of `scenarios`, grouped, with its id, test name,
/// time limit and what it proves.
pub fn markdown(scenarios: &[Scenario]) -> String {
    let mut out = String::from(
        "# Scenario catalogue\n\n\
         <!-- Generated by `codex-parity list --markdown > docs/scenarios.md`; a test fails \
         when this file is stale. Do not edit by hand. -->\n\n\
         Every parity scenario runs against the real `codex app-server` on each Codex \
         version of a run, in a world of its own (a fresh sidecar, `CODEX_HOME` and \
         workspace). A scenario that needs something a binary's protocol schema lacks is \
         *not applicable* on that binary, with the reason; a difference a version is known \
         for is *drift*, listed in `fixtures/expected/baselines.json` (see docs/baselines.md). Test names are \
         `NAME[codex-VERSION]`; `--filter` takes a name part, an id (`E14`) or a group \
         letter (`B`).\n",
    );
    let _ = writeln!(
        out,
        "\n{} scenarios in {} groups.",
        scenarios.len(),
        GROUPS.len()
    );
    for (prefix, title, about) in GROUPS {
        let members: Vec<&Scenario> = scenarios
            .iter()
            .filter(|s| s.id.starts_with(prefix))
            .collect();
        if members.is_empty() {
            continue;
        }
        let _ = write!(out, "\n## {prefix}. {title}\n\n{about}\n\n");
        out.push_str("| id | scenario | limit | what it proves |\n|---|---|---|---|\n");
        for s in members {
            let _ = writeln!(
                out,
                "| {} | `{}` | {} s | {} |",
                s.id,
                s.name,
                s.timeout.as_secs(),
                s.summary.replace('|', "\\|")
            );
        }
    }
    let strays: Vec<&Scenario> = scenarios
        .iter()
        .filter(|s| group_of(s.id).is_none())
        .collect();
    if !strays.is_empty() {
        out.push_str(
            "\n## Other\n\n| id | scenario | limit | what it proves |\n|---|---|---|---|\n",
        );
        for s in strays {
            let _ = writeln!(
                out,
                "| {} | `{}` | {} s | {} |",
                s.id,
                s.name,
                s.timeout.as_secs(),
                s.summary
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::registry;

    #[test]
    fn every_registered_scenario_is_in_a_group_and_listed_once() {
        let all = registry();
        let text = markdown(&all);
        for s in &all {
            assert!(
                group_of(s.id).is_some(),
                "{} ({}) has no group",
                s.name,
                s.id
            );
            assert_eq!(
                text.matches(&format!("`{}`", s.name)).count(),
                1,
                "{} listed once",
                s.name
            );
        }
        assert!(!text.contains("## Other"));
    }

    #[test]
    fn pipes_in_summaries_do_not_break_the_table() {
        let s = Scenario::new("x", "A99", "a | b", |_| Box::pin(async { Ok(()) }));
        let text = markdown(&[s]);
        assert!(text.contains("| A99 | `x` | 60 s | a \\| b |"), "{text}");
    }
}
