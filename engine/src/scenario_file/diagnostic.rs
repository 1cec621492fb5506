//! Where a scenario file is wrong: `file:line:column: message`, the message saying what
//! was expected and what was found. Positions come from the TOML parser's byte spans,
//! narrowed to the offending text when the message names it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One problem in one scenario file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// What was expected and what was found.
    pub message: String,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.path.display(),
            self.line,
            self.column,
            self.message
        )
    }
}

/// Every problem found in a set of scenario files (all files are read before reporting).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError(pub Vec<FileError>);

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self.0.iter().map(ToString::to_string).collect();
        write!(
            f,
            "{} problem(s) in scenario files (nothing was run):\n{}",
            self.0.len(),
            lines.join("\n")
        )
    }
}

impl std::error::Error for LoadError {}

/// A scenario file's text, for turning byte offsets into lines and columns.
#[derive(Debug, Clone)]
pub struct Source {
    /// The file.
    pub path: PathBuf,
    /// Its text.
    pub text: Arc<str>,
}

impl Source {
    /// A source named `path` holding `text`.
    pub fn new(path: &Path, text: &str) -> Source {
        Source {
            path: path.to_path_buf(),
            text: Arc::from(text),
        }
    }

    /// 1-based line and column of byte `offset`.
    pub fn position(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let before = self.text.get(..offset).unwrap_or("");
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before.get(line_start..).unwrap_or("").chars().count() + 1;
        (line, column)
    }

    /// An error at byte `offset`.
    pub fn error_at(&self, offset: usize, message: impl Into<String>) -> FileError {
        let (line, column) = self.position(offset);
        FileError {
            path: self.path.clone(),
            line,
            column,
            message: message.into(),
        }
    }

    /// An error in the byte range `span`, placed at the first `needle` inside it when there
    /// is one (the key or value the message is about), else at the range's start.
    pub fn error_in(
        &self,
        span: &std::ops::Range<usize>,
        needle: Option<&str>,
        message: impl Into<String>,
    ) -> FileError {
        let span = self.section(span);
        let inside = self.text.get(span.clone()).unwrap_or("");
        let offset = needle
            .filter(|n| !n.is_empty())
            .and_then(|n| inside.find(n))
            .map_or(span.start, |i| span.start + i);
        self.error_at(offset, message)
    }

    /// The table `span` starts: to the next table header (a line starting with `[`) or the
    /// end of the file (the parser's span of an array-of-tables entry may be its header).
    pub fn section(&self, span: &std::ops::Range<usize>) -> std::ops::Range<usize> {
        let from = span.end.min(self.text.len());
        let end = self
            .text
            .get(from..)
            .and_then(|rest| rest.find("\n["))
            .map_or(self.text.len(), |i| from + i + 1);
        span.start..end.max(span.end)
    }

    /// `file:line:column` of byte `offset`, for messages at run time.
    pub fn place(&self, offset: usize) -> String {
        let (line, column) = self.position(offset);
        format!("{}:{line}:{column}", self.path.display())
    }
}

/// The first `` `name` `` a serde message quotes as what was found (e.g. the unknown field
/// or variant), to place the error on it.
pub fn quoted_found(message: &str) -> Option<&str> {
    let start = message.find('`')? + 1;
    let end = start + message[start..].find('`')?;
    Some(&message[start..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_lines_and_columns() {
        let s = Source::new(Path::new("a.toml"), "x = 1\n[[step]]\ndo = \"trun\"\n");
        assert_eq!(s.position(0), (1, 1));
        assert_eq!(s.position(6), (2, 1));
        let e = s.error_in(&(6..26), Some("trun"), "unknown");
        assert_eq!(e.to_string(), "a.toml:3:7: unknown");
        assert_eq!(
            quoted_found("unknown variant `trun`, expected one of `turn`"),
            Some("trun")
        );
    }
}
