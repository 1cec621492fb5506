//! Which of an integration's uses (a `surface check --uses FILE`) a run's behaviour
//! scenarios exercised, and which only the schema checks. Read from a run's
//! `results.json` (`run --report DIR`): per use, the scenarios of the column of codex B that
//! sent or received its method. A shard's report is refused: the uses its other shards
//! exercised would be called schema-checked only.
//!
//! ```text
//! behaviour coverage in out/ (codex-0.171.0): 2 of 3 uses exercised by a scenario
//!   = line 2: request thread/start: A1 plain_turn, A2 streaming_deltas, +40 more
//!   ? line 4: request thread/rollback: only schema-checked (no scenario of the run used it)
//! ```
//!
//! Coverage is per method: the fields a use names are checked against the schema only. The
//! launch uses (`feature`, `flag`, `config`, `package`) are left out: no scenario exchanges
//! them as messages; `surface check` judges them on the binaries.

use anyhow::bail;

use crate::codex::surface::Use;
use crate::report::coverage::exercised_by;
use crate::report::matrix::Matrix;

/// How many scenarios a line names before `+N more`.
const NAMED: usize = 3;

/// One use and the scenarios that exercised its method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UseCoverage<'a> {
    /// The use.
    pub use_: &'a Use,
    /// (catalogue id, name) of each scenario of the column that exercised it, in row order.
    pub by: Vec<(&'a str, &'a str)>,
}

/// The uses as the column of codex `version` in `matrix` exercised them, with that
/// column's label. An error names the columns there are when none is of `version`.
pub fn of<'a>(
    matrix: &'a Matrix,
    version: &str,
    uses: &'a [Use],
) -> anyhow::Result<(&'a str, Vec<UseCoverage<'a>>)> {
    if let Some(shard) = matrix.shard {
        // Its other shards' scenarios are not in it: every use they exercised would be
        // called schema-checked only.
        bail!(
            "the run is shard {shard} of a split run: the other shards' scenarios are not in \
             it; join them with `codex-parity merge DIR... --report MERGED` and give MERGED"
        );
    }
    let Some(column) = matrix.columns.iter().find(|c| c.version == version) else {
        let have: Vec<&str> = matrix.columns.iter().map(|c| c.version.as_str()).collect();
        bail!(
            "the run has no column of codex {version} (it has {}): run `codex-parity run \
             --codex-version {version} --report DIR` first",
            have.join(", ")
        );
    };
    let label = column.label.as_str();
    let list = uses
        .iter()
        .filter(|u| !u.kind.is_launch())
        .map(|u| UseCoverage {
            use_: u,
            by: exercised_by(matrix, label, u.kind, &u.method),
        })
        .collect();
    Ok((label, list))
}

/// The text `surface check` prints under its changes: a summary line, then one line per
/// use, `=` exercised (naming up to three scenarios) or `?` only schema-checked.
pub fn render(source: &str, label: &str, list: &[UseCoverage<'_>]) -> String {
    let exercised = list.iter().filter(|c| !c.by.is_empty()).count();
    let mut text = format!(
        "behaviour coverage in {source} ({label}): {exercised} of {} uses exercised by a \
         scenario (per method; the fields are schema-checked)\n",
        list.len()
    );
    for c in list {
        let u = c.use_;
        let head = format!("line {}: {} {}", u.line, u.kind.word(), u.method);
        if c.by.is_empty() {
            text.push_str(&format!(
                "  ? {head}: only schema-checked (no scenario of the run used it)\n"
            ));
            continue;
        }
        let mut names: Vec<String> =
            c.by.iter()
                .take(NAMED)
                .map(|(id, name)| format!("{id} {name}"))
                .collect();
        if c.by.len() > NAMED {
            names.push(format!("+{} more", c.by.len() - NAMED));
        }
        text.push_str(&format!("  = {head}: {}\n", names.join(", ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codex::surface::parse_uses;
    use crate::report::matrix::tests::sample;

    #[test]
    fn names_the_scenarios_of_each_use_and_the_schema_only_ones() {
        let m = sample();
        let uses = parse_uses(
            "request initialize\nrequest turn/start params.input\n\
             server-request item/tool/call callId\n",
        )
        .unwrap();
        let (label, list) = of(&m, "0.171.0", &uses).unwrap();
        assert_eq!(label, "codex-0.171.0");
        assert_eq!(list[0].by, [("A1", "alpha"), ("B2", "gamma")]);
        assert!(list[1].by.is_empty());
        assert!(!list[2].by.is_empty());
        let text = render("out", label, &list);
        assert!(
            text.starts_with("behaviour coverage in out (codex-0.171.0): 2 of 3 uses"),
            "{text}"
        );
        assert!(
            text.contains("  = line 1: request initialize: A1 alpha, B2 gamma\n"),
            "{text}"
        );
        assert!(
            text.contains("  ? line 2: request turn/start: only schema-checked"),
            "{text}"
        );
    }

    #[test]
    fn a_version_the_run_did_not_have_is_an_error_naming_its_columns() {
        let m = sample();
        let uses = parse_uses("request initialize\n").unwrap();
        let e = of(&m, "0.999.0", &uses).unwrap_err().to_string();
        assert!(e.contains("no column of codex 0.999.0"), "{e}");
        assert!(e.contains("0.171.0"), "{e}");
    }

    #[test]
    fn a_shard_is_no_run_whose_coverage_can_be_told() {
        let mut m = sample();
        m.shard = Some("1/2".parse().unwrap());
        let uses = parse_uses("request initialize\n").unwrap();
        let e = of(&m, "0.171.0", &uses).unwrap_err().to_string();
        assert!(e.contains("shard 1/2 of a split run"), "{e}");
    }

    #[test]
    fn more_than_three_scenarios_are_counted() {
        let uses = parse_uses("request initialize\n").unwrap();
        let by = vec![
            ("A1", "a"),
            ("A2", "b"),
            ("A3", "c"),
            ("A4", "d"),
            ("A5", "e"),
        ];
        let list = [UseCoverage { use_: &uses[0], by }];
        let text = render("out", "codex-x", &list);
        assert!(text.contains(": A1 a, A2 b, A3 c, +2 more\n"), "{text}");
    }
}
