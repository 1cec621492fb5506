//! Which headers the recording proxy passes on and which it records. Forwarded: all of them,
//! credentials included (authentication passes through), but not the hop-by-hop ones
//! (RFC 9110 §7.6.1, and those that `connection` names), with `host` set to the upstream's
//! and no `accept-encoding` (the proxy reads the bodies it relays). Recorded: names
//! lower-case, values as text, without any secret header ([`is_secret_header`]).

use http::header::{ACCEPT_ENCODING, CONTENT_LENGTH, HOST};
use http::{HeaderMap, HeaderValue};

use super::exchange::is_secret_header;

/// Headers as recorded: names lower-case, secret ones left out, values as text.
pub fn recorded(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(name, _)| !is_secret_header(name.as_str()))
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_ascii_lowercase(), value)
        })
        .collect()
}

/// The headers of a request sent on to the upstream whose `host` header is `authority`
/// (`content-length` is left to the client, which knows the body it sends).
pub fn forwarded_request(headers: &HeaderMap, authority: &str) -> HeaderMap {
    let mut out = end_to_end(headers);
    out.remove(HOST);
    out.remove(ACCEPT_ENCODING);
    out.remove(CONTENT_LENGTH);
    if let Ok(host) = HeaderValue::from_str(authority) {
        out.insert(HOST, host);
    }
    out
}

/// The headers of a response passed back to codex.
pub fn forwarded_response(headers: &HeaderMap) -> HeaderMap {
    end_to_end(headers)
}

/// `headers` without the hop-by-hop ones.
fn end_to_end(headers: &HeaderMap) -> HeaderMap {
    let named = named_by_connection(headers);
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let name_str = name.as_str();
        if !is_hop_by_hop(name_str) && !named.iter().any(|n| n == name_str) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// Whether a header is hop-by-hop: for one connection only, never forwarded.
fn is_hop_by_hop(name: &str) -> bool {
    matches!(
        name,
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
    )
}

/// The header names that the `connection` header lists (lower-case).
fn named_by_connection(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(http::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .filter(|name| !name.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn recorded_headers_leave_out_secrets() {
        let headers = map(&[
            ("content-type", "text/event-stream"),
            ("set-cookie", "s=1"),
            ("openai-organization", "org-1"),
        ]);
        assert_eq!(
            recorded(&headers),
            [("content-type".to_string(), "text/event-stream".to_string())]
        );
    }

    #[test]
    fn requests_keep_credentials_and_lose_hop_by_hop_headers_and_compression() {
        let headers = map(&[
            ("authorization", "Bearer sk-1"),
            ("host", "127.0.0.1:5000"),
            ("connection", "keep-alive, x-trace"),
            ("x-trace", "1"),
            ("keep-alive", "timeout=5"),
            ("accept-encoding", "gzip, zstd"),
            ("content-encoding", "zstd"),
            ("content-length", "12"),
        ]);
        let out = forwarded_request(&headers, "api.openai.com");
        let names: Vec<&str> = out.keys().map(|n| n.as_str()).collect();
        assert_eq!(names, ["authorization", "content-encoding", "host"]);
        assert_eq!(out[HOST], "api.openai.com");
        let response = forwarded_response(&map(&[
            ("transfer-encoding", "chunked"),
            ("content-type", "text/event-stream"),
        ]));
        assert_eq!(response.len(), 1);
    }
}
