//! What a codex release's npm package holds: every file of `@openai/codex@VERSION-PLATFORM`
//! (paths relative to the package root, `package/` left out), and the package's own descriptor
//! `codex-package.json` when it ships one (from 0.133.0: `entrypoint`, `resourcesDir`, …).
//!
//! The listing is read while a release is installed (the whole tarball is read then anyway)
//! and kept in its `install.json`; an install made before that is listed again from the
//! registry once, when a surface card needs it (`crate::codex::install::package_listing`).
//! An integrator's launcher that builds a path inside the package (`vendor/<triple>/codex/codex`
//! before 0.133.0, `vendor/<triple>/bin/codex` after) is checked against this list.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The file name of the package's descriptor.
pub const DESCRIPTOR: &str = "codex-package.json";

/// A file smaller than this is not taken for a program codex starts (scripts and small
/// helpers are): the companions [`PackageListing::companions`] reports are native binaries.
const COMPANION_MIN_BYTES: u64 = 1024 * 1024;

/// One regular file of the package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageFile {
    /// Its path relative to the package root (`vendor/x86_64-unknown-linux-musl/bin/codex`).
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Whether any execute bit is set in the tarball.
    pub executable: bool,
}

/// Every file of one platform package, and its descriptor.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageListing {
    /// The npm spec it was read from (`@openai/codex@0.171.0-linux-x64`).
    pub spec: String,
    /// The regular files, sorted by path.
    pub files: Vec<PackageFile>,
    /// `codex-package.json` and where it is, when the package ships one.
    pub descriptor: Option<Descriptor>,
}

/// The package's `codex-package.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Descriptor {
    /// Its path in the package.
    pub path: String,
    /// Its content.
    pub content: Value,
}

impl PackageListing {
    /// Adds a file seen in the tarball at `path` (a leading `package/` is dropped).
    pub fn add(&mut self, path: &str, size: u64, mode: u32) {
        let path = path.strip_prefix("package/").unwrap_or(path).to_string();
        self.files.push(PackageFile {
            path,
            size,
            executable: mode & 0o111 != 0,
        });
    }

    /// Sorts the files by path (the tarball's order is the packer's).
    pub fn finish(&mut self) {
        self.files.sort_by(|a, b| a.path.cmp(&b.path));
        self.files.dedup_by(|a, b| a.path == b.path);
    }

    /// Whether the package holds a file at `path` (relative to the package root; a leading
    /// `package/` or `./` is ignored).
    pub fn contains(&self, path: &str) -> bool {
        let path = normalize(path);
        self.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .is_ok()
    }

    /// The native codex binary: the descriptor's `entrypoint` (relative to the descriptor's
    /// directory) when there is one, else the largest executable named `codex`.
    pub fn entrypoint(&self) -> Option<String> {
        if let Some(d) = &self.descriptor
            && let Some(entry) = d.content.get("entrypoint").and_then(Value::as_str)
        {
            let dir = d.path.rsplit_once('/').map_or("", |(dir, _)| dir);
            return Some(if dir.is_empty() {
                entry.to_string()
            } else {
                format!("{dir}/{entry}")
            });
        }
        self.files
            .iter()
            .filter(|f| f.path.rsplit('/').next() == Some("codex"))
            .max_by_key(|f| f.size)
            .map(|f| f.path.clone())
    }

    /// Native binaries besides the entrypoint that sit in its directory (codex starts them
    /// as child processes, e.g. `codex-code-mode-host` from 0.144.0). The descriptor names
    /// only the entrypoint, so a launcher that copies just that file loses them.
    pub fn companions(&self) -> Vec<String> {
        let Some(entry) = self.entrypoint() else {
            return Vec::new();
        };
        let dir = entry.rsplit_once('/').map_or("", |(d, _)| d);
        self.files
            .iter()
            .filter(|f| f.executable && f.size >= COMPANION_MIN_BYTES && f.path != entry)
            .filter(|f| f.path.rsplit_once('/').map_or("", |(d, _)| d) == dir)
            .map(|f| f.path.clone())
            .collect()
    }

    /// The paths, for diffs.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|f| f.path.as_str())
    }
}

/// `path` without a leading `./` or `package/`.
pub fn normalize(path: &str) -> &str {
    let path = path.trim_start_matches("./");
    path.strip_prefix("package/").unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn listing(descriptor: bool) -> PackageListing {
        let mut l = PackageListing::default();
        let v = "vendor/x86_64-unknown-linux-musl";
        l.add("package/package.json", 400, 0o644);
        if descriptor {
            l.add(&format!("package/{v}/bin/codex"), 300 << 20, 0o755);
            l.add(
                &format!("package/{v}/bin/codex-code-mode-host"),
                46 << 20,
                0o755,
            );
            l.add(
                &format!("package/{v}/codex-resources/bwrap"),
                2 << 20,
                0o755,
            );
            l.add(&format!("package/{v}/codex-package.json"), 200, 0o644);
            l.descriptor = Some(Descriptor {
                path: format!("{v}/codex-package.json"),
                content: json!({"entrypoint": "bin/codex", "layoutVersion": 1}),
            });
        } else {
            l.add(&format!("package/{v}/codex/codex"), 221 << 20, 0o755);
            l.add(&format!("package/{v}/path/rg"), 5 << 20, 0o755);
        }
        l.finish();
        l
    }

    #[test]
    fn the_entrypoint_comes_from_the_descriptor_else_the_largest_codex() {
        let new = listing(true);
        let entry = "vendor/x86_64-unknown-linux-musl/bin/codex";
        assert_eq!(new.entrypoint().as_deref(), Some(entry));
        assert!(new.contains(entry) && new.contains(&format!("./package/{entry}")));
        assert!(!new.contains("vendor/x86_64-unknown-linux-musl/codex/codex"));
        assert_eq!(
            new.companions(),
            ["vendor/x86_64-unknown-linux-musl/bin/codex-code-mode-host"]
        );
        let old = listing(false);
        assert_eq!(
            old.entrypoint().as_deref(),
            Some("vendor/x86_64-unknown-linux-musl/codex/codex")
        );
        assert!(old.companions().is_empty());
    }
}
