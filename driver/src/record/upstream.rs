//! The upstream of the recording proxy: a Responses API base URL (`https://api.openai.com/v1`,
//! or another mock on `http://127.0.0.1:PORT/v1`) parsed into [`Upstream`], and the three
//! things the proxy asks of it: a TCP stream (TLS for `https`, with the Mozilla roots of
//! `webpki-roots` and rustls on ring), one HTTP/1.1 request on it (hyper's low-level client,
//! a connection per request), and a WebSocket client connection on it (the sidecar's
//! [`handshake`] over that same stream, then tungstenite's frames, so neither needs TLS of its
//! own). Every error names the URL.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use codex_parity_sidecar::handshake::{self, HandshakeError};
use codex_parity_sidecar::url::shown;
use http::{HeaderMap, Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_tungstenite::WebSocketStream;

/// How long connecting to the upstream (TCP and TLS) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The secret parts of an upstream URL, each with what it is: its user information, its
/// query and fragment (a key in `?api_key=…`), for the recording's redactor.
pub fn secrets_of(url: &str) -> Vec<(String, String)> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let mut out = Vec::new();
    let (before, tail) = match rest.find(['?', '#']) {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    let authority = &before[..before.find('/').unwrap_or(before.len())];
    if let Some((user, _)) = authority.rsplit_once('@') {
        out.push((
            user.to_string(),
            "the upstream URL's credentials".to_string(),
        ));
        if let Some((_, password)) = user.split_once(':') {
            out.push((
                password.to_string(),
                "the upstream URL's password".to_string(),
            ));
        }
    }
    if let Some(tail) = tail.filter(|t| !t.is_empty()) {
        out.push((tail.to_string(), "the upstream URL's query".to_string()));
        for part in tail.split(['&', '#']) {
            if let Some((_, value)) = part.split_once('=') {
                out.push((
                    value.to_string(),
                    "a value of the upstream URL's query".to_string(),
                ));
            }
        }
    }
    out
}

/// A parsed upstream base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    url: String,
    tls: bool,
    host: String,
    port: u16,
    prefix: String,
}

impl Upstream {
    /// Parses `http://HOST[:PORT][/PREFIX]` or `https://…` (an IPv6 host in brackets); a
    /// trailing `/` of the prefix is dropped, a query or fragment is refused.
    pub fn parse(raw: &str) -> anyhow::Result<Upstream> {
        // Errors name the URL without what it must not carry (credentials, a query).
        let url = &shown(raw);
        let trimmed = raw.trim().trim_end_matches('/');
        let (tls, rest) = if let Some(rest) = trimmed.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = trimmed.strip_prefix("http://") {
            (false, rest)
        } else {
            bail!("the upstream URL {url:?} must start with http:// or https://");
        };
        if rest.contains(['?', '#']) {
            bail!("the upstream URL {url:?} must not have a query or a fragment");
        }
        let (authority, prefix) = match rest.find('/') {
            Some(slash) => rest.split_at(slash),
            None => (rest, ""),
        };
        if authority.contains('@') {
            bail!("the upstream URL {url:?} must not carry credentials");
        }
        let default_port = if tls { 443 } else { 80 };
        let (host, port) = split_authority(authority)
            .with_context(|| format!("the upstream URL {url:?} has no usable host and port"))?;
        let port = match port {
            Some(port) => port
                .parse::<u16>()
                .with_context(|| format!("the port of the upstream URL {url:?}"))?,
            None => default_port,
        };
        Ok(Upstream {
            url: trimmed.to_string(),
            tls,
            host: host.to_string(),
            port,
            prefix: prefix.to_string(),
        })
    }

    /// The base URL as given, without a trailing `/`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether it is reached over TLS (`https`).
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// The host name or address (an IPv6 address without brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port (443 or 80 when the URL names none).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The path prefix (`/v1`; empty for none).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// What the `host` header says: the host, with the port when it is not the scheme's.
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == if self.tls { 443 } else { 80 } {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// The request target upstream for `rest` (a path with its query, below the base URL):
    /// the prefix, then `rest`.
    pub fn target(&self, rest: &str) -> String {
        let rest = if rest.is_empty() || rest.starts_with(['/', '?']) {
            rest.to_string()
        } else {
            format!("/{rest}")
        };
        let target = format!("{}{rest}", self.prefix);
        if target.starts_with('/') {
            target
        } else {
            format!("/{target}")
        }
    }

    /// Opens a TCP stream to the upstream, with the TLS handshake done for `https`, within
    /// [`CONNECT_TIMEOUT`].
    pub async fn connect(&self) -> anyhow::Result<UpstreamStream> {
        match tokio::time::timeout(CONNECT_TIMEOUT, self.connect_now()).await {
            Ok(connected) => connected,
            Err(_) => bail!(
                "the upstream {} did not accept a connection within {} s",
                self.url,
                CONNECT_TIMEOUT.as_secs()
            ),
        }
    }

    /// [`Upstream::connect`] without its time limit.
    async fn connect_now(&self) -> anyhow::Result<UpstreamStream> {
        let tcp = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| {
                let what = if e.kind() == io::ErrorKind::ConnectionRefused {
                    "refused the connection"
                } else {
                    "could not be reached"
                };
                anyhow::Error::new(e).context(format!("the upstream {} {what}", self.url))
            })?;
        let _ = tcp.set_nodelay(true);
        if !self.tls {
            return Ok(UpstreamStream::Plain(tcp));
        }
        let name = rustls::pki_types::ServerName::try_from(self.host.clone())
            .with_context(|| format!("the host of the upstream {} is not a TLS name", self.url))?;
        let config = tls_config()
            .with_context(|| format!("setting up TLS for the upstream {}", self.url))?;
        let tls = TlsConnector::from(config)
            .connect(name, tcp)
            .await
            .with_context(|| format!("the TLS handshake with the upstream {} failed", self.url))?;
        Ok(UpstreamStream::Tls(Box::new(tls)))
    }

    /// Sends one HTTP/1.1 request on a connection of its own and returns the response as soon
    /// as its head arrived (the body streams from the connection, driven by a task that ends
    /// with it). The request's URI must be the target (see [`Upstream::target`]) and its
    /// headers complete, `host` included.
    pub async fn send(&self, request: Request<Full<Bytes>>) -> anyhow::Result<Response<Incoming>> {
        let what = format!("{} {}", request.method(), request.uri());
        let stream = self.connect().await?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .with_context(|| {
                format!(
                    "the HTTP/1.1 handshake with the upstream {} failed",
                    self.url
                )
            })?;
        tokio::spawn(async move {
            // Its error is the response's or the body's, seen by whoever reads them.
            let _ = connection.await;
        });
        sender
            .send_request(request)
            .await
            .with_context(|| format!("the upstream {} did not answer {what}", self.url))
    }

    /// Opens a WebSocket to `rest` (a path with its query, below the base URL) with these
    /// extra handshake headers (the client library sets `host`, `connection`, `upgrade` and
    /// the `sec-websocket-key` and `-version` itself; these are skipped if given).
    pub async fn websocket(
        &self,
        rest: &str,
        headers: &HeaderMap,
    ) -> Result<(WebSocketStream<UpstreamStream>, http::Response<()>), WebSocketError> {
        let scheme = if self.tls { "wss" } else { "ws" };
        let url = format!("{scheme}://{}{}", self.authority(), self.target(rest));
        let mut request = handshake::request(&url)
            .with_context(|| format!("building the WebSocket request for {url}"))
            .map_err(WebSocketError::Other)?;
        for (name, value) in headers {
            let skipped = matches!(
                name.as_str(),
                "host"
                    | "connection"
                    | "upgrade"
                    | "sec-websocket-key"
                    | "sec-websocket-version"
                    | "sec-websocket-extensions"
            );
            if !skipped {
                request.headers_mut().append(name.clone(), value.clone());
            }
        }
        let stream = self.connect().await.map_err(WebSocketError::Other)?;
        match handshake::connect(stream, request).await {
            Ok(pair) => Ok(pair),
            Err(HandshakeError::Refused(response)) => Err(WebSocketError::Refused(response)),
            Err(e) => Err(WebSocketError::Other(anyhow::Error::new(e).context(
                format!(
                    "the WebSocket handshake with the upstream {} failed ({url})",
                    self.url
                ),
            ))),
        }
    }
}

/// Why [`Upstream::websocket`] got no WebSocket.
#[derive(Debug)]
pub enum WebSocketError {
    /// The upstream answered the upgrade with an HTTP response instead of a 101.
    Refused(Box<http::Response<Vec<u8>>>),
    /// It could not be reached, or the handshake broke.
    Other(anyhow::Error),
}

/// `host[:port]` or `[v6][:port]`: the host and the port text, if any.
fn split_authority(authority: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':')?),
        };
        return (!host.is_empty()).then_some((host, port));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    (!host.is_empty() && !host.contains(':')).then_some((host, port))
}

/// A PEM file of certificates to trust beside the built-in roots (a TLS-inspecting proxy's
/// CA, a test's own): the variable OpenSSL and most tools read.
pub const CA_FILE_ENV: &str = "SSL_CERT_FILE";

/// The TLS client configuration, built once: the webpki roots and those of [`CA_FILE_ENV`],
/// ring, HTTP/1.1 by ALPN.
fn tls_config() -> anyhow::Result<Arc<rustls::ClientConfig>> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    if let Some(config) = CONFIG.get() {
        return Ok(config.clone());
    }
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    if let Some(path) = std::env::var_os(CA_FILE_ENV) {
        use rustls::pki_types::pem::PemObject;
        let shown = std::path::Path::new(&path).display().to_string();
        let certs = rustls::pki_types::CertificateDer::pem_file_iter(&path)
            .with_context(|| format!("reading the certificates of ${CA_FILE_ENV} ({shown})"))?;
        for cert in certs {
            let cert =
                cert.with_context(|| format!("a certificate of ${CA_FILE_ENV} ({shown})"))?;
            roots
                .add(cert)
                .with_context(|| format!("trusting a certificate of ${CA_FILE_ENV} ({shown})"))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("the TLS protocol versions")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(CONFIG.get_or_init(|| Arc::new(config)).clone())
}

/// A connection to the upstream: plain TCP or TLS over it.
pub enum UpstreamStream {
    /// `http`.
    Plain(TcpStream),
    /// `https`.
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for UpstreamStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            UpstreamStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            UpstreamStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for UpstreamStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            UpstreamStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            UpstreamStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            UpstreamStream::Plain(s) => Pin::new(s).poll_flush(cx),
            UpstreamStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            UpstreamStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            UpstreamStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_parse_into_scheme_host_port_and_prefix() {
        let openai = Upstream::parse("https://api.openai.com/v1/").unwrap();
        assert!(openai.is_tls());
        assert_eq!(
            (openai.host(), openai.port(), openai.prefix()),
            ("api.openai.com", 443, "/v1")
        );
        assert_eq!(openai.authority(), "api.openai.com");
        assert_eq!(openai.url(), "https://api.openai.com/v1");
        assert_eq!(
            openai.target("/models?client_version=1"),
            "/v1/models?client_version=1"
        );

        let local = Upstream::parse("http://127.0.0.1:4000/v1").unwrap();
        assert!(!local.is_tls());
        assert_eq!(local.authority(), "127.0.0.1:4000");
        assert_eq!(local.target("/responses"), "/v1/responses");

        let bare = Upstream::parse("http://[::1]:8080").unwrap();
        assert_eq!((bare.host(), bare.port(), bare.prefix()), ("::1", 8080, ""));
        assert_eq!(bare.authority(), "[::1]:8080");
        assert_eq!(bare.target("/responses"), "/responses");
        assert_eq!(bare.target(""), "/");
    }

    #[test]
    fn unusable_base_urls_are_refused_with_the_url() {
        for url in ["ftp://x/v1", "http://", "http://host:port/v1"] {
            let error = format!("{:#}", Upstream::parse(url).unwrap_err());
            assert!(error.contains(url), "{url}: {error}");
        }
        // Credentials and a query are refused without being repeated.
        for (url, shown) in [
            ("http://h/v1?key=planted-1", "http://h/v1?<redacted>"),
            ("https://user:planted-2@h/v1", "https://<redacted>@h/v1"),
            (
                "https://user:planted-3@h/v1#frag",
                "https://<redacted>@h/v1#<redacted>",
            ),
        ] {
            let error = format!("{:#}", Upstream::parse(url).unwrap_err());
            assert!(error.contains(shown), "{url}: {error}");
            assert!(!error.contains("planted"), "{url}: {error}");
            assert!(!secrets_of(url).is_empty(), "{url}");
        }
        assert!(secrets_of("https://api.openai.com/v1").is_empty());
    }

    #[tokio::test]
    async fn a_refused_connection_names_the_url() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let upstream = Upstream::parse(&format!("http://127.0.0.1:{port}/v1")).unwrap();
        let error = format!("{:#}", upstream.connect().await.err().unwrap());
        let expected = format!("the upstream http://127.0.0.1:{port}/v1 refused the connection: ");
        assert!(error.starts_with(&expected), "{error}");
    }

    #[tokio::test]
    async fn a_tls_handshake_with_a_plain_server_fails_naming_the_url() {
        let server = codex_parity_sidecar::Server::start("127.0.0.1", 0)
            .await
            .unwrap();
        let url = server.base_url().replace("http://", "https://");
        let upstream = Upstream::parse(&url).unwrap();
        let error = format!("{:#}", upstream.connect().await.err().unwrap());
        assert!(
            error.starts_with(&format!("the TLS handshake with the upstream {url} failed")),
            "{error}"
        );
    }
}
