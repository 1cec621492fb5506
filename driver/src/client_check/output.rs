//! What COMMAND printed under a mutation that should not change it (a message doubled,
//! notifications reordered, an unknown field or notification, pauses), held against what it
//! printed under `none`. Exit 0 alone does not say a client coped: one that concatenates
//! doubled deltas blindly exits 0 and prints the text twice. Only stdout is compared; lines
//! matching `--ignore-output` (times, process ids) are left out of both sides.

use regex::Regex;

/// The longest part of a line a difference shows.
const SHOWN: usize = 120;

/// How `got` differs from `reference` (the `none` run's stdout), line by line, leaving out
/// the lines `ignore` matches; `None` when it does not.
pub fn difference(reference: &str, got: &str, ignore: &[Regex]) -> Option<String> {
    let (want, have) = (kept(reference, ignore), kept(got, ignore));
    if want == have {
        return None;
    }
    let at = want
        .iter()
        .zip(&have)
        .position(|(a, b)| a != b)
        .unwrap_or(want.len().min(have.len()));
    let what = match (want.get(at), have.get(at)) {
        (Some(w), Some(h)) => format!(
            "line {}: {} where `none` printed {}",
            at + 1,
            quoted(h),
            quoted(w)
        ),
        (None, Some(h)) => format!(
            "{} line(s) more than `none`, from line {}: {}",
            have.len() - want.len(),
            at + 1,
            quoted(h)
        ),
        (Some(w), None) => format!(
            "{} line(s) fewer than `none`, from line {}: {}",
            want.len() - have.len(),
            at + 1,
            quoted(w)
        ),
        (None, None) => "the same lines in another way".into(),
    };
    Some(format!("printed other output than with `none` ({what})"))
}

/// The lines of `text` that no pattern of `ignore` matches.
fn kept<'a>(text: &'a str, ignore: &[Regex]) -> Vec<&'a str> {
    text.lines()
        .filter(|l| !ignore.iter().any(|r| r.is_match(l)))
        .collect()
}

/// A line as a difference shows it: quoted, cut to [`SHOWN`] characters.
fn quoted(line: &str) -> String {
    let mut cut: String = line.chars().take(SHOWN).collect();
    if cut.len() < line.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubled_text_is_shown_and_ignored_lines_are_left_out() {
        let none = "final: Hello from the mock\n";
        let doubled = "final: Hello Hello from the mockfrom the mock\n";
        assert_eq!(
            difference(none, doubled, &[]).unwrap(),
            "printed other output than with `none` (line 1: \"final: Hello Hello from the \
             mockfrom the mock\" where `none` printed \"final: Hello from the mock\")"
        );
        assert_eq!(difference(none, none, &[]), None);
        let timed = |ms: u32| format!("took {ms} ms\nfinal: Hello from the mock\n");
        let ignore = [Regex::new("^took ").unwrap()];
        assert_eq!(difference(&timed(3), &timed(9), &ignore), None);
        assert!(difference(&timed(3), &timed(9), &[]).is_some());
        let more = difference(none, "final: Hello from the mock\nagain\n", &[]).unwrap();
        assert!(
            more.contains("1 line(s) more than `none`, from line 2: \"again\""),
            "{more}"
        );
        let fewer = difference(none, "", &[]).unwrap();
        assert!(fewer.contains("1 line(s) fewer"), "{fewer}");
        let long = "x".repeat(500);
        assert!(difference("", &long, &[]).unwrap().contains("xxx…\""));
    }
}
