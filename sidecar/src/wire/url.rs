//! URLs as they may be shown in messages: what could be a secret in them replaced.

/// `url` as it may be shown: its user information and its query or fragment replaced by
/// `<redacted>`.
pub fn shown(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (rest, tail) = match rest.find(['?', '#']) {
        Some(at) => (&rest[..at], format!("{}<redacted>", &rest[at..at + 1])),
        None => (rest, String::new()),
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let authority = match authority.rsplit_once('@') {
        Some((_, host)) => format!("<redacted>@{host}"),
        None => authority.to_string(),
    };
    let sep = if url.contains("://") { "://" } else { "" };
    format!("{scheme}{sep}{authority}{path}{tail}")
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn credentials_query_and_fragment_are_replaced() {
        assert_eq!(shown("ws://me:s3cret@h:1/x"), "ws://<redacted>@h:1/x");
        assert_eq!(shown("http://h/v1?key=k#f"), "http://h/v1?<redacted>");
        assert_eq!(shown("https://h/v1#f"), "https://h/v1#<redacted>");
        assert_eq!(shown("ws://127.0.0.1:9/"), "ws://127.0.0.1:9/");
    }
}
