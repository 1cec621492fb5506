//! "Did you mean": the known word closest to a mistyped one (`thread/strat` ->
//! `thread/start`), for messages that name what the user wrote and what they most likely
//! meant.

/// The candidate closest to `word` by edit distance, when it is close enough to be a typo
/// of it: at most a third of the word's length, and at most 3 edits; `None` otherwise (and
/// for `word` itself, which is no suggestion).
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).clamp(1, 3);
    candidates
        .into_iter()
        .filter(|c| *c != word)
        .map(|c| (distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, c.len(), *c))
        .map(|(_, c)| c)
}

/// `" (did you mean X?)"` for the closest candidate, or nothing.
pub fn hint<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(word, candidates).map_or_else(String::new, |c| format!(" (did you mean {c}?)"))
}

/// The edit distance of two words (insertions, deletions, substitutions and swaps of two
/// neighbouring characters, each one edit).
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_word_and_strangers_find_none() {
        let methods = ["thread/start", "thread/read", "turn/start", "thread/list"];
        assert_eq!(closest("thread/strat", methods), Some("thread/start"));
        assert_eq!(closest("thread/stat", methods), Some("thread/start"));
        assert_eq!(closest("tpye", ["type", "id", "text"]), Some("type"));
        assert_eq!(closest("model/list", methods), None);
        assert_eq!(closest("thread/start", methods), None, "itself is no hint");
        assert_eq!(
            hint("streming_deltas", ["streaming_deltas"]),
            " (did you mean streaming_deltas?)"
        );
        assert_eq!(hint("x", ["streaming_deltas"]), "");
    }
}
