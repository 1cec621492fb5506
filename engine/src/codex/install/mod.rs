//! Installing Codex CLI releases from npm into a per-user cache.
//!
//! `install(cache, "0.171.0", progress)` runs `npm pack @openai/codex@0.171.0-linux-x64` into a
//! temporary directory inside the cache, unpacks only the native binary from the tarball (the
//! regular file named `codex` larger than 10 MB: its place inside the package moved between
//! releases), checks `codex --version`, and moves it atomically to `<cache>/<VERSION>/codex` next
//! to a small `install.json`. A version is fetched once; later calls only re-run `--version` on the
//! cached binary.
//!
//! Concurrent installs of the same version (threads or processes) are serialised by a lock file
//! (`<cache>/.locks/<VERSION>.lock`, `flock`, released automatically if a process dies); every
//! install works in its own temporary directory and publishes the binary with a `rename`, so a
//! reader never sees a half-written `codex`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};

use crate::codex::binary::{self, CodexBinary};
use crate::codex::package::PackageListing;
use crate::codex::versions;

mod cache;
mod npm;
mod npm_cache;
mod progress;
mod prune;
mod releases;
mod unpack;

pub use cache::*;
pub use npm::*;
pub use progress::*;
pub use prune::*;
pub use releases::*;
pub use unpack::*;

/// The npm package that carries the Codex CLI.
pub const NPM_PACKAGE: &str = "@openai/codex";

/// The native binary is the regular file named `codex` strictly larger than this many bytes.
pub const MIN_BINARY_SIZE: u64 = 10 * 1024 * 1024;

/// Environment variable that overrides the cache root.
pub const CACHE_ENV: &str = "CODEX_PARITY_CACHE";

/// How long `npm pack` may run before it is considered stuck.
const NPM_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// How long to wait for another process that installs the same version.
const LOCK_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// How often progress is refreshed while downloading or unpacking.
const TICK: Duration = Duration::from_millis(250);

/// What `install.json` records next to a cached binary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallRecord {
    /// The version `--version` reported (equal to the requested one).
    pub version: String,
    /// The npm spec that was fetched.
    pub npm_spec: String,
    /// Path of the binary inside the package (e.g.
    /// `package/vendor/x86_64-unknown-linux-musl/bin/codex`).
    pub path_in_package: String,
    /// Size of the binary in bytes.
    pub binary_size: u64,
    /// Size of the downloaded tarball in bytes.
    pub tarball_size: u64,
    /// The tarball's SHA-1 as reported by npm, if it reported one.
    pub tarball_shasum: Option<String>,
    /// The tarball's subresource-integrity string as reported by npm, if it reported one.
    pub tarball_integrity: Option<String>,
    /// Install time, seconds since the Unix epoch.
    pub installed_at: u64,
    /// The cache layout this install follows ([`LAYOUT`]); 0 for installs that kept only the
    /// binary, which are made again.
    #[serde(default)]
    pub layout: u32,
    /// The package's resources kept beside the binary, relative to it (e.g.
    /// `codex-resources/bwrap`: codex sandboxes commands with the bubblewrap its package ships
    /// and checks its digest there, next to the executable).
    #[serde(default)]
    pub resources: Vec<String>,
    /// Every file of the package and its `codex-package.json`; `None` for installs made
    /// before codex-parity kept it (listed again from the registry when needed, see
    /// [`package_listing`]).
    #[serde(default)]
    pub package: Option<PackageListing>,
}

/// The cache layout: 1 keeps the binary and the package's bundled resources beside it.
pub const LAYOUT: u32 = 1;

/// The package resources codex looks for next to its executable, relative to the package's
/// `bin/` parent.
pub const RESOURCES: [&str; 1] = ["codex-resources/bwrap"];

/// How to run the installer; the defaults fetch from npm on this machine.
#[derive(Debug, Clone, Default)]
pub struct InstallOptions {
    /// The `npm` executable (default: `npm` found on `PATH`).
    pub npm: Option<PathBuf>,
    /// The platform build to fetch (default: this machine's).
    pub platform: Option<Platform>,
}

/// Returns the cached binary of `version`, installing it from npm first if needed.
pub async fn install(cache: &Cache, version: &str, progress: &dyn Progress) -> Result<CodexBinary> {
    install_with(cache, version, progress, &InstallOptions::default()).await
}

/// [`install`] with explicit options (another `npm`, another platform build). The release
/// is then held for as long as this process lives ([`keep_held`]): no other process's
/// prune removes a release a run is using, between its scenarios too.
pub async fn install_with(
    cache: &Cache,
    version: &str,
    progress: &dyn Progress,
    options: &InstallOptions,
) -> Result<CodexBinary> {
    let binary = install_unheld(cache, version, progress, options).await?;
    keep_held(cache, &binary.version);
    Ok(binary)
}

/// [`install_with`] without the hold (the install lock, when taken, is released at its end).
async fn install_unheld(
    cache: &Cache,
    version: &str,
    progress: &dyn Progress,
    options: &InstallOptions,
) -> Result<CodexBinary> {
    let latest;
    let version = if version == releases::LATEST {
        latest = match &options.npm {
            Some(npm) => releases::latest_release_with(npm).await?,
            None => releases::latest_release().await?,
        };
        eprintln!("codex-parity: latest is codex {latest} (npm's dist-tag)");
        latest.as_str()
    } else {
        version
    };
    versions::check_version(version)?;
    let platform = match options.platform {
        Some(p) => p,
        None => current_platform()?,
    };
    let spec = npm_package_spec_for(version, platform);
    if let Some(binary) = cache.cached(version).await {
        return Ok(binary);
    }
    let npm = match &options.npm {
        Some(npm) => npm.clone(),
        None => binary::find_on_path("npm".as_ref()).ok_or_else(|| {
            anyhow!(
                "cannot install Codex {version}: `npm` is not on PATH. Install Node.js and npm \
                 (https://nodejs.org), or pass an existing Codex binary with --codex-bin PATH (or CODEX_TEST_BINS)"
            )
        })?,
    };

    tokio::fs::create_dir_all(cache.root())
        .await
        .with_context(|| {
            format!(
                "cannot create the Codex cache directory {}",
                cache.root().display()
            )
        })?;
    let _lock = lock_version(cache, version, progress).await?;
    // Another process may have finished the same install while we waited.
    if let Some(binary) = cache.cached(version).await {
        return Ok(binary);
    }
    let target = cache.binary_path(version);
    if target.exists() {
        progress.message(&format!(
            "cached Codex {version} at {} is broken or from an older cache layout; reinstalling",
            target.display()
        ));
    }

    // We hold the version lock, so leftovers in this version's temp area belong to killed installs.
    let tmp_parent = cache.tmp_dir(version);
    let _ = tokio::fs::remove_dir_all(&tmp_parent).await;
    let started = Instant::now();
    let fetched = fetch(cache, version, &spec, &npm, platform, &tmp_parent, progress).await;
    // The temporary directory inside is gone by now (dropped on success and on error).
    let _ = std::fs::remove_dir(&tmp_parent);
    fetched?;

    // `fetch` ran this very file (before the rename) and checked its version.
    let binary = CodexBinary {
        path: std::path::absolute(&target)
            .with_context(|| format!("cannot make {} absolute", target.display()))?,
        version: version.to_owned(),
    };
    progress.message(&format!(
        "installed Codex {version} to {} in {:.1} s",
        target.display(),
        started.elapsed().as_secs_f64()
    ));
    mark_used(&cache.version_dir(version));
    enforce_cap(cache, version, progress)?;
    Ok(binary)
}

/// After an install: when `CODEX_PARITY_CACHE_MAX` is set and the cache is over it, removes
/// the least recently used releases (never `version`, nor one in use) and says which.
fn enforce_cap(cache: &Cache, version: &str, progress: &dyn Progress) -> Result<()> {
    let Some(cap) = cap_from_env()? else {
        return Ok(());
    };
    let pruned = prune(cache, Some(cap), &[version.to_string()])
        .with_context(|| format!("keeping the Codex cache under {CACHE_MAX_ENV}"))?;
    if pruned.removed.is_empty() && pruned.bytes_after <= cap {
        return Ok(());
    }
    for line in describe(&pruned) {
        progress.message(&format!("{CACHE_MAX_ENV}: {line}"));
    }
    Ok(())
}

/// Downloads, unpacks, verifies and publishes `version` (the caller holds the version lock).
/// Temporary files live in a fresh directory under `tmp_parent` and are removed before returning.
async fn fetch(
    cache: &Cache,
    version: &str,
    spec: &str,
    npm: &Path,
    platform: Platform,
    tmp_parent: &Path,
    progress: &dyn Progress,
) -> Result<()> {
    tokio::fs::create_dir_all(tmp_parent)
        .await
        .with_context(|| format!("cannot create {}", tmp_parent.display()))?;
    let tmp = tempfile::Builder::new()
        .prefix("install-")
        .tempdir_in(tmp_parent)
        .with_context(|| {
            format!(
                "cannot create a temporary directory in {}",
                tmp_parent.display()
            )
        })?;
    let (unpacked, packed, unpack_dir) = obtain(npm, spec, tmp.path(), progress).await?;
    let found = find_binary(&unpack_dir, Some(platform.triple))
        .with_context(|| format!("corrupt package {spec}"))?;
    set_executable(&found)?;
    let resources = bundled_resources(&found)?;
    let binary = binary::probe(&found)
        .await
        .with_context(|| format!("the codex binary inside {spec} does not run"))?;
    if binary.version != version {
        bail!(
            "version mismatch: installed {spec}, but its binary reports `codex-cli {}`; the package is not the \
             release it claims to be, so it was not cached. Run `npm view {NPM_PACKAGE} versions` to check the \
             version, or pass a binary with --codex-bin PATH",
            binary.version
        );
    }

    let record = InstallRecord {
        version: version.to_owned(),
        npm_spec: spec.to_owned(),
        path_in_package: found
            .strip_prefix(&unpack_dir)
            .unwrap_or(&found)
            .display()
            .to_string(),
        binary_size: std::fs::metadata(&found).map(|m| m.len()).unwrap_or(0),
        tarball_size: unpacked.compressed_bytes,
        tarball_shasum: packed.shasum,
        tarball_integrity: packed.integrity,
        installed_at: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        layout: LAYOUT,
        resources: resources.iter().map(|(name, _)| name.to_string()).collect(),
        package: Some(PackageListing {
            spec: spec.to_owned(),
            ..unpacked.listing
        }),
    };
    publish(cache, version, &found, &resources, &record, tmp.path())
}

/// The package `spec` unpacked into a directory of `tmp` (returned): from npm's cache when it
/// holds a copy with the right SHA-512 ([`npm_cache`]), else downloaded with `npm pack`; with
/// the tarball's checksums as npm gave them.
async fn obtain(
    npm: &Path,
    spec: &str,
    tmp: &Path,
    progress: &dyn Progress,
) -> Result<(Unpacked, Packed, PathBuf)> {
    if let Some(cached) = npm_cache::locate(npm, spec).await {
        progress.message(&format!("unpacking {spec} from npm's cache"));
        let dir = tmp.join("from-npm-cache");
        match from_npm_cache(&cached, &dir, progress).await {
            Ok(unpacked) => {
                let packed = Packed {
                    tarball: cached.tarball,
                    shasum: cached.shasum,
                    integrity: Some(cached.integrity),
                };
                return Ok((unpacked, packed, dir));
            }
            // What it unpacked stays apart, in its own directory, and goes with `tmp`.
            Err(e) => progress.message(&format!(
                "npm's cached copy of {spec} is not usable ({e:#}); downloading it again"
            )),
        }
    }
    let unpack_dir = tmp.join("unpacked");
    let packed = npm_pack(npm, spec, &tmp.join("pack"), progress).await?;
    let unpacked = unpack(&packed.tarball, &unpack_dir, progress)
        .await
        .with_context(|| {
            format!(
                "corrupt package {spec} ({}): run the install again; if it keeps failing, the release is broken: \
                 pass another Codex with --codex-bin PATH",
                packed.tarball.display()
            )
        })?;
    Ok((unpacked, packed, unpack_dir))
}

/// Unpacks the copy in npm's cache into `dir`, hashing the same file beside the unpack
/// (another core): an error unless its SHA-512 is the integrity's.
async fn from_npm_cache(
    cached: &npm_cache::Cached,
    dir: &Path,
    progress: &dyn Progress,
) -> Result<Unpacked> {
    use std::os::unix::fs::MetadataExt;
    let path = &cached.tarball;
    let open = || File::open(path).with_context(|| format!("cannot open {}", path.display()));
    // Two opens (each with its own read-ahead), checked to be the same file.
    let (file, copy) = (open()?, open()?);
    let identity = |f: &File| f.metadata().map(|m| (m.dev(), m.ino())).ok();
    if identity(&file).is_none() || identity(&file) != identity(&copy) {
        bail!("{} changed while it was opened", path.display());
    }
    let (unpacked, matches) = tokio::join!(
        unpack::unpack_file(file, path, dir, progress),
        npm_cache::has_sha512(copy, path, &cached.sha512),
    );
    matches.and(unpacked)
}

/// Holds the per-version install lock until dropped.
#[derive(Debug)]
struct VersionLock {
    /// The locked file; closing it releases the lock.
    _file: File,
}

/// Takes the install lock of `version`, waiting (with a message) while another install holds it.
async fn lock_version(
    cache: &Cache,
    version: &str,
    progress: &dyn Progress,
) -> Result<VersionLock> {
    let path = cache.lock_path(version);
    if let Some(parent) = path.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open the lock file {}", path.display()))?;
    let started = Instant::now();
    let mut told = false;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(VersionLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("cannot lock {}", path.display()));
            }
        }
        if !told {
            progress.message(&format!(
                "waiting for another install of Codex {version} (lock {})",
                path.display()
            ));
            told = true;
        }
        if started.elapsed() > LOCK_TIMEOUT {
            bail!(
                "gave up waiting {} s for another install of Codex {version} (lock {}); if no other codex-parity is \
                 running, delete that file",
                LOCK_TIMEOUT.as_secs(),
                path.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Moves the verified binary and its record into `<root>/<version>/`, each with an atomic rename.
/// The binary goes last: its presence marks a complete install.
fn publish(
    cache: &Cache,
    version: &str,
    binary: &Path,
    resources: &[(&str, PathBuf)],
    record: &InstallRecord,
    tmp: &Path,
) -> Result<()> {
    let dir = cache.version_dir(version);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (name, path) in resources {
        let target = dir.join(name);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::rename(path, &target)
            .with_context(|| format!("cannot move {} to {}", path.display(), target.display()))?;
    }
    let manifest_tmp = tmp.join("install.json");
    let json = serde_json::to_vec_pretty(record).context("cannot encode install.json")?;
    std::fs::write(&manifest_tmp, json)
        .with_context(|| format!("cannot write {}", manifest_tmp.display()))?;
    let manifest = cache.manifest_path(version);
    std::fs::rename(&manifest_tmp, &manifest)
        .with_context(|| format!("cannot move install.json to {}", manifest.display()))?;
    let target = cache.binary_path(version);
    std::fs::rename(binary, &target)
        .with_context(|| format!("cannot move {} to {}", binary.display(), target.display()))?;
    Ok(())
}

/// The package's [`RESOURCES`] present beside the unpacked `binary` (`bin/codex` in the
/// package; the resources sit beside `bin/`), made executable: name and path.
fn bundled_resources(binary: &Path) -> Result<Vec<(&'static str, PathBuf)>> {
    let Some(root) = binary.parent().and_then(Path::parent) else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for name in RESOURCES {
        let path = root.join(name);
        if path.is_file() {
            set_executable(&path)?;
            found.push((name, path));
        }
    }
    Ok(found)
}

/// Every file of `version`'s package: from its `install.json`, or, for a release installed
/// before codex-parity kept the listing, from the registry (`npm pack` into a temporary
/// directory of the cache, listed, removed; said through `progress`).
pub async fn package_listing(
    cache: &Cache,
    version: &str,
    progress: &dyn Progress,
) -> Result<PackageListing> {
    if let Ok(record) = read_record(cache, version)
        && let Some(listing) = record.package
    {
        return Ok(listing);
    }
    let npm = binary::find_on_path("npm".as_ref())
        .ok_or_else(|| anyhow!("cannot list Codex {version}'s package: `npm` is not on PATH"))?;
    let spec = npm_package_spec_for(version, current_platform()?);
    progress.message(&format!(
        "listing {spec} (installed before codex-parity kept its file list)"
    ));
    let tmp_parent = cache.tmp_dir(version);
    tokio::fs::create_dir_all(&tmp_parent)
        .await
        .with_context(|| format!("cannot create {}", tmp_parent.display()))?;
    let tmp = tempfile::Builder::new()
        .prefix("list-")
        .tempdir_in(&tmp_parent)
        .with_context(|| format!("cannot create a directory in {}", tmp_parent.display()))?;
    let packed = npm_pack(&npm, &spec, &tmp.path().join("pack"), progress).await?;
    let listing = list_package(&packed.tarball)
        .await
        .with_context(|| format!("listing {spec}"))?;
    Ok(PackageListing { spec, ..listing })
}

/// Reads `<root>/<version>/install.json`.
pub fn read_record(cache: &Cache, version: &str) -> Result<InstallRecord> {
    let path = cache.manifest_path(version);
    let text = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_slice(&text).with_context(|| format!("invalid {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::os::unix::fs::PermissionsExt;
    use std::sync::Mutex;

    /// Collects messages for assertions.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl Progress for Recorder {
        fn message(&self, msg: &str) {
            self.0.lock().unwrap().push(msg.to_owned());
        }
        fn update(&self, _msg: &str) {}
    }

    const X64: Platform = LINUX_X64;

    #[test]
    fn platform_suffix() {
        assert_eq!(platform_for("linux", "x86_64").unwrap(), X64);
        let arm = platform_for("linux", "aarch64").unwrap();
        assert_eq!(
            (arm.npm_suffix, arm.triple),
            ("linux-arm64", "aarch64-unknown-linux-musl")
        );
        let err = platform_for("macos", "aarch64").unwrap_err().to_string();
        assert!(
            err.contains("macos/aarch64") && err.contains("--codex-bin"),
            "{err}"
        );
        assert!(platform_for("windows", "x86_64").is_err());
        assert_eq!(
            npm_package_spec_for("0.171.0", X64),
            "@openai/codex@0.171.0-linux-x64"
        );
        assert_eq!(
            npm_package_spec("0.171.0"),
            "@openai/codex@0.171.0-linux-x64"
        );
    }

    #[test]
    fn cache_dir_selection() {
        let s = |v: &str| Some(OsString::from(v));
        assert_eq!(
            cache_root_from(s("/c"), s("/x"), s("/h")),
            Some("/c".into())
        );
        assert_eq!(
            cache_root_from(None, s("/x"), s("/h")),
            Some("/x/codex-parity/codex".into())
        );
        assert_eq!(
            cache_root_from(s(""), s("/x"), s("/h")),
            Some("/x/codex-parity/codex".into())
        );
        assert_eq!(
            cache_root_from(None, None, s("/h")),
            Some("/h/.cache/codex-parity/codex".into())
        );
        assert_eq!(
            cache_root_from(None, s(""), s("/h")),
            Some("/h/.cache/codex-parity/codex".into())
        );
        assert_eq!(
            cache_root_from(None, s("rel"), s("/h")),
            Some("/h/.cache/codex-parity/codex".into())
        );
        assert_eq!(cache_root_from(None, None, None), None);
        let c = Cache::new("/r");
        assert_eq!(c.binary_path("0.1.0"), PathBuf::from("/r/0.1.0/codex"));
        assert_eq!(
            c.manifest_path("0.1.0"),
            PathBuf::from("/r/0.1.0/install.json")
        );
    }

    /// Creates a sparse file of `len` bytes.
    fn sparse(path: &Path, len: u64) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        File::create(path).unwrap().set_len(len).unwrap();
    }

    #[test]
    fn find_binary_rule() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        sparse(&root.join("package/bin/codex"), 1000); // the small JS launcher-like file
        sparse(&root.join("package/vendor/t/codex-path/rg"), 20 << 20);
        sparse(
            &root.join("package/vendor/t/bin/codex-code-mode-host"),
            20 << 20,
        );
        let err = find_binary(root, None).unwrap_err().to_string();
        assert!(err.contains("no codex binary"), "{err}");

        let big = root.join("package/vendor/x86_64-unknown-linux-musl/bin/codex");
        sparse(&big, 11 << 20);
        std::os::unix::fs::symlink(&big, root.join("package/vendor/t/codex")).unwrap();
        assert_eq!(find_binary(root, None).unwrap(), big);

        // Exactly 10 MB is not "larger than 10 MB".
        sparse(&root.join("package/vendor/other/codex/codex"), 10 << 20);
        assert_eq!(find_binary(root, None).unwrap(), big);

        let other = root.join("package/vendor/aarch64-unknown-linux-musl/codex/codex");
        sparse(&other, 12 << 20);
        assert!(
            find_binary(root, None)
                .unwrap_err()
                .to_string()
                .contains("several")
        );
        assert_eq!(
            find_binary(root, Some("x86_64-unknown-linux-musl")).unwrap(),
            big
        );
        assert_eq!(
            find_binary(root, Some("aarch64-unknown-linux-musl")).unwrap(),
            other
        );
    }

    /// Builds a `.tgz` shaped like the npm package, whose `codex` is a shell script reporting
    /// `version`, padded to more than 10 MB.
    fn fake_package(path: &Path, version: &str, layout: &str) {
        let mut script = format!("#!/bin/sh\necho 'codex-cli {version}'\nexit 0\n").into_bytes();
        script.resize((MIN_BINARY_SIZE + 4096) as usize, b'#');
        let gz =
            flate2::write::GzEncoder::new(File::create(path).unwrap(), flate2::Compression::fast());
        let mut tar = tar::Builder::new(gz);
        let mut add = |name: &str, data: &[u8], mode: u32| {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(mode);
            h.set_cksum();
            tar.append_data(&mut h, name, data).unwrap();
        };
        add("package/package.json", b"{}", 0o644);
        add("package/bin/codex.js", b"// launcher", 0o755);
        add("package/bin/codex", b"small", 0o755);
        add(
            &format!("package/vendor/x86_64-unknown-linux-musl/{layout}"),
            &script,
            0o644,
        );
        add(
            "package/vendor/x86_64-unknown-linux-musl/path/rg",
            b"rg",
            0o755,
        );
        tar.into_inner().unwrap().finish().unwrap();
    }

    /// A fake `npm` that "downloads" `tgz`, or prints `stderr` and fails when `tgz` is `None`;
    /// it knows no cached copy (`npm view` and `npm config` fail).
    fn fake_npm(dir: &Path, tgz: Option<&Path>, stderr: &str) -> PathBuf {
        let body = match tgz {
            Some(tgz) => format!(
                "sleep 0.3\ncp '{}' \"$4/openai-codex-fake.tgz\"\necho '[{{\"filename\":\"openai-codex-fake.tgz\",\"shasum\":\"abc\"}}]'",
                tgz.display()
            ),
            None => format!("cat >&2 <<'EOF'\n{stderr}\nEOF\nexit 1"),
        };
        let path = dir.join(format!("npm-{}", uuid::Uuid::now_v7()));
        let calls = dir.join("npm-calls");
        let script = format!(
            "#!/bin/sh\n[ \"$1\" = pack ] || exit 9\necho \"$*\" >> '{}'\n{body}\n",
            calls.display()
        );
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// The error text of an install that must fail.
    async fn install_err(cache: &Cache, version: &str, options: &InstallOptions) -> String {
        format!(
            "{:#}",
            install_with(cache, version, &NoProgress, options)
                .await
                .unwrap_err()
        )
    }

    fn opts(npm: PathBuf) -> InstallOptions {
        InstallOptions {
            npm: Some(npm),
            platform: Some(X64),
        }
    }

    #[tokio::test]
    async fn install_from_fake_npm_then_cached() {
        let dir = tempfile::tempdir().unwrap();
        let tgz = dir.path().join("pkg.tgz");
        fake_package(&tgz, "0.161.0", "bin/codex");
        let cache = Cache::new(dir.path().join("cache"));
        let npm = fake_npm(dir.path(), Some(&tgz), "");
        let rec = Recorder::default();
        let bin = install_with(&cache, "0.161.0", &rec, &opts(npm))
            .await
            .unwrap();
        assert_eq!(bin.version, "0.161.0");
        assert_eq!(bin.path, cache.binary_path("0.161.0"));
        let record = read_record(&cache, "0.161.0").unwrap();
        assert_eq!(record.npm_spec, "@openai/codex@0.161.0-linux-x64");
        assert_eq!(
            record.path_in_package,
            "package/vendor/x86_64-unknown-linux-musl/bin/codex"
        );
        assert_eq!(record.tarball_shasum.as_deref(), Some("abc"));
        // Only the binary, install.json and the last-used stamp are kept; temporary files
        // are gone.
        let mut names: Vec<String> = std::fs::read_dir(cache.version_dir("0.161.0"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["codex", "install.json", "last-used"]);
        assert!(!cache.root().join(".tmp").join("0.161.0").exists());

        // Second install: served from the cache, npm is not run (a failing npm proves it).
        let broken_npm = fake_npm(dir.path(), None, "must not run");
        let again = install_with(&cache, "0.161.0", &NoProgress, &opts(broken_npm))
            .await
            .unwrap();
        assert_eq!(again, bin);
    }

    /// A fake `npm` whose cache (`cache/` beside it) holds `cached` under the integrity of
    /// `tgz`, and whose `npm pack` "downloads" `tgz`; every call is logged in `npm-calls`.
    fn npm_with_cache(dir: &Path, tgz: &Path, cached: &[u8]) -> PathBuf {
        let bytes = std::fs::read(tgz).unwrap();
        let digest = ring::digest::digest(&ring::digest::SHA512, &bytes);
        let integrity = format!(
            "sha512-{}",
            codex_parity_sidecar::base64::encode(digest.as_ref())
        );
        let (_, content) = npm_cache::content_path(&dir.join("cache"), &integrity).unwrap();
        std::fs::create_dir_all(content.parent().unwrap()).unwrap();
        std::fs::write(&content, cached).unwrap();
        let path = dir.join("npm-with-cache");
        let script = format!(
            "#!/bin/sh\necho \"$*\" >> '{calls}'\ncase \"$1\" in\n\
             view) echo '{{\"integrity\":\"{integrity}\",\"shasum\":\"s1\"}}';;\n\
             config) echo '{cache}';;\n\
             pack) cp '{tgz}' \"$4/openai-codex-fake.tgz\"; echo '[{{\"filename\":\"openai-codex-fake.tgz\"}}]';;\n\
             *) exit 9;;\nesac\n",
            calls = dir.join("npm-calls").display(),
            cache = dir.join("cache").display(),
            tgz = tgz.display(),
        );
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// What installing 0.161.0 with [`npm_with_cache`] did when npm's cache holds the package
    /// of `cached_version`: the directory holding it all, the codex cache, the npm calls and
    /// the messages.
    async fn install_over_npms_cache(
        cached_version: &str,
    ) -> (tempfile::TempDir, Cache, String, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let (tgz, cached) = (dir.path().join("pkg.tgz"), dir.path().join("cached.tgz"));
        fake_package(&tgz, "0.161.0", "bin/codex");
        fake_package(&cached, cached_version, "bin/codex");
        let npm = npm_with_cache(dir.path(), &tgz, &std::fs::read(&cached).unwrap());
        let cache = Cache::new(dir.path().join("cache-of-codex"));
        let rec = Recorder::default();
        let bin = install_with(&cache, "0.161.0", &rec, &opts(npm))
            .await
            .unwrap();
        assert_eq!(bin.version, "0.161.0");
        let calls = std::fs::read_to_string(dir.path().join("npm-calls")).unwrap();
        let said = rec.0.lock().unwrap().clone();
        (dir, cache, calls, said)
    }

    /// A copy in npm's cache with the integrity's SHA-512 is unpacked in place: no `npm pack`.
    #[tokio::test]
    async fn a_copy_in_npms_cache_is_used_without_npm_pack() {
        let (_dir, cache, calls, said) = install_over_npms_cache("0.161.0").await;
        assert!(!calls.contains("pack"), "{calls}");
        assert!(
            calls.contains("view @openai/codex@0.161.0-linux-x64 dist --json"),
            "{calls}"
        );
        let record = read_record(&cache, "0.161.0").unwrap();
        assert!(record.tarball_integrity.unwrap().starts_with("sha512-"));
        assert_eq!(record.tarball_shasum.as_deref(), Some("s1"));
        assert!(
            said.iter().any(|m| m.contains("from npm's cache")),
            "{said:?}"
        );
    }

    /// A copy in npm's cache that does not hash to its integrity is not used: `npm pack`
    /// downloads the package again, and the install says why.
    #[tokio::test]
    async fn a_cached_copy_that_does_not_match_is_downloaded_again() {
        let (_dir, _, calls, said) = install_over_npms_cache("0.162.0").await;
        assert!(calls.lines().any(|l| l.starts_with("pack ")), "{calls}");
        assert!(
            said.iter()
                .any(|m| m.contains("not usable") && m.contains("does not have the SHA-512")),
            "{said:?}"
        );
    }

    #[tokio::test]
    async fn concurrent_installs_share_one_download() {
        let dir = tempfile::tempdir().unwrap();
        let tgz = dir.path().join("pkg.tgz");
        fake_package(&tgz, "0.131.0", "codex/codex");
        let cache = Cache::new(dir.path().join("cache"));
        let options = opts(fake_npm(dir.path(), Some(&tgz), ""));
        let (a, b) = tokio::join!(
            install_with(&cache, "0.131.0", &NoProgress, &options),
            install_with(&cache, "0.131.0", &NoProgress, &options),
        );
        assert_eq!(a.unwrap().version, "0.131.0");
        assert_eq!(b.unwrap().version, "0.131.0");
        let calls = std::fs::read_to_string(dir.path().join("npm-calls")).unwrap();
        assert_eq!(calls.lines().count(), 1, "npm ran more than once");
    }

    /// The npm calls logged in `calls` were two: from npm's cache first
    /// (`--prefer-offline`), then of the registry itself.
    fn asked_from_cache_then_registry(calls: &Path) {
        let calls = std::fs::read_to_string(calls).unwrap();
        let calls: Vec<&str> = calls.lines().collect();
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert!(calls[0].ends_with("--prefer-offline"), "{calls:?}");
        assert!(!calls[1].contains("--prefer-offline"), "{calls:?}");
    }

    /// npm's cached metadata may predate a release: the version is then asked of the registry.
    #[tokio::test]
    async fn a_version_newer_than_npms_cache_is_asked_of_the_registry() {
        let dir = tempfile::tempdir().unwrap();
        let tgz = dir.path().join("pkg.tgz");
        fake_package(&tgz, "0.161.0", "bin/codex");
        let calls = dir.path().join("npm-calls");
        let npm = dir.path().join("npm-stale-cache");
        let script = format!(
            "#!/bin/sh\n[ \"$1\" = pack ] || exit 9\necho \"$*\" >> '{}'\ncase \"$*\" in *--prefer-offline*) \
             echo 'npm error code ETARGET' >&2; echo 'npm error notarget No matching version found' >&2; exit 1;; esac\n\
             cp '{}' \"$4/openai-codex-fake.tgz\"\necho '[{{\"filename\":\"openai-codex-fake.tgz\"}}]'\n",
            calls.display(),
            tgz.display()
        );
        std::fs::write(&npm, script).unwrap();
        std::fs::set_permissions(&npm, std::fs::Permissions::from_mode(0o755)).unwrap();
        let cache = Cache::new(dir.path().join("cache"));
        let rec = Recorder::default();
        let bin = install_with(&cache, "0.161.0", &rec, &opts(npm))
            .await
            .unwrap();
        assert_eq!(bin.version, "0.161.0");
        asked_from_cache_then_registry(&calls);
        let said = rec.0.lock().unwrap().clone();
        assert!(
            said.iter()
                .any(|m| m.contains("cached list") && m.contains("asking the registry")),
            "{said:?}"
        );
    }

    #[tokio::test]
    async fn install_errors_say_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path().join("cache"));

        let npm = fake_npm(
            dir.path(),
            None,
            "npm error code ETARGET\nnpm error notarget No matching version found",
        );
        let err = install_err(&cache, "0.0.1", &opts(npm)).await;
        assert!(
            err.contains("no such version") && err.contains("npm view @openai/codex versions"),
            "{err}"
        );
        assert!(err.contains("No matching version found"), "{err}");
        asked_from_cache_then_registry(&dir.path().join("npm-calls"));
        std::fs::remove_file(dir.path().join("npm-calls")).unwrap();

        let npm = fake_npm(dir.path(), None, "line1\nnpm error something odd");
        let err = install_err(&cache, "0.0.1", &opts(npm)).await;
        assert!(
            err.contains("npm pack @openai/codex@0.0.1-linux-x64 failed")
                && err.contains("something odd"),
            "{err}"
        );

        let missing = opts(dir.path().join("no-npm"));
        let err = install_err(&cache, "0.0.1", &missing).await;
        assert!(err.contains("install Node.js and npm"), "{err}");

        let corrupt = dir.path().join("corrupt.tgz");
        std::fs::write(&corrupt, b"this is not gzip").unwrap();
        let npm = fake_npm(dir.path(), Some(&corrupt), "");
        let err = install_err(&cache, "0.0.1", &opts(npm)).await;
        assert!(err.contains("corrupt package"), "{err}");
        assert!(!cache.root().join(".tmp/0.0.1").exists());

        // Truncated download: valid gzip header, missing tail.
        let good = dir.path().join("good.tgz");
        fake_package(&good, "0.0.1", "bin/codex");
        let bytes = std::fs::read(&good).unwrap();
        let truncated = dir.path().join("truncated.tgz");
        std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
        let npm = fake_npm(dir.path(), Some(&truncated), "");
        let err = install_err(&cache, "0.0.1", &opts(npm)).await;
        assert!(err.contains("corrupt package"), "{err}");

        let npm = fake_npm(dir.path(), Some(&good), "");
        let err = install_err(&cache, "0.0.2", &opts(npm)).await;
        assert!(
            err.contains("version mismatch") && err.contains("codex-cli 0.0.1"),
            "{err}"
        );
        assert!(!cache.binary_path("0.0.2").exists());

        let err = install_err(&cache, "latest", &missing).await;
        assert!(err.contains("--codex-version latest"), "{err}");
        let err = install_err(&cache, "newest", &missing).await;
        assert!(err.contains("X.Y.Z"), "{err}");
    }

    #[tokio::test]
    async fn corrupt_tgz_unpack_error() {
        let dir = tempfile::tempdir().unwrap();
        let tgz = dir.path().join("x.tgz");
        std::fs::write(&tgz, b"\x1f\x8b\x08\x00garbage").unwrap();
        assert!(
            unpack(&tgz, &dir.path().join("out"), &NoProgress)
                .await
                .is_err()
        );
    }

    #[test]
    fn npm_error_classification() {
        let e = npm_error(
            "@openai/codex@9.9.9-linux-x64",
            "exit status: 1",
            "npm error code E404\nnpm error 404 Not Found",
        );
        assert!(e.to_string().contains("no such version"));
        let e = npm_error(
            "s",
            "exit status: 1",
            "npm error code ENOTFOUND\nrequest to https://registry.npmjs.org failed",
        );
        assert!(e.to_string().contains("could not reach the registry"));
        let e = npm_error("s", "exit status: 1", "");
        assert_eq!(e.to_string(), "npm pack s failed (exit status: 1)");
    }
}
