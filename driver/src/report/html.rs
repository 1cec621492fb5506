//! `report.html`: one self-contained page (inline CSS, no script, no external asset) with
//! the matrix as a coloured grid and the report's sections below it.
//!
//! Each grid cell is a `<td class="cell STATUS" data-scenario=.. data-codex=..>`; a cell
//! that did not pass shows its reason on hover (`title`) and links to its expandable item
//! in the sections (failures open, the rest folded).

use std::fmt::Write;

use super::escape;
use super::matrix::Matrix;
use super::sections::{Section, anchor};
use crate::harness::outcome::OutcomeKind;

const STYLE: &str = "
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #1d1d1f; }
h1 { font-size: 1.5em; margin: 0 0 .3em; }
.meta { color: #555; margin: 0 0 1em; }
table.grid { border-collapse: collapse; }
.grid th, .grid td { border: 1px solid #ccc; padding: .3em .7em; text-align: left; }
.grid thead th { background: #f3f3f3; vertical-align: bottom; }
.grid thead small { font-weight: normal; color: #666; }
.grid tbody th { font-weight: normal; font-family: ui-monospace, monospace; }
.grid td.id { color: #666; }
.grid tfoot th, .grid tfoot td { background: #fafafa; font-size: .9em; }
.grid td.total { text-align: center; }
.cell { text-align: center !important; font-weight: 600; min-width: 5em; }
.cell a { color: inherit; text-decoration: none; display: block; }
.pass { background: #d8f0dc; color: #1b5e20; }
.drift { background: #fff0c2; color: #7a5200; }
.contra { background: #ffd9b3; color: #8a3b00; outline: 2px solid #e67300; outline-offset: -2px; }
.fail { background: #f9c9cc; color: #9b0d16; }
.na { background: #e6e6e6; color: #555; }
.missing { background: #fff; color: #aaa; }
.key { display: inline-block; padding: .1em .6em; margin-right: .4em; border-radius: 3px; font-weight: 600; }
nav ul { padding-left: 1.2em; }
section { margin-top: 2em; }
details { margin: .4em 0; border-left: 4px solid #ccc; padding: .2em .6em; }
section#failures details { border-color: #d32f2f; }
section#known-drift details { border-color: #f0b400; }
section#contradicting-drift details { border-color: #e67300; }
details:target { background: #fffbe6; }
summary { cursor: pointer; font-family: ui-monospace, monospace; }
pre { white-space: pre-wrap; word-break: break-word; margin: .4em 0; }
.none { color: #666; font-style: italic; }
";

/// The matrix and sections as one HTML page.
pub fn render(matrix: &Matrix, sections: &[Section]) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str("<title>codex-parity report</title>\n<style>");
    out.push_str(STYLE);
    out.push_str("</style>\n</head>\n<body>\n<h1>codex-parity report</h1>\n");
    let _ = write!(
        out,
        "<p class=\"meta\">{} scenario(s) on {}",
        matrix.rows.len(),
        escape(
            &matrix
                .columns
                .iter()
                .map(|c| c.label.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    );
    if let Some(shard) = matrix.shard {
        let _ = write!(
            out,
            "; shard {shard}: {} of {} cells (<code>codex-parity merge</code> joins the shards)",
            matrix.entries.len(),
            matrix.rows.len() * matrix.columns.len()
        );
    }
    out.push_str(".</p>\n<p class=\"legend\">");
    let legend = OutcomeKind::ALL.iter().map(|k| {
        let what = match k {
            OutcomeKind::Passed => "behaves as the catalogue says",
            OutcomeKind::Drift => "differs in a detail as this version's baseline expects",
            OutcomeKind::Contradicts => {
                "differs as the baseline expects, and the difference contradicts the scenario's claim"
            }
            OutcomeKind::Failed => "does not behave as expected",
            OutcomeKind::NotApplicable => "the binary cannot run it",
        };
        (k.class(), k.word(), what)
    });
    for (class, word, what) in legend.chain([("missing", "–", "no result")]) {
        let _ = write!(
            out,
            "<span class=\"key {class}\" title=\"{what}\">{word}</span>"
        );
    }
    out.push_str("</p>\n");
    grid(&mut out, matrix);
    out.push_str("<nav>\n<ul>\n");
    for s in sections {
        let _ = writeln!(
            out,
            "<li><a href=\"#{}\">{}</a> ({})</li>",
            escape(&s.id),
            escape(&s.title),
            s.items.len()
        );
    }
    out.push_str("</ul>\n</nav>\n");
    for s in sections {
        section(&mut out, s);
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn grid(out: &mut String, matrix: &Matrix) {
    out.push_str("<table class=\"grid\" id=\"matrix\">\n<thead>\n<tr><th>scenario</th><th>id</th>");
    for c in &matrix.columns {
        let _ = write!(
            out,
            "<th>{}<br><small>{}</small></th>",
            escape(&c.label),
            escape(&c.version)
        );
    }
    out.push_str("</tr>\n</thead>\n<tbody>\n");
    for (row, cells) in matrix.rows.iter().zip(matrix.grid()) {
        let _ = write!(
            out,
            "<tr><th title=\"{}\">{}</th><td class=\"id\">{}</td>",
            escape(&row.summary),
            escape(&row.name),
            escape(&row.id)
        );
        for (column, cell) in matrix.columns.iter().zip(cells) {
            let (class, word) = match cell.map(|e| e.outcome.kind()) {
                None => ("missing", "–"),
                Some(kind) => (kind.class(), kind.word()),
            };
            let title = match cell {
                None => "no result".to_string(),
                Some(e) => e.outcome.detail().unwrap_or_else(|| "passed".into()),
            };
            let _ = write!(
                out,
                "<td class=\"cell {class}\" data-scenario=\"{}\" data-codex=\"{}\" title=\"{}\">",
                escape(&row.name),
                escape(&column.label),
                escape(&title)
            );
            match cell.and_then(anchor) {
                Some(anchor) => {
                    let _ = write!(out, "<a href=\"#{}\">{word}</a>", escape(&anchor));
                }
                None => out.push_str(word),
            }
            out.push_str("</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n<tfoot>\n");
    for (name, counts) in matrix.total_rows() {
        let _ = write!(out, "<tr><th>{name}</th><td></td>");
        for n in counts {
            let _ = write!(out, "<td class=\"total\">{n}</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tfoot>\n</table>\n");
}

fn section(out: &mut String, s: &Section) {
    let _ = write!(
        out,
        "<section id=\"{}\">\n<h2>{}</h2>\n<p>{}</p>\n",
        escape(&s.id),
        escape(&s.title),
        escape(&s.intro)
    );
    if s.items.is_empty() {
        out.push_str("<p class=\"none\">None.</p>\n");
    }
    let open = if s.id == "failures" { " open" } else { "" };
    for item in &s.items {
        let id = item
            .anchor
            .as_ref()
            .map(|a| format!(" id=\"{}\"", escape(a)))
            .unwrap_or_default();
        let first = item.text.lines().next().unwrap_or("");
        let _ = writeln!(
            out,
            "<details{id}{open}><summary>{}: {}</summary><pre>{}</pre></details>",
            escape(&item.title),
            escape(first),
            escape(&item.text)
        );
    }
    out.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::outcome::Outcome;
    use crate::report::matrix::tests::sample;
    use crate::report::sections::{Item, standard};

    #[test]
    fn contradicting_drift_has_its_own_colour_and_section() {
        let mut m = sample();
        m.entries[4].outcome =
            Outcome::Contradicts(vec![crate::harness::outcome::KnownDrift::with_reason(
                "the goal stays active",
                true,
            )]);
        let html = render(&m, &standard(&m));
        assert!(html.contains(".contra {"), "a style of its own");
        assert!(html.contains(
            "<td class=\"cell contra\" data-scenario=\"gamma\" data-codex=\"codex-0.171.0\" \
             title=\"contradicts the claim: test.key = &quot;seen&quot;: the goal stays active (as seen)\"><a href=\"#contra-gamma-codex-0_171_0\">CONTRA</a></td>"
        ), "{html}");
        assert!(html.contains("<section id=\"contradicting-drift\">"));
        assert!(html.contains("<details id=\"contra-gamma-codex-0_171_0\""));
    }

    #[test]
    fn one_cell_per_scenario_and_binary_with_links_to_reasons() {
        let m = sample();
        let html = render(&m, &standard(&m));
        assert_eq!(html.matches("<td class=\"cell ").count(), 6);
        assert_eq!(html.matches("<td class=\"cell missing\"").count(), 1);
        assert!(html.contains(
            "<td class=\"cell fail\" data-scenario=\"alpha\" data-codex=\"codex-0.171.0\" \
             title=\"expected &quot;a&quot; &lt;b&gt; &amp; &#39;c&#39;\nsecond line\">\
             <a href=\"#fail-alpha-codex-0_171_0\">FAIL</a></td>"
        ));
        assert!(html.contains("<details id=\"fail-alpha-codex-0_171_0\" open>"));
        assert!(html.contains("<details id=\"na-beta-codex-0_131_0\"><summary>"));
        assert!(html.contains("<section id=\"known-drift\">"));
        // Self-contained: no reference to anything outside the file.
        for external in [
            "<script", "<link", "src=", "http://", "https://", "@import", "url(",
        ] {
            assert!(!html.contains(external), "{external}");
        }
    }

    #[test]
    fn extra_sections_are_rendered_and_escaped() {
        let m = sample();
        let mut sections = standard(&m);
        sections.push(Section {
            id: "schema-drift".into(),
            title: "Schema drift".into(),
            intro: "Methods added or removed between versions.".into(),
            items: vec![Item {
                anchor: None,
                title: "thread/goal/set <new>".into(),
                text: "added in codex-0.171.0".into(),
            }],
        });
        let html = render(&m, &sections);
        assert!(html.contains("<li><a href=\"#schema-drift\">Schema drift</a> (1)</li>"));
        assert!(
            html.contains("<summary>thread/goal/set &lt;new&gt;: added in codex-0.171.0</summary>")
        );
    }
}
