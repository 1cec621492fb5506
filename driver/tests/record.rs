//! `codex-parity record` on the real codex, with a second sidecar playing the upstream
//! Responses API (no real endpoint is reachable here) and two stand-in integrators: the
//! Rust example `record_client` and `tests/record/client.py`. Each mode (a plain turn, a
//! dynamic tool round trip, an approval, a steer, an interrupt) is recorded once per
//! client; the test key reaches the upstream and never the file; every recording replays
//! green on the recorded version with `run --scenarios`, and runs on the comparison set,
//! where each cell is reported like any scenario's. Bad input is refused, naming the fix.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use codex_parity::codex::binaries::{self, CodexBinary};
use codex_parity::codex::install::{Cache, StderrProgress};
use codex_parity::codex::versions;
use codex_parity::harness::sidecar::{Sidecar, SidecarLauncher};
use codex_parity::scenario_file;
use codex_parity_sidecar::mock::script::Scripted;
use codex_parity_sidecar::wire::{bodies, events};
use serde_json::Value;
use support::{CODEX_PARITY, Sandbox, text};

/// The key the client's environment carries: passed through to the upstream, never written.
const KEY: &str = "sk-record-test-key-0123456789";

/// The modes of the test clients, with what the upstream answers in each. The clients steer
/// and interrupt 1 s after `turn/started`: the upstream holds those answers for 4 and 5 s,
/// so that codex has sent its request and waits for it then, even on a loaded machine.
fn script(mode: &str) -> Vec<Scripted> {
    match mode {
        "plain" => vec![Scripted::sse(bodies::assistant_reply("r1", "hello there"))],
        "tool" => vec![
            Scripted::sse(bodies::function_call_reply(
                "r1",
                "call_1",
                "lookup",
                r#"{"key":"x"}"#,
            )),
            Scripted::sse(bodies::assistant_reply("r2", "x is 42")),
        ],
        "approval" => vec![
            Scripted::sse(bodies::one_item_reply(
                "r1",
                events::function_call("call_ap", "exec_command", r#"{"cmd":"touch approved.txt"}"#),
            )),
            Scripted::sse(bodies::assistant_reply("r2", "ran it")),
        ],
        "steer" => vec![
            Scripted::sse(bodies::assistant_reply("r1", "apples, pears")).delay_ms(4000),
            Scripted::sse(bodies::assistant_reply("r2", "apples, pears, bananas")),
        ],
        "interrupt" => {
            vec![Scripted::sse(bodies::assistant_reply("r1", "too late")).delay_ms(5000)]
        }
        _ => vec![Scripted::sse(bodies::assistant_reply("r1", "hello there"))],
    }
}

/// `record`'s extra arguments per mode (the approval needs codex to ask).
fn record_args(mode: &str) -> Vec<&'static str> {
    match mode {
        "approval" => vec![
            "--approval-policy",
            "on-request",
            "--sandbox",
            "workspace-write",
        ],
        _ => vec![],
    }
}

const MODES: [&str; 5] = ["plain", "tool", "approval", "steer", "interrupt"];

async fn pinned() -> CodexBinary {
    let v = versions::load().unwrap().pinned;
    binaries::resolve_spec(&v, &Cache::from_env().unwrap(), &StderrProgress::new())
        .await
        .unwrap()
}

/// The comparison set: `CODEX_TEST_BINS` when set, else the versions installed from npm.
async fn comparison_set() -> Vec<CodexBinary> {
    let request = binaries::BinaryRequest {
        paths: vec![],
        versions: versions::load().unwrap().compare.clone(),
        env: std::env::var_os(binaries::CODEX_TEST_BINS),
    };
    binaries::resolve_request(
        &request,
        &Cache::from_env().unwrap(),
        &StderrProgress::new(),
    )
    .await
    .unwrap()
}

/// The command line of a test client in `language`.
fn client(language: &str, mode: &str) -> Vec<String> {
    match language {
        "rust" => support::record_client(mode),
        _ => vec![
            "python3".into(),
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/record/client.py")
                .display()
                .to_string(),
            mode.into(),
        ],
    }
}

/// An upstream sidecar with `mode`'s script.
async fn upstream(mode: &str) -> Sidecar {
    let sidecar = Sidecar::start(&SidecarLauncher::codex_parity(CODEX_PARITY))
        .await
        .unwrap();
    sidecar.enqueue(&script(mode)).await.unwrap();
    sidecar
}

/// `codex-parity record` of `client` in the sandbox, into `out`.
fn record(
    sandbox: &Sandbox,
    codex: &Path,
    upstream: &str,
    out: &Path,
    extra: &[&str],
    client: &[String],
) -> Output {
    finish(record_command(sandbox, codex, upstream, out, extra, client))
}

/// The command of [`record`], to add to its environment.
fn record_command(
    sandbox: &Sandbox,
    codex: &Path,
    upstream: &str,
    out: &Path,
    extra: &[&str],
    client: &[String],
) -> std::process::Command {
    let args = support::record_args(codex, upstream, out, extra, client);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut cmd = sandbox.command(&args);
    cmd.env("OPENAI_API_KEY", KEY);
    cmd
}

/// Runs a `record` command to its end (90 s at most).
fn finish(mut cmd: std::process::Command) -> Output {
    support::wait_with_timeout(
        cmd.spawn().unwrap(),
        Duration::from_secs(90),
        "codex-parity record",
    )
}

/// `run --scenarios DIR --only-files` on one codex, with the repository's baselines.
fn replay(scenarios: &Path, codex: &Path) -> Output {
    let (dir, bin) = (scenarios.display().to_string(), codex.display().to_string());
    let args = [
        "run",
        "--scenarios",
        &dir,
        "--only-files",
        "--codex-bin",
        &bin,
    ];
    Sandbox::with_real_baselines().run(&args).0
}

/// Records every mode with one client's language into `dir`; returns the files.
async fn record_all(language: &str, dir: &Path, codex: &CodexBinary) -> Vec<PathBuf> {
    let sandbox = Sandbox::new();
    let mut files = Vec::new();
    for mode in MODES {
        let upstream = upstream(mode).await;
        let out = dir.join(format!("{language}_{mode}.toml"));
        let output = record(
            &sandbox,
            &codex.path,
            upstream.base_url(),
            &out,
            &record_args(mode),
            &client(language, mode),
        );
        assert!(
            output.status.success(),
            "recording {language} {mode}: {}",
            text(&output)
        );
        let file = std::fs::read_to_string(&out).unwrap();
        assert!(
            !file.contains(KEY),
            "the key is in {}:\n{file}",
            out.display()
        );
        // What record wrote is the model the reader reads, and writes back the same.
        let read = scenario_file::load::compile(&out, &file).unwrap();
        let again = scenario_file::write::write(&read.file, &Default::default());
        let reread = scenario_file::load::compile(&out, &again).unwrap();
        assert_eq!(reread.file, read.file, "{}", out.display());
        assert!(
            !text(&output).contains(KEY),
            "the key is in record's output"
        );
        let requests = upstream.requests(1, Duration::from_secs(5)).await.unwrap();
        let auth = requests[0].headers.get("authorization").cloned();
        assert_eq!(
            auth.as_deref(),
            Some(format!("Bearer {KEY}").as_str()),
            "the key reached the upstream"
        );
        let _ = upstream.shutdown().await;
        println!("--- {}\n{file}", out.display());
        files.push(out);
    }
    let left = sandbox.wait_for_no_processes(Duration::from_secs(5));
    assert!(left.is_empty(), "record left processes behind: {left:?}");
    files
}

/// Each file's cells of a `run --report DIR`'s results.json: (scenario, version, status).
fn cells(report: &Path) -> Vec<(String, String, String)> {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("results.json")).unwrap())
            .unwrap();
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
            (s("scenario"), s("codex_version"), s("status"))
        })
        .collect()
}

async fn recordings_replay(language: &str) {
    let codex = pinned().await;
    let dir = tempfile::tempdir().unwrap();
    let files = record_all(language, dir.path(), &codex).await;
    let sandbox = Sandbox::with_real_baselines();
    let report = dir.path().join("report");
    let scenarios = dir.path().display().to_string();
    let (output, _) = sandbox.run(&[
        "run",
        "--scenarios",
        &scenarios,
        "--only-files",
        "--codex-bin",
        &codex.path.display().to_string(),
        "--report",
        &report.display().to_string(),
    ]);
    assert!(
        output.status.success(),
        "the recordings replay on {}: {}",
        codex.version,
        text(&output)
    );
    let got = cells(&report);
    assert_eq!(got.len(), files.len(), "{got:?}");
    assert!(got.iter().all(|(_, _, s)| s == "passed"), "{got:?}");
    // The comparison set: every recording runs on every version, reported like any cell.
    let set = comparison_set().await;
    let mut args: Vec<String> = vec![
        "run".into(),
        "--scenarios".into(),
        scenarios.clone(),
        "--only-files".into(),
    ];
    for b in &set {
        args.extend(["--codex-bin".into(), b.path.display().to_string()]);
    }
    let report = dir.path().join("report-set");
    args.extend(["--report".into(), report.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (output, _) = sandbox.run(&args);
    println!("{}", text(&output));
    let got = cells(&report);
    assert_eq!(got.len(), files.len() * set.len(), "{got:?}");
    let known = ["passed", "drift", "contradicts", "failed", "not_applicable"];
    assert!(
        got.iter().all(|(_, _, s)| known.contains(&s.as_str())),
        "{got:?}"
    );
    let on_recorded: Vec<_> = got.iter().filter(|(_, v, _)| *v == codex.version).collect();
    assert!(
        on_recorded.iter().all(|(_, _, s)| s == "passed"),
        "{on_recorded:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rust_client_recordings_replay_on_every_version() {
    recordings_replay("rust").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_client_recordings_replay_on_every_version() {
    recordings_replay("python").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recorded_file_reads_like_a_hand_written_one() {
    let codex = pinned().await;
    let dir = tempfile::tempdir().unwrap();
    let upstream = upstream("tool").await;
    let out = dir.path().join("tool_turn.toml");
    let output = record(
        &Sandbox::new(),
        &codex.path,
        upstream.base_url(),
        &out,
        &[],
        &client("python", "tool"),
    );
    assert!(output.status.success(), "{}", text(&output));
    let file = std::fs::read_to_string(&out).unwrap();
    // What the session showed, as the catalogue would write it.
    for part in [
        "name = \"tool_turn\"",
        "dynamicTools = [{ name = \"lookup\"",
        "do = \"reply\"\nmethod = \"item/tool/call\"\nresult = { success = true, contentItems = [{ type = \"inputText\", text = \"x is 42\" }] }",
        "do = \"turn\"\ninput = \"look up the key x\"\nexpect = { status = \"completed\", finalResponse = \"x is 42\" }",
        "on = \"requests\"\ncount = 2",
        "on = \"server_request\"\nmethod = \"item/tool/call\"\ncount = 1",
    ] {
        assert!(file.contains(part), "{part:?} not in\n{file}");
    }
    assert!(
        !file.contains(&dir.path().display().to_string()),
        "no path of the recording: {file}"
    );
    assert!(
        text(&output).contains("replay it: codex-parity run --scenarios"),
        "{}",
        text(&output)
    );
    let _ = upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_websocket_session_is_recorded_and_replays() {
    let codex = pinned().await;
    let dir = tempfile::tempdir().unwrap();
    let upstream = upstream("tool").await;
    let out = dir.path().join("ws_tool.toml");
    let sandbox = Sandbox::new();
    let client = client("rust", "tool");
    let o = record(
        &sandbox,
        &codex.path,
        upstream.base_url(),
        &out,
        &["--websocket"],
        &client,
    );
    assert!(o.status.success(), "{}", text(&o));
    let file = std::fs::read_to_string(&out).unwrap();
    assert!(file.contains("websocket = true"), "{file}");
    assert!(
        file.contains("(WebSocket)") && file.contains("on = \"requests\"\ncount = 2"),
        "{file}"
    );
    assert!(!file.contains(KEY), "{file}");
    let _ = upstream.shutdown().await;
    let o = replay(dir.path(), &codex.path);
    assert!(
        o.status.success(),
        "the WebSocket recording replays: {}",
        text(&o)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_of_the_app_server_listener_is_recorded_and_replays() {
    let codex = pinned().await;
    let dir = tempfile::tempdir().unwrap();
    let upstream = upstream("tool").await;
    let out = dir.path().join("listener_tool.toml");
    let sandbox = Sandbox::new();
    // The client finds the listener in CODEX_PARITY_LISTEN and starts no codex itself.
    let listen = ["--listen", "ws://127.0.0.1:0"];
    let o = record(
        &sandbox,
        &codex.path,
        upstream.base_url(),
        &out,
        &listen,
        &client("rust", "tool"),
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !text(&o).contains("readyz"),
        "the listener's banner reached the terminal: {}",
        text(&o)
    );
    let file = std::fs::read_to_string(&out).unwrap();
    for part in [
        "recorded over the app-server's WebSocket listener",
        "do = \"reply\"\nmethod = \"item/tool/call\"",
        "expect = { status = \"completed\", finalResponse = \"x is 42\" }",
    ] {
        assert!(file.contains(part), "{part:?} not in\n{file}");
    }
    let _ = upstream.shutdown().await;
    let left = sandbox.wait_for_no_processes(Duration::from_secs(5));
    assert!(left.is_empty(), "record left processes behind: {left:?}");
    let o = replay(dir.path(), &codex.path);
    assert!(
        o.status.success(),
        "the listener recording replays: {}",
        text(&o)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn redacted_text_is_in_neither_the_file_nor_the_kept_logs() {
    let codex = pinned().await;
    let dir = tempfile::tempdir().unwrap();
    let upstream = upstream("plain").await;
    let out = dir.path().join("redacted.toml");
    let args = ["--redact", "hel+o", "--keep"];
    // The kept directory is in the sandbox's TMPDIR: the sandbox lives to the end.
    let sandbox = Sandbox::new();
    let o = record(
        &sandbox,
        &codex.path,
        upstream.base_url(),
        &out,
        &args,
        &client("python", "plain"),
    );
    assert!(o.status.success(), "{}", text(&o));
    let file = std::fs::read_to_string(&out).unwrap();
    assert!(!file.contains("hello"), "{file}");
    assert!(
        file.contains("finalResponse = \"<redacted> there\""),
        "{file}"
    );
    assert!(
        file.contains("the matches of 1 --redact pattern(s)") && !file.contains("hel+o"),
        "the count of patterns, never their text: {file}"
    );
    let kept = kept_dir(&o);
    let mut seen = 0;
    for path in [kept.join("exchanges.json")].into_iter().chain(
        std::fs::read_dir(kept.join("session/sessions"))
            .unwrap()
            .map(|e| e.unwrap().path()),
    ) {
        let log = std::fs::read_to_string(&path).unwrap();
        assert!(
            !log.contains("hello") && !log.contains(KEY),
            "{}:\n{log}",
            path.display()
        );
        seen += 1;
    }
    assert!(
        seen >= 2,
        "the exchanges and at least one relay log are kept"
    );
    std::fs::remove_dir_all(&kept).unwrap();
    let _ = upstream.shutdown().await;
}

/// A test CA and a `localhost` certificate it signed (made with openssl): (CA, leaf, key).
fn test_certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let run = |args: &str| {
        let out = std::process::Command::new("openssl")
            .args(args.split(' '))
            .current_dir(dir)
            .output()
            .expect("openssl, to make the test certificates");
        assert!(
            out.status.success(),
            "openssl {args}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(
        "req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=record-test-ca",
    );
    run("req -newkey rsa:2048 -nodes -keyout leaf.key -out leaf.csr -subj /CN=localhost");
    std::fs::write(dir.join("ext"), "subjectAltName=DNS:localhost\n").unwrap();
    run(
        "x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 2 -extfile ext",
    );
    (
        dir.join("ca.pem"),
        dir.join("leaf.pem"),
        dir.join("leaf.key"),
    )
}

/// A TLS front on localhost for the plain server at `to` (`host:port`); its port.
async fn tls_front(cert: &Path, key: &Path, to: String) -> u16 {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(key).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, to) = (acceptor.clone(), to.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut plain) = tokio::net::TcpStream::connect(to).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread")]
async fn an_https_upstream_is_recorded_through_tls() {
    let codex = pinned().await;
    let dir = tempfile::tempdir().unwrap();
    let (ca, leaf, key) = test_certificates(dir.path());
    let upstream = upstream("plain").await;
    let plain = upstream
        .base_url()
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string();
    let port = tls_front(&leaf, &key, plain).await;
    let https = format!("https://localhost:{port}/v1");
    let out = dir.path().join("over_tls.toml");
    let sandbox = Sandbox::new();
    // Without the test CA the upstream's certificate is refused, before the client starts.
    let o = record(
        &sandbox,
        &codex.path,
        &https,
        &out,
        &[],
        &client("python", "plain"),
    );
    support::assert_exit_2_naming(&o, &https);
    // SSL_CERT_FILE adds it to the roots: the session goes through TLS to the upstream.
    let mut cmd = record_command(
        &sandbox,
        &codex.path,
        &https,
        &out,
        &[],
        &client("python", "plain"),
    );
    cmd.env("SSL_CERT_FILE", &ca);
    let o = finish(cmd);
    assert!(o.status.success(), "{}", text(&o));
    let file = std::fs::read_to_string(&out).unwrap();
    assert!(file.contains("finalResponse = \"hello there\""), "{file}");
    let requests = upstream.requests(1, Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        requests[0].headers.get("authorization").map(String::as_str),
        Some(format!("Bearer {KEY}").as_str())
    );
    let _ = upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_is_refused_naming_what_to_do() {
    let codex = pinned().await;
    let sandbox = Sandbox::new();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.toml");
    let codex_bin = codex.path.display().to_string();
    let out_s = out.display().to_string();
    // No command.
    let (o, _) = sandbox.run(&["record", "--codex-bin", &codex_bin, "--out", &out_s]);
    support::assert_exit_2_naming(&o, "no command to record");
    // An upstream that refuses.
    let refused = "http://127.0.0.1:9/v1";
    let o = record(
        &sandbox,
        &codex.path,
        refused,
        &out,
        &[],
        &client("python", "plain"),
    );
    support::assert_exit_2_naming(&o, refused);
    // A client that exits at once, never starting codex.
    let upstream = upstream("plain").await;
    let o = record(
        &sandbox,
        &codex.path,
        upstream.base_url(),
        &out,
        &[],
        &client("python", "exit-at-once"),
    );
    support::assert_exit_2_naming(&o, "never started `codex app-server`");
    assert!(text(&o).contains("CODEX_PARITY_CODEX"), "{}", text(&o));
    assert!(!out.exists(), "nothing is written");
    // A session with no turn: nothing to replay.
    let o = record(
        &sandbox,
        &codex.path,
        upstream.base_url(),
        &out,
        &[],
        &client("python", "no-turn"),
    );
    support::assert_exit_2_naming(&o, "the session had no turn");
    assert!(!out.exists(), "nothing is written");
    // A listener nobody connects to.
    let listen = ["--listen", "ws://127.0.0.1:0"];
    let o = record(
        &sandbox,
        &codex.path,
        upstream.base_url(),
        &out,
        &listen,
        &client("python", "exit-at-once"),
    );
    support::assert_exit_2_naming(
        &o,
        "never connected to the app-server listener ws://127.0.0.1:",
    );
    // A client that fails after its session: the file is written, marked; exit 1.
    let o = record(
        &sandbox,
        &codex.path,
        upstream.base_url(),
        &out,
        &[],
        &client("python", "fail"),
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let file = std::fs::read_to_string(&out).unwrap();
    assert!(
        file.contains("# WARNING: the client exited with status 3"),
        "{file}"
    );
    let _ = upstream.shutdown().await;
    let left = sandbox.wait_for_no_processes(Duration::from_secs(5));
    assert!(left.is_empty(), "record left processes behind: {left:?}");
}

/// Every byte of `dir` (recursively) with the relative path of each file; fails on anything
/// that is not a private file or directory (0600, 0700).
fn private_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{} is {mode:o}", dir.display());
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            out.extend(private_files(&path));
        } else {
            assert!(meta.is_file(), "{} is not a file", path.display());
            let mode = meta.permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{} is {mode:o}", path.display());
            out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
    out
}

/// Fails naming where any of `planted` occurs in `what`.
fn assert_none_in(planted: &[&str], what: &str, bytes: &[u8]) {
    for secret in planted {
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{secret:?} is in {what}:\n{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

/// The kept directory `record` names on stderr.
fn kept_dir(output: &Output) -> PathBuf {
    let all = text(output);
    let kept = all
        .lines()
        .find_map(|l| {
            l.split_once("the recording's directory (redacted")
                .and_then(|(_, rest)| rest.split_once(": ").or_else(|| rest.split_once(" at ")))
                .map(|(_, p)| p.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no kept directory in {all}"));
    PathBuf::from(kept)
}

/// Secrets planted everywhere a user could put one: the prompt (`--redact`), the client's
/// arguments (`--redact`, and a line break that would inject a key), a variable of the
/// environment that a command the model ran echoed (by its name), the API key, and response
/// headers of names nobody foresaw. None of them is in the file, in what `record` printed,
/// or in any file of the kept directory (private: 0700, 0600).
#[tokio::test(flavor = "multi_thread")]
async fn planted_secrets_are_in_nothing_written_or_printed() {
    let codex = pinned().await;
    let dir = tempfile::tempdir().unwrap();
    let credential = "cred-PLANTED-0123456789";
    let headers = [
        ("x-api_key", "hdr-PLANTED-3"),
        ("x-session", "hdr-PLANTED-4"),
        ("x-planted-secret", "hdr-PLANTED-5"),
    ];
    let with_headers = |mut s: Scripted| {
        for (name, value) in headers {
            s = s.header(name, value);
        }
        s
    };
    let upstream = Sidecar::start(&SidecarLauncher::codex_parity(CODEX_PARITY))
        .await
        .unwrap();
    upstream
        .enqueue(&[
            with_headers(Scripted::sse(bodies::one_item_reply(
                "r1",
                events::function_call(
                    "call_env",
                    "exec_command",
                    r#"{"cmd":"echo token is $MY_LLM_CREDENTIAL"}"#,
                ),
            ))),
            with_headers(Scripted::sse(bodies::assistant_reply("r2", "deployed"))),
        ])
        .await
        .unwrap();
    let out = dir.path().join("secrets.toml");
    let sandbox = Sandbox::new();
    let mut client = client("python", "secrets");
    client.extend([
        "--token=sk-test-PLANTED002".into(),
        "x\ntimeout_secs = 1".into(),
    ]);
    let mut cmd = record_command(
        &sandbox,
        &codex.path,
        upstream.base_url(),
        &out,
        &["--keep", "--redact", "sk-test-PLANTED[0-9]+"],
        &client,
    );
    cmd.env("MY_LLM_CREDENTIAL", credential)
        .env("RECORD_TEST_PROMPT", "deploy with sk-test-PLANTED001 now");
    let o = finish(cmd);
    assert!(o.status.success(), "{}", text(&o));
    // The command really ran and echoed the variable: the upstream saw its value.
    let requests = upstream.requests(2, Duration::from_secs(5)).await.unwrap();
    let seen = serde_json::to_string(&requests[1].body).unwrap();
    assert!(seen.contains(credential), "the echo reached codex: {seen}");
    let planted = [KEY, credential, "PLANTED001", "PLANTED002", "hdr-PLANTED"];
    let file = std::fs::read(&out).unwrap();
    assert_none_in(&planted, "the scenario file", &file);
    assert_none_in(&planted, "record's output", text(&o).as_bytes());
    let parsed: toml::Table = toml::from_str(&String::from_utf8_lossy(&file)).unwrap();
    assert!(
        !parsed.contains_key("timeout_secs"),
        "a line break in an argument became a key"
    );
    let kept = kept_dir(&o);
    let files = private_files(&kept);
    assert!(
        files.iter().any(|(p, _)| p.ends_with("exchanges.json"))
            && files.iter().any(|(p, _)| p.contains("codex-home"))
            && files.iter().any(|(p, _)| p.contains("sessions")),
        "the kept directory holds the exchanges, the relay logs and codex's home: {:?}",
        files.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for (path, bytes) in &files {
        assert_none_in(&planted, path, bytes);
    }
    std::fs::remove_dir_all(&kept).unwrap();
    let _ = upstream.shutdown().await;
    let left = sandbox.wait_for_no_processes(Duration::from_secs(5));
    assert!(left.is_empty(), "record left processes behind: {left:?}");
}

/// The failure paths with secrets planted: a client that never starts codex (`--keep`
/// keeps the redacted directory and says where), an upstream URL with credentials and a
/// query, an `--out` whose folder takes no file (refused before the client runs).
#[tokio::test(flavor = "multi_thread")]
async fn failures_write_and_print_no_secret_and_keep_what_they_may() {
    let codex = pinned().await;
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new();
    let out = dir.path().join("x.toml");
    let upstream = upstream("plain").await;
    let mut client = client("python", "exit-at-once");
    client.push("--password=sk-test-PLANTED007".into());
    let o = record(
        &sandbox,
        &codex.path,
        upstream.base_url(),
        &out,
        &["--keep", "--redact", "sk-test-PLANTED[0-9]+"],
        &client,
    );
    support::assert_exit_2_naming(&o, "never started `codex app-server`");
    assert_none_in(&["PLANTED007", KEY], "record's output", text(&o).as_bytes());
    let kept = kept_dir(&o);
    for (path, bytes) in private_files(&kept) {
        assert_none_in(&["PLANTED007", KEY], &path, &bytes);
    }
    std::fs::remove_dir_all(&kept).unwrap();
    assert!(!out.exists(), "nothing is written");
    for url in [
        "http://user:pw-PLANTED-8@127.0.0.1:9/v1",
        "http://127.0.0.1:9/v1?api_key=PLANTED-9",
    ] {
        let o = record(&sandbox, &codex.path, url, &out, &[], &client);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert_none_in(
            &["PLANTED-8", "PLANTED-9"],
            "record's output",
            text(&o).as_bytes(),
        );
    }
    // An --out whose folder takes no file: refused before the client runs.
    let marker = dir.path().join("client-ran");
    let touch = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!("touch {}", marker.display()),
    ];
    let o = record(
        &sandbox,
        &codex.path,
        upstream.base_url(),
        Path::new("/proc/no-such-folder/x.toml"),
        &[],
        &touch,
    );
    support::assert_exit_2_naming(&o, "for --out (nothing was recorded)");
    assert!(!marker.exists(), "the client ran before --out was checked");
    let _ = upstream.shutdown().await;
    let left = sandbox.wait_for_no_processes(Duration::from_secs(5));
    assert!(left.is_empty(), "record left processes behind: {left:?}");
    assert!(
        Sandbox::leftovers(&sandbox.tmp).is_empty(),
        "left in TMPDIR: {:?}",
        Sandbox::leftovers(&sandbox.tmp)
    );
}

/// `record` killed with SIGKILL while its client (a `sh -c` whose Python child runs codex)
/// is mid-session: no process of the recording is left (the client, its child, the relay,
/// codex), nor the recording's directory with its raw logs.
#[tokio::test(flavor = "multi_thread")]
async fn a_killed_record_leaves_no_process_and_no_directory() {
    let codex = pinned().await;
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new();
    let upstream = upstream("plain").await;
    let python = client("python", "hang").join(" ");
    let client = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!("{python}; echo after"),
    ];
    let args = support::record_args(
        &codex.path,
        upstream.base_url(),
        &dir.path().join("x.toml"),
        &[],
        &client,
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut record = sandbox.command(&args);
    record.env("OPENAI_API_KEY", KEY);
    let mut child = record.spawn().unwrap();
    // The client has started codex through the relay.
    sandbox.wait_for_running("record-relay", 1, Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        Sandbox::leftovers(&sandbox.tmp)
            .iter()
            .any(|p| p.contains("codex-parity-record-")),
        "the recording's directory is in the run directory"
    );
    support::signal(child.id(), rustix::process::Signal::KILL);
    child.wait().unwrap();
    let left = sandbox.wait_for_no_processes(Duration::from_secs(10));
    assert!(
        left.is_empty(),
        "processes left by the killed record: {left:?}"
    );
    // The guard removes the killed command's directory at once; on a loaded machine it may
    // not have yet: the next command that makes one removes it then, and leaves nothing.
    let (o, _) = sandbox.run(&[
        "record",
        "--codex-bin",
        "/nonexistent",
        "--out",
        "/tmp/x.toml",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        Sandbox::leftovers(&sandbox.tmp).is_empty(),
        "left in TMPDIR after the next command: {:?}",
        Sandbox::leftovers(&sandbox.tmp)
    );
    let _ = upstream.shutdown().await;
}

/// `record --responses FILE`: the model side served by the built-in mock, offline and without
/// a key; a response the session never asked for is reported by name.
#[tokio::test(flavor = "multi_thread")]
async fn a_recording_is_made_offline_from_responses_and_leftovers_are_named() {
    let codex = pinned().await;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let responses = serde_json::json!({"responses": [
        Scripted::sse(bodies::assistant_reply("r1", "hello offline")).to_json(),
        Scripted::sse(bodies::assistant_reply("r2", "never asked for")).to_json(),
    ]});
    std::fs::write(&script, responses.to_string()).unwrap();
    let out = dir.path().join("offline.toml");
    let sandbox = Sandbox::new();
    let script_arg = script.display().to_string();
    let mut args = support::record_args(
        &codex.path,
        "unused",
        &out,
        &["--responses", &script_arg],
        &client("python", "plain"),
    );
    // No --upstream with --responses: drop the pair record_args put in.
    let at = args.iter().position(|a| a == "--upstream").unwrap();
    args.drain(at..at + 2);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut cmd = sandbox.command(&args);
    cmd.env_remove("OPENAI_API_KEY");
    let o = finish(cmd);
    assert!(o.status.success(), "{}", text(&o));
    let file = std::fs::read_to_string(&out).unwrap();
    assert!(file.contains("finalResponse = \"hello offline\""), "{file}");
    assert!(
        file.contains("answered as recorded below") && file.contains("the built-in mock serving"),
        "{file}"
    );
    assert!(
        text(&o).contains("--responses: never served:"),
        "the leftover response is named: {}",
        text(&o)
    );
    let o = replay(dir.path(), &codex.path);
    assert!(
        o.status.success(),
        "the offline recording replays: {}",
        text(&o)
    );
}

/// A client of `codex exec` shaped like OpenAI's TypeScript SDK (one process per turn, the
/// prompt on stdin, `--output-schema` in a temporary file, the second turn a `resume` of the
/// first's thread) is recorded as an exec file that replays on the recorded version.
#[tokio::test(flavor = "multi_thread")]
async fn an_exec_client_is_recorded_and_replays() {
    let codex = pinned().await;
    let dir = tempfile::tempdir().unwrap();
    let upstream = Sidecar::start(&SidecarLauncher::codex_parity(CODEX_PARITY))
        .await
        .unwrap();
    upstream
        .enqueue(&[
            Scripted::sse(bodies::assistant_reply("r1", "{\"answer\": \"blue\"}")),
            Scripted::sse(bodies::assistant_reply("r2", "still blue")),
        ])
        .await
        .unwrap();
    let out = dir.path().join("exec_turns.toml");
    let client = vec![
        "python3".to_string(),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/exec/client.py")
            .display()
            .to_string(),
        "--schema".into(),
        "pick a colour".into(),
        "and again".into(),
    ];
    let sandbox = Sandbox::new();
    let o = record(
        &sandbox,
        &codex.path,
        upstream.base_url(),
        &out,
        &[],
        &client,
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("0 app-server session(s) and 2 codex exec run(s)"),
        "{}",
        text(&o)
    );
    let file = std::fs::read_to_string(&out).unwrap();
    for part in [
        "do = \"write_file\"\npath = \".codex-parity/exec-1-schema.json\"",
        "stdin = \"pick a colour\"",
        "capture = { thread = \"/events/0/thread_id\" }",
        "args = [\"--skip-git-repo-check\", \"resume\", \"$thread\"]\nstdin = \"and again\"",
        "final_message = \"still blue\"",
        "on = \"requests\"\ncount = 2",
    ] {
        assert!(file.contains(part), "{part:?} not in\n{file}");
    }
    let _ = upstream.shutdown().await;
    let left = sandbox.wait_for_no_processes(Duration::from_secs(5));
    assert!(left.is_empty(), "record left processes behind: {left:?}");
    let o = replay(dir.path(), &codex.path);
    assert!(
        o.status.success(),
        "the exec recording replays: {}",
        text(&o)
    );
}
