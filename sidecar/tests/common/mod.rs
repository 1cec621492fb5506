//! Test support: the built sidecar binary steered by the crate's typed client ([`start`],
//! [`spawn`]), or line by line for wire-format tests ([`raw`]); a tiny hyper client.
#![allow(dead_code)]

pub(crate) mod raw;

use std::io::Write;
use std::time::Duration;

use bytes::Bytes;
use codex_parity_sidecar::{Scripted, SidecarProcess, script};
use http_body_util::{BodyExt, Full};
use serde_json::Value;

/// A temporary config file holding `text`.
pub(crate) fn config_file(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(text.as_bytes()).unwrap();
    file
}

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_codex-parity-sidecar");

/// How long a test waits for a reply (beyond what a `requests` asks to wait) before
/// failing instead of hanging.
const REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// Spawns the binary with `args`, read its ready line, and returns it steered by the client.
pub(crate) async fn spawn(args: &[&str]) -> SidecarProcess {
    let mut sidecar = SidecarProcess::spawn(BIN, args)
        .await
        .unwrap_or_else(|e| panic!("starting the sidecar: {e:#}"));
    sidecar.set_reply_timeout(Some(REPLY_TIMEOUT));
    sidecar
}

/// A sidecar with no config.
pub(crate) async fn start() -> SidecarProcess {
    spawn(&[]).await
}

/// Scripted responses from their JSON form (`[[...events], {"status": 500}, ...]`).
pub(crate) fn scripts(list: Value) -> Vec<Scripted> {
    script::parse_list(&list).unwrap_or_else(|e| panic!("bad script {list}: {e}"))
}

/// An HTTP response as the tests see it.
#[derive(Debug)]
pub(crate) struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// One HTTP/1.1 request on a fresh connection to `url` (`http://HOST:PORT/path?query`).
pub(crate) async fn http(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Response {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", authority);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Full::new(Bytes::from(body))).unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
        .collect();
    let body = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    Response {
        status,
        headers,
        body,
    }
}

/// `POST {base}/responses` with a JSON body.
pub(crate) async fn post_json(base_url: &str, body: &Value) -> Response {
    http(
        "POST",
        &format!("{base_url}/responses"),
        &[("content-type", "application/json")],
        body.to_string().into_bytes(),
    )
    .await
}
