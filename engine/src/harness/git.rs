//! Git fixtures for scenarios: a repository with one commit, a worktree on a new branch,
//! the check that a directory is outside any repository, and the `.git` entries above a
//! directory (which some codex versions take for a repository even where git does not).
//! Git runs without the user's or the system's configuration, so the results do not depend
//! on the machine.

use std::path::Path;

use anyhow::{Context, bail};

/// Runs `git -C dir ARGS` and returns its trimmed stdout; fails with its stderr.
pub async fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = tokio::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "codex-parity")
        .env("GIT_AUTHOR_EMAIL", "codex-parity@example.invalid")
        .env("GIT_COMMITTER_NAME", "codex-parity")
        .env("GIT_COMMITTER_EMAIL", "codex-parity@example.invalid")
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("running git {} in {}", args.join(" "), dir.display()))?;
    if !output.status.success() {
        bail!(
            "git {} in {} failed ({}): {}",
            args.join(" "),
            dir.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// Makes `dir` a git repository on branch `main` with one commit (a `README.md`); returns
/// the commit's sha.
pub async fn init_repository(dir: &Path) -> anyhow::Result<String> {
    git(dir, &["init", "-q", "-b", "main"]).await?;
    let readme = dir.join("README.md");
    std::fs::write(&readme, "codex-parity fixture repository\n")
        .with_context(|| format!("writing {}", readme.display()))?;
    git(dir, &["add", "README.md"]).await?;
    git(dir, &["commit", "-q", "-m", "initial commit"]).await?;
    git(dir, &["rev-parse", "HEAD"]).await
}

/// `git -C repo worktree add -b branch path`.
pub async fn add_worktree(repo: &Path, branch: &str, path: &Path) -> anyhow::Result<()> {
    let path = path
        .to_str()
        .with_context(|| format!("{} is not UTF-8", path.display()))?;
    git(repo, &["worktree", "add", "-q", "-b", branch, path])
        .await
        .map(|_| ())
}

/// Fails unless `dir` is outside every git repository (`git rev-parse` fails there).
pub async fn ensure_outside_repository(dir: &Path) -> anyhow::Result<()> {
    match git(dir, &["rev-parse", "--show-toplevel"]).await {
        Err(_) => Ok(()),
        Ok(top) => bail!(
            "{} is inside the git repository {top}: the scenario needs a workspace outside any repository (set TMPDIR elsewhere)",
            dir.display()
        ),
    }
}

/// The `.git` entries (a directory, empty or not, or a file) in `dir` and every directory
/// above it, nearest first. Codex 0.131.0 takes any of them for a repository root, an empty
/// `/tmp/.git` included, although `git rev-parse` there fails.
pub fn markers_above(dir: &Path) -> Vec<std::path::PathBuf> {
    dir.ancestors()
        .map(|d| d.join(".git"))
        .filter(|g| g.symlink_metadata().is_ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_above_finds_empty_git_directories_nearest_first() {
        let root = tempfile::tempdir().unwrap();
        let inner = root.path().join("a").join("b");
        std::fs::create_dir_all(&inner).unwrap();
        let before = markers_above(&inner).len();
        std::fs::create_dir(root.path().join(".git")).unwrap();
        std::fs::write(root.path().join("a").join(".git"), "gitdir: elsewhere").unwrap();
        let found = markers_above(&inner);
        assert_eq!(found.len(), before + 2, "{found:?}");
        assert_eq!(found[0], root.path().join("a").join(".git"));
        assert_eq!(found[1], root.path().join(".git"));
    }

    #[tokio::test]
    async fn repository_worktree_and_outside_check() {
        let root = tempfile::tempdir().unwrap();
        let repo = root.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        ensure_outside_repository(&repo).await.unwrap();
        let sha = init_repository(&repo).await.unwrap();
        assert_eq!(sha.len(), 40, "{sha}");
        let err = ensure_outside_repository(&repo).await.unwrap_err();
        assert!(
            err.to_string().contains("inside the git repository"),
            "{err}"
        );
        let tree = root.path().join("tree");
        add_worktree(&repo, "fork-abc123", &tree).await.unwrap();
        assert_eq!(
            git(&tree, &["branch", "--show-current"]).await.unwrap(),
            "fork-abc123"
        );
        assert!(git(&repo, &["bogus-command"]).await.is_err());
    }
}
