//! Request body decoding by `content-encoding` (`responses-wire-format.md` §8.3): a
//! comma-separated, case-insensitive list of `zstd`, `gzip` and `identity`.

use std::borrow::Cow;
use std::io::Read;

/// A body that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The encoding is not one the sidecar knows.
    #[error("unsupported content-encoding {0:?} (known: zstd, gzip, identity)")]
    Unsupported(String),
    /// The bytes are not valid for the encoding.
    #[error("body is not valid {encoding}: {message}")]
    Invalid {
        /// The encoding that failed.
        encoding: String,
        /// The decoder's message.
        message: String,
    },
}

/// Decodes `body` as sent with this `content-encoding` header value (`None` when absent).
///
/// The encodings are listed in the order they were applied, so they are undone last first.
///
/// ```
/// use codex_parity_sidecar::decode::decode_body;
/// assert_eq!(decode_body(Some("identity"), b"{}").unwrap(), b"{}");
/// assert!(decode_body(Some("br"), b"{}").is_err());
/// ```
pub fn decode_body(content_encoding: Option<&str>, body: &[u8]) -> Result<Vec<u8>, DecodeError> {
    // Borrowed until a decoder actually produces new bytes.
    let mut data = Cow::Borrowed(body);
    let encodings = content_encoding.unwrap_or("").rsplit(',').map(str::trim);
    for encoding in encodings.filter(|e| !e.is_empty()) {
        data = match encoding.to_ascii_lowercase().as_str() {
            "identity" => data,
            "zstd" => Cow::Owned(zstd::stream::decode_all(&*data).map_err(|e| invalid("zstd", e))?),
            "gzip" | "x-gzip" => {
                let mut out = Vec::new();
                flate2::read::MultiGzDecoder::new(&*data)
                    .read_to_end(&mut out)
                    .map_err(|e| invalid("gzip", e))?;
                Cow::Owned(out)
            }
            other => return Err(DecodeError::Unsupported(other.to_string())),
        };
    }
    Ok(data.into_owned())
}

fn invalid(encoding: &str, error: std::io::Error) -> DecodeError {
    DecodeError::Invalid {
        encoding: encoding.to_string(),
        message: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        zstd::stream::encode_all(data, 3).unwrap()
    }

    #[test]
    fn absent_and_identity_leave_the_body_alone() {
        assert_eq!(decode_body(None, b"abc").unwrap(), b"abc");
        assert_eq!(decode_body(Some(""), b"abc").unwrap(), b"abc");
        assert_eq!(decode_body(Some(" Identity "), b"abc").unwrap(), b"abc");
    }

    #[test]
    fn zstd_and_gzip_decode_case_insensitively() {
        assert_eq!(
            decode_body(Some("zstd"), &zstd(b"{\"a\":1}")).unwrap(),
            b"{\"a\":1}"
        );
        assert_eq!(
            decode_body(Some("GZIP"), &gzip(b"hello")).unwrap(),
            b"hello"
        );
    }

    #[test]
    fn a_list_is_undone_last_applied_first() {
        let twice = zstd(&gzip(b"layers"));
        assert_eq!(decode_body(Some("gzip, zstd"), &twice).unwrap(), b"layers");
        assert!(decode_body(Some("zstd, gzip"), &twice).is_err());
    }

    #[test]
    fn errors_name_the_encoding() {
        let err = decode_body(Some("zstd"), b"not zstd").unwrap_err();
        assert!(err.to_string().contains("zstd"), "{err}");
        let err = decode_body(Some("gzip"), b"not gzip").unwrap_err();
        assert!(err.to_string().contains("gzip"), "{err}");
        let err = decode_body(Some("br"), b"x").unwrap_err();
        assert_eq!(err, DecodeError::Unsupported("br".into()));
    }
}
