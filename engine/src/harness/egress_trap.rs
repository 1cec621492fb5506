//! The egress trap: a loopback listener that stands in for an HTTP(S) proxy, refuses every
//! connection and notes each attempt. Codex runs with `HTTPS_PROXY`/`HTTP_PROXY` pointing
//! here, so any request that would leave the machine is seen (and refused) instead of
//! escaping, and fails the scenario. (Not `record`'s recording proxy, which forwards.)

use std::sync::{Arc, Mutex};

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::lock;

/// The egress trap. Dropping it stops the listener.
pub struct EgressTrap {
    url: String,
    attempts: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl EgressTrap {
    /// Listens on `127.0.0.1` and a free port.
    pub async fn start() -> anyhow::Result<EgressTrap> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the recording proxy")?;
        let url = format!("http://{}", listener.local_addr()?);
        let attempts = Arc::new(Mutex::new(Vec::new()));
        let log = attempts.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut stream, peer)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 1024];
                    let n = tokio::time::timeout(
                        std::time::Duration::from_secs(2),
                        stream.read(&mut buf),
                    )
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .unwrap_or(0);
                    let first = String::from_utf8_lossy(&buf[..n]);
                    let line = first.lines().next().unwrap_or("").to_string();
                    lock(&log).push(format!("{peer}: {line}"));
                    let _ = stream
                        .write_all(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
                        .await;
                });
            }
        });
        Ok(EgressTrap {
            url,
            attempts,
            task,
        })
    }

    /// The proxy URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Every connection attempt so far: peer address and the request's first line.
    pub fn attempts(&self) -> Vec<String> {
        lock(&self.attempts).clone()
    }
}

impl Drop for EgressTrap {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn records_a_connect_attempt() {
        let proxy = EgressTrap::start().await.unwrap();
        let addr = proxy.url().trim_start_matches("http://").to_string();
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        s.write_all(b"CONNECT github.com:443 HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        let mut reply = Vec::new();
        s.read_to_end(&mut reply).await.unwrap();
        assert!(String::from_utf8_lossy(&reply).starts_with("HTTP/1.1 403"));
        let attempts = proxy.attempts();
        assert_eq!(attempts.len(), 1);
        assert!(
            attempts[0].ends_with("CONNECT github.com:443 HTTP/1.1"),
            "{attempts:?}"
        );
    }

    #[tokio::test]
    async fn starts_empty() {
        let proxy = EgressTrap::start().await.unwrap();
        assert!(proxy.attempts().is_empty());
    }
}
