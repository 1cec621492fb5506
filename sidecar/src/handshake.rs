//! The WebSocket opening handshake (RFC 6455 §4) over any byte stream, for both ends:
//! [`connect`] as a client, [`accept`] (or [`accept_with`], which may refuse) as a server,
//! each handing the stream on to tungstenite's frame codec. The mock's own upgrades go through
//! hyper and need only [`accept_key`].
//!
//! The pieces without I/O ([`new_key`], [`client_request`], [`client_response`]) serve a
//! blocking client as well:
//!
//! ```
//! use codex_parity_sidecar::handshake::{accept_key, client_request, client_response, request};
//! let key = "dGhlIHNhbXBsZSBub25jZQ==";
//! let sent = client_request(&request("ws://127.0.0.1:9/v1/responses").unwrap(), key).unwrap();
//! assert!(sent.starts_with(b"GET /v1/responses HTTP/1.1\r\nhost: 127.0.0.1:9\r\n"));
//! let answer = format!(
//!     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
//!      Sec-WebSocket-Accept: {}\r\n\r\nframes",
//!     accept_key(key.as_bytes())
//! );
//! let (response, used) = client_response(answer.as_bytes(), key, None).unwrap().unwrap();
//! assert_eq!((response.status().as_u16(), &answer.as_bytes()[used..]), (101, &b"frames"[..]));
//! ```

mod sha1;

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

use http::header::{
    CONNECTION, HOST, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_EXTENSIONS, SEC_WEBSOCKET_KEY,
    SEC_WEBSOCKET_PROTOCOL, SEC_WEBSOCKET_VERSION, UPGRADE,
};
use http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::Role;

use crate::wire::base64;
use crate::wire::url::shown;

/// The GUID every server appends to the client's key (RFC 6455 §1.3).
const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// The longest request or response head read.
const MAX_HEAD: usize = 64 * 1024;
/// The most of a refusal's body kept.
const MAX_BODY: usize = 1 << 20;
/// The most header lines a head may have.
const MAX_HEADERS: usize = 100;
/// How long either side's handshake may take, refusal bodies included.
pub const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Why a handshake gave no WebSocket.
#[derive(Debug)]
pub enum HandshakeError {
    /// The other end answered with this HTTP response instead of switching protocols (as a
    /// client), or this server refused the request with it (its body as sent).
    Refused(Box<Response<Vec<u8>>>),
    /// Reading or writing the stream failed, or it closed during the handshake.
    Io(std::io::Error),
    /// What was read is not a WebSocket handshake: why.
    Invalid(String),
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused(response) => write!(
                f,
                "HTTP {} instead of 101 Switching Protocols",
                response.status()
            ),
            Self::Io(e) => write!(f, "the WebSocket handshake's stream failed: {e}"),
            Self::Invalid(why) => write!(f, "not a WebSocket handshake: {why}"),
        }
    }
}

impl std::error::Error for HandshakeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for HandshakeError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

/// The `Sec-WebSocket-Accept` a server answers the client's `key` with.
pub fn accept_key(key: &[u8]) -> String {
    let mut input = key.to_vec();
    input.extend_from_slice(GUID);
    base64::encode(&sha1::digest(&input))
}

/// A fresh `Sec-WebSocket-Key`: 16 bytes, base64. A nonce, not a secret: the process's
/// randomly seeded hasher, the clock and a counter.
pub fn new_key() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mut bytes = Vec::with_capacity(16);
    for half in 0..2u64 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(nanos);
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.write_u64(half);
        bytes.extend_from_slice(&hasher.finish().to_be_bytes());
    }
    base64::encode(&bytes)
}

/// A handshake request for `url` (`ws://` or `wss://`, without `user:password@`), to add
/// headers to before [`connect`].
pub fn request(url: &str) -> Result<Request<()>, HandshakeError> {
    let invalid = |why: String| HandshakeError::Invalid(format!("{}: {why}", shown(url)));
    let uri: http::Uri = url.parse().map_err(|e| invalid(format!("{e}")))?;
    if !matches!(uri.scheme_str(), Some("ws" | "wss")) || uri.authority().is_none() {
        return Err(invalid("not a ws:// or wss:// URL with a host".into()));
    }
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return Err(invalid(
            "credentials in a WebSocket URL are not sent: give them as a header".into(),
        ));
    }
    Request::get(uri)
        .body(())
        .map_err(|e| invalid(format!("{e}")))
}

/// The bytes of `request`'s handshake with `key`: its path, a `Host` (the URL's authority
/// unless the request has one), the upgrade's own headers, then the request's other headers.
pub fn client_request(request: &Request<()>, key: &str) -> Result<Vec<u8>, HandshakeError> {
    let uri = request.uri();
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut out = format!("GET {path} HTTP/1.1\r\n").into_bytes();
    if !request.headers().contains_key(HOST) {
        let authority = uri.authority().ok_or_else(|| {
            HandshakeError::Invalid(format!("{}: no host", shown(&uri.to_string())))
        })?;
        let host = authority.as_str().rsplit('@').next().unwrap_or_default();
        out.extend_from_slice(format!("host: {host}\r\n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "connection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\n\
             sec-websocket-key: {key}\r\n"
        )
        .as_bytes(),
    );
    // No extension is offered: tungstenite's codec here speaks none.
    let own = [
        CONNECTION,
        UPGRADE,
        SEC_WEBSOCKET_VERSION,
        SEC_WEBSOCKET_KEY,
        SEC_WEBSOCKET_EXTENSIONS,
    ];
    for (name, value) in request.headers() {
        if !own.contains(name) {
            push_header(&mut out, name, value);
        }
    }
    out.extend_from_slice(b"\r\n");
    Ok(out)
}

/// Reads a server's answer to the handshake sent with `key` from the start of `bytes`:
/// `None` while its head is incomplete, else the 101 response and how many bytes its head
/// took (frames may follow). Any other status is [`HandshakeError::Refused`] with the body
/// already in `bytes`; a 101 must upgrade to `websocket`, accept the key, and choose no
/// extension (none is offered) and no subprotocol that `offered_protocols` (the request's
/// `Sec-WebSocket-Protocol`, if any) does not name.
pub fn client_response(
    bytes: &[u8],
    key: &str,
    offered_protocols: Option<&HeaderValue>,
) -> Result<Option<(Response<()>, usize)>, HandshakeError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Response::new(&mut headers);
    let Some(used) = head_end(parsed.parse(bytes), bytes, "response")? else {
        return Ok(None);
    };
    let mut response = Response::new(());
    *response.status_mut() = StatusCode::from_u16(parsed.code.unwrap_or(0))
        .map_err(|e| HandshakeError::Invalid(format!("a bad status: {e}")))?;
    append_headers(response.headers_mut(), parsed.headers)?;
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        let body = bytes[used..].to_vec();
        return Err(HandshakeError::Refused(Box::new(response.map(|()| body))));
    }
    let headers = response.headers();
    if !has_token(headers, UPGRADE, "websocket") || !has_token(headers, CONNECTION, "upgrade") {
        return Err(HandshakeError::Invalid(
            "the 101 has no `Upgrade: websocket` with `Connection: Upgrade`".into(),
        ));
    }
    let accept = headers.get(SEC_WEBSOCKET_ACCEPT);
    if accept.is_none_or(|a| a.as_bytes() != accept_key(key.as_bytes()).as_bytes()) {
        return Err(HandshakeError::Invalid(format!(
            "the 101's Sec-WebSocket-Accept is {accept:?}, not the key's"
        )));
    }
    if let Some(extensions) = headers.get(SEC_WEBSOCKET_EXTENSIONS) {
        return Err(HandshakeError::Invalid(format!(
            "the 101 chose the extension {extensions:?}, which was not offered"
        )));
    }
    if let Some(chosen) = headers.get(SEC_WEBSOCKET_PROTOCOL) {
        let offered = offered_protocols
            .and_then(|o| o.to_str().ok())
            .is_some_and(|o| {
                o.split(',')
                    .any(|p| p.trim().as_bytes() == chosen.as_bytes())
            });
        if !offered {
            return Err(HandshakeError::Invalid(format!(
                "the 101 chose the subprotocol {chosen:?}, which was not offered"
            )));
        }
    }
    Ok(Some((response, used)))
}

/// Performs the client's side over `stream` with a fresh key: a WebSocket on a 101, the
/// response with its body (as far as its `content-length` says, up to 1 MiB) on any other
/// status; within [`HANDSHAKE_TIMEOUT`].
pub async fn connect<S>(
    stream: S,
    request: Request<()>,
) -> Result<(WebSocketStream<S>, Response<()>), HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    bounded(HANDSHAKE_TIMEOUT, connect_unbounded(stream, request)).await
}

/// [`connect`] without its time limit.
async fn connect_unbounded<S>(
    mut stream: S,
    request: Request<()>,
) -> Result<(WebSocketStream<S>, Response<()>), HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let key = new_key();
    let offered = request.headers().get(SEC_WEBSOCKET_PROTOCOL).cloned();
    stream.write_all(&client_request(&request, &key)?).await?;
    stream.flush().await?;
    let mut bytes = Vec::with_capacity(1024);
    loop {
        match client_response(&bytes, &key, offered.as_ref()) {
            Ok(Some((response, used))) => {
                let rest = bytes.split_off(used);
                let socket =
                    WebSocketStream::from_partially_read(stream, rest, Role::Client, None).await;
                return Ok((socket, response));
            }
            Ok(None) => read_more(&mut stream, &mut bytes).await?,
            Err(HandshakeError::Refused(mut response)) => {
                read_body(&mut stream, &mut response).await;
                return Err(HandshakeError::Refused(response));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Performs the server's side over `stream`, accepting any valid handshake: the WebSocket
/// and the request it came with.
pub async fn accept<S>(stream: S) -> Result<(WebSocketStream<S>, Request<()>), HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    accept_with(stream, |_| Ok(())).await
}

/// Performs the server's side over `stream`; `check` sees a valid request first and may
/// refuse it with a response of its own (sent, and returned as [`HandshakeError::Refused`]).
/// An invalid request is answered 400 with the reason. Within [`HANDSHAKE_TIMEOUT`].
pub async fn accept_with<S, F>(
    stream: S,
    check: F,
) -> Result<(WebSocketStream<S>, Request<()>), HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
    F: FnOnce(&Request<()>) -> Result<(), Box<Response<Vec<u8>>>>,
{
    bounded(HANDSHAKE_TIMEOUT, accept_unbounded(stream, check)).await
}

/// `work` within `limit`, else a timed-out I/O error.
async fn bounded<T>(
    limit: std::time::Duration,
    work: impl std::future::Future<Output = Result<T, HandshakeError>>,
) -> Result<T, HandshakeError> {
    tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
        Err(HandshakeError::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no complete handshake within {limit:?}"),
        )))
    })
}

/// [`accept_with`] without its time limit.
async fn accept_unbounded<S, F>(
    mut stream: S,
    check: F,
) -> Result<(WebSocketStream<S>, Request<()>), HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
    F: FnOnce(&Request<()>) -> Result<(), Box<Response<Vec<u8>>>>,
{
    let mut bytes = Vec::with_capacity(1024);
    let (request, used) = loop {
        match server_request(&bytes) {
            Ok(Some(parsed)) => break parsed,
            Ok(None) => read_more(&mut stream, &mut bytes).await?,
            Err(e) => {
                let mut answer = Response::new(e.to_string().into_bytes());
                *answer.status_mut() = StatusCode::BAD_REQUEST;
                stream.write_all(&response_bytes(&answer)).await?;
                stream.flush().await?;
                return Err(e);
            }
        }
    };
    if let Err(refusal) = check(&request) {
        stream.write_all(&response_bytes(&refusal)).await?;
        stream.flush().await?;
        return Err(HandshakeError::Refused(refusal));
    }
    let key = request
        .headers()
        .get(SEC_WEBSOCKET_KEY)
        .map(|k| accept_key(k.as_bytes()))
        .unwrap_or_default();
    let answer = format!(
        "HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: websocket\r\n\
         sec-websocket-accept: {key}\r\n\r\n"
    );
    stream.write_all(answer.as_bytes()).await?;
    stream.flush().await?;
    let rest = bytes.split_off(used);
    let socket = WebSocketStream::from_partially_read(stream, rest, Role::Server, None).await;
    Ok((socket, request))
}

/// Reads a client's handshake request from the start of `bytes`: `None` while its head is
/// incomplete, else the request and how many bytes its head took.
fn server_request(bytes: &[u8]) -> Result<Option<(Request<()>, usize)>, HandshakeError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    let Some(used) = head_end(parsed.parse(bytes), bytes, "request")? else {
        return Ok(None);
    };
    if parsed.version != Some(1) {
        return Err(HandshakeError::Invalid("not HTTP/1.1".into()));
    }
    if parsed.method != Some("GET") {
        return Err(HandshakeError::Invalid(format!(
            "the method is {:?}, not GET",
            parsed.method.unwrap_or_default()
        )));
    }
    let mut request = Request::get(parsed.path.unwrap_or("/"))
        .body(())
        .map_err(|e| HandshakeError::Invalid(format!("a bad path: {e}")))?;
    append_headers(request.headers_mut(), parsed.headers)?;
    let headers = request.headers();
    if !headers.contains_key(HOST) {
        return Err(HandshakeError::Invalid("no Host".into()));
    }
    if !has_token(headers, UPGRADE, "websocket") || !has_token(headers, CONNECTION, "upgrade") {
        return Err(HandshakeError::Invalid(
            "no `Upgrade: websocket` with `Connection: Upgrade`".into(),
        ));
    }
    if request
        .headers()
        .get(SEC_WEBSOCKET_VERSION)
        .map(|v| v.as_bytes())
        != Some(b"13")
    {
        return Err(HandshakeError::Invalid(
            "Sec-WebSocket-Version is not 13".into(),
        ));
    }
    if !request.headers().contains_key(SEC_WEBSOCKET_KEY) {
        return Err(HandshakeError::Invalid("no Sec-WebSocket-Key".into()));
    }
    Ok(Some((request, used)))
}

/// Whether a `name` header of `headers` lists `token` (case aside).
fn has_token(headers: &http::HeaderMap, name: HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|v| {
        v.to_str()
            .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    })
}

/// Where a head that httparse read as `parsed` from `bytes` ends: `None` while it is
/// incomplete (and may still grow, up to [`MAX_HEAD`]); `what` names it in errors.
fn head_end(
    parsed: httparse::Result<usize>,
    bytes: &[u8],
    what: &str,
) -> Result<Option<usize>, HandshakeError> {
    match parsed {
        Ok(httparse::Status::Complete(used)) => Ok(Some(used)),
        Ok(httparse::Status::Partial) if bytes.len() > MAX_HEAD => Err(HandshakeError::Invalid(
            format!("no end to the head in {MAX_HEAD} bytes"),
        )),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(e) => Err(HandshakeError::Invalid(format!("a bad HTTP {what}: {e}"))),
    }
}

/// Appends a head's header lines to `map`, as `http`'s types.
fn append_headers(
    map: &mut http::HeaderMap,
    headers: &[httparse::Header<'_>],
) -> Result<(), HandshakeError> {
    for header in headers {
        let name = HeaderName::from_bytes(header.name.as_bytes())
            .map_err(|e| HandshakeError::Invalid(format!("a bad header name: {e}")))?;
        let value = HeaderValue::from_bytes(header.value)
            .map_err(|e| HandshakeError::Invalid(format!("a bad value of {name}: {e}")))?;
        map.append(name, value);
    }
    Ok(())
}

/// Appends `name: value` and its line end.
fn push_header(out: &mut Vec<u8>, name: &HeaderName, value: &HeaderValue) {
    out.extend_from_slice(name.as_str().as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// The bytes of `response`, with a `content-length` for its body and `connection: close`.
fn response_bytes(response: &Response<Vec<u8>>) -> Vec<u8> {
    let status = response.status();
    let reason = status.canonical_reason().unwrap_or("");
    let mut out = format!("HTTP/1.1 {} {reason}\r\n", status.as_u16()).into_bytes();
    for (name, value) in response.headers() {
        if name != http::header::CONTENT_LENGTH && name != CONNECTION {
            push_header(&mut out, name, value);
        }
    }
    let length = response.body().len();
    out.extend_from_slice(
        format!("content-length: {length}\r\nconnection: close\r\n\r\n").as_bytes(),
    );
    out.extend_from_slice(response.body());
    out
}

/// Reads once more from `stream` onto `bytes`; the stream's end is an error here.
async fn read_more<S: AsyncRead + Unpin>(
    stream: &mut S,
    bytes: &mut Vec<u8>,
) -> Result<(), HandshakeError> {
    let mut chunk = [0u8; 4096];
    let n = stream.read(&mut chunk).await?;
    if n == 0 {
        return Err(HandshakeError::Io(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!(
                "the connection closed after {} bytes of the handshake",
                bytes.len()
            ),
        )));
    }
    bytes.extend_from_slice(&chunk[..n]);
    Ok(())
}

/// Completes a refusal's body to its `content-length` (at most [`MAX_BODY`]); without one,
/// the body is what was already read. A stream that ends early leaves it short.
async fn read_body<S: AsyncRead + Unpin>(stream: &mut S, response: &mut Response<Vec<u8>>) {
    let length = response
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.trim().parse::<usize>().ok());
    let Some(length) = length.map(|l| l.min(MAX_BODY)) else {
        return;
    };
    let body = response.body_mut();
    while body.len() < length {
        if read_more(stream, body).await.is_err() {
            break;
        }
    }
    body.truncate(length);
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    #[test]
    fn the_accept_key_is_the_rfc_example() {
        // RFC 6455 §1.3.
        assert_eq!(
            accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn keys_are_16_bytes_and_differ() {
        let (a, b) = (new_key(), new_key());
        assert_eq!((a.len(), b.len()), (24, 24));
        assert!(a.ends_with("==") && a != b, "{a} {b}");
    }

    #[test]
    fn a_request_names_its_path_host_and_headers_once() {
        let mut request = request("ws://127.0.0.1:9/v1/responses?x=1").unwrap();
        let headers = request.headers_mut();
        headers.insert("authorization", HeaderValue::from_static("Bearer t"));
        headers.insert("sec-websocket-key", HeaderValue::from_static("theirs"));
        let text = String::from_utf8(client_request(&request, "k").unwrap()).unwrap();
        assert!(text.starts_with("GET /v1/responses?x=1 HTTP/1.1\r\nhost: 127.0.0.1:9\r\n"));
        assert!(text.contains("authorization: Bearer t\r\n"));
        assert_eq!(text.matches("sec-websocket-key").count(), 1, "{text}");
        assert!(text.contains("sec-websocket-key: k\r\n") && text.ends_with("\r\n\r\n"));
        assert!(super::request("http://x/").is_err());
        let Err(HandshakeError::Invalid(why)) = super::request("ws://me:s3cret@h/x") else {
            panic!("credentials taken");
        };
        assert!(
            why.contains("ws://<redacted>@h/x") && !why.contains("s3cret"),
            "{why}"
        );
        let mut manual = Request::get("ws://me:s3cret@h:1/x").body(()).unwrap();
        let text = String::from_utf8(client_request(&manual, "k").unwrap()).unwrap();
        assert!(
            text.contains("host: h:1\r\n") && !text.contains("s3cret"),
            "{text}"
        );
        manual.headers_mut().insert(
            "sec-websocket-extensions",
            HeaderValue::from_static("permessage-deflate"),
        );
        let text = String::from_utf8(client_request(&manual, "k").unwrap()).unwrap();
        assert!(!text.contains("permessage-deflate"), "{text}");
    }

    #[test]
    fn an_answer_is_partial_refused_or_checked() {
        let key = "a2V5";
        let ok = format!(
            "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\
             sec-websocket-accept: {}\r\n\r\n",
            accept_key(key.as_bytes())
        );
        assert!(
            client_response(&ok.as_bytes()[..20], key, None)
                .unwrap()
                .is_none()
        );
        let (_, used) = client_response(ok.as_bytes(), key, None).unwrap().unwrap();
        assert_eq!(used, ok.len());
        let wrong = "HTTP/1.1 101 Switching Protocols\r\nsec-websocket-accept: x\r\n\r\n";
        assert!(matches!(
            client_response(wrong.as_bytes(), key, None),
            Err(HandshakeError::Invalid(_))
        ));
        let with = |extra: &str| ok.replace("\r\n\r\n", &format!("\r\n{extra}\r\n\r\n"));
        let deflate = with("sec-websocket-extensions: permessage-deflate");
        assert!(matches!(
            client_response(deflate.as_bytes(), key, None),
            Err(HandshakeError::Invalid(why)) if why.contains("extension")
        ));
        let chat = with("sec-websocket-protocol: chat");
        assert!(client_response(chat.as_bytes(), key, None).is_err());
        let offered = HeaderValue::from_static("superchat, chat");
        assert!(client_response(chat.as_bytes(), key, Some(&offered)).is_ok());
        let no_upgrade = ok.replace("upgrade: websocket\r\n", "");
        assert!(client_response(no_upgrade.as_bytes(), key, None).is_err());
        let refused = b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 5\r\n\r\nno to";
        let Err(HandshakeError::Refused(response)) = client_response(refused, key, None) else {
            panic!("not refused");
        };
        assert_eq!(
            (response.status().as_u16(), response.body().as_slice()),
            (401, &b"no to"[..])
        );
    }

    /// Both ends over an in-memory pipe: a refusal with its body, then a WebSocket both ways.
    #[tokio::test]
    async fn a_client_and_a_server_talk_or_refuse() {
        let serve = |stream| async move {
            accept_with(stream, |request| {
                if request
                    .headers()
                    .get("authorization")
                    .is_some_and(|a| a == "Bearer right")
                {
                    return Ok(());
                }
                let mut refusal = Response::new(b"no token".to_vec());
                *refusal.status_mut() = StatusCode::UNAUTHORIZED;
                Err(Box::new(refusal))
            })
            .await
        };
        let (client, server) = tokio::io::duplex(4096);
        let served = tokio::spawn(serve(server));
        let Err(HandshakeError::Refused(response)) =
            connect(client, request("ws://h/x").unwrap()).await
        else {
            panic!("served without the token");
        };
        assert_eq!(
            (response.status().as_u16(), response.body().as_slice()),
            (401, &b"no token"[..])
        );
        assert!(matches!(
            served.await.unwrap(),
            Err(HandshakeError::Refused(_))
        ));

        let (client, server) = tokio::io::duplex(4096);
        let served = tokio::spawn(serve(server));
        let mut with_token = request("ws://h/x").unwrap();
        with_token
            .headers_mut()
            .insert("authorization", HeaderValue::from_static("Bearer right"));
        let (mut client, response) = connect(client, with_token).await.unwrap();
        assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
        let (mut server, seen) = served.await.unwrap().unwrap();
        assert_eq!(seen.uri().path(), "/x");
        client.send(Message::text("ping?")).await.unwrap();
        assert_eq!(
            server.next().await.unwrap().unwrap(),
            Message::text("ping?")
        );
        server.send(Message::text("pong")).await.unwrap();
        assert_eq!(client.next().await.unwrap().unwrap(), Message::text("pong"));
    }

    /// HTTP/1.0, a missing Host or a wrong version are refused like a request without the
    /// upgrade: 400, naming why.
    #[tokio::test]
    async fn requests_short_of_rfc_6455_are_answered_400() {
        let upgrade = "upgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-key: a2V5\r\n";
        for (head, why) in [
            (
                format!("GET / HTTP/1.0\r\nhost: h\r\n{upgrade}sec-websocket-version: 13\r\n\r\n"),
                "not HTTP/1.1",
            ),
            (
                format!("GET / HTTP/1.1\r\n{upgrade}sec-websocket-version: 13\r\n\r\n"),
                "no Host",
            ),
            (
                format!("GET / HTTP/1.1\r\nhost: h\r\n{upgrade}sec-websocket-version: 8\r\n\r\n"),
                "not 13",
            ),
        ] {
            let (mut client, server) = tokio::io::duplex(4096);
            let served = tokio::spawn(accept(server));
            client.write_all(head.as_bytes()).await.unwrap();
            let mut answer = String::new();
            client.read_to_string(&mut answer).await.unwrap();
            assert!(
                answer.starts_with("HTTP/1.1 400 Bad Request\r\n") && answer.ends_with(why),
                "{answer}"
            );
            assert!(matches!(
                served.await.unwrap(),
                Err(HandshakeError::Invalid(_))
            ));
        }
    }

    /// A server that never answers costs the handshake's limit (here 50 ms), not forever;
    /// a client that never asks, the same.
    #[tokio::test]
    async fn a_silent_peer_times_out() {
        let limit = std::time::Duration::from_millis(50);
        let (client, _server) = tokio::io::duplex(4096);
        let waited = bounded(
            limit,
            connect_unbounded(client, request("ws://h/").unwrap()),
        );
        let Err(HandshakeError::Io(e)) = waited.await else {
            panic!("answered");
        };
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        let (_client, server) = tokio::io::duplex(4096);
        let waited = bounded(limit, accept_unbounded(server, |_| Ok(())));
        assert!(
            matches!(waited.await, Err(HandshakeError::Io(e)) if e.kind() == std::io::ErrorKind::TimedOut)
        );
    }

    /// A request that is no upgrade gets a 400 naming why.
    #[tokio::test]
    async fn a_plain_request_is_answered_400() {
        let (mut client, server) = tokio::io::duplex(4096);
        let served = tokio::spawn(accept(server));
        client
            .write_all(b"GET / HTTP/1.1\r\nhost: h\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{answer}"
        );
        assert!(
            answer.ends_with(
                "not a WebSocket handshake: no `Upgrade: websocket` with `Connection: Upgrade`"
            ),
            "{answer}"
        );
        assert!(matches!(
            served.await.unwrap(),
            Err(HandshakeError::Invalid(_))
        ));
    }
}
