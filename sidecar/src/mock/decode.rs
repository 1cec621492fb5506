//! Request body decoding by `content-encoding` (`responses-wire-format.md` §8.3): a
//! comma-separated, case-insensitive list of `zstd`, `gzip` and `identity`.

use std::borrow::Cow;
use std::io::Read;

use ruzstd::decoding::StreamingDecoder;
use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};

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
            "zstd" => Cow::Owned(zstd_decoded(&data).map_err(|e| invalid("zstd", e))?),
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

/// Every frame of a zstd body, one after the other (skippable frames skipped, checksums
/// checked).
fn zstd_decoded(mut input: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    while !input.is_empty() {
        let mut frame = match StreamingDecoder::new(&mut input) {
            Ok(frame) => frame,
            Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                length,
                ..
            })) => {
                input = input
                    .get(length as usize..)
                    .ok_or("a skippable frame runs past the end of the body")?;
                continue;
            }
            Err(e) => return Err(e.to_string()),
        };
        frame.read_to_end(&mut out).map_err(|e| e.to_string())?;
        // The decoder leaves the frame's checksum to its caller.
        let frame = frame.into_frame_decoder();
        if let Some(sent) = frame.get_checksum_from_data()
            && frame.get_calculated_checksum() != Some(sent)
        {
            return Err("the frame's checksum does not match its content".into());
        }
    }
    Ok(out)
}

fn invalid(encoding: &str, error: impl std::fmt::Display) -> DecodeError {
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
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    }

    /// A request body compressed by the reference implementation (zstd 1.5.7, level 3, with
    /// a checksum), as codex's own encoder writes them.
    const REFERENCE_FRAME: &str = "28b52ffd04580d030042c6131880a9e9e0bb68dbb4edfee0a3b40c3594d129848b665074a8ab0ae56d8ea24c9bb18c35004ba9e1dbce4473709a07916dd4a4be5b106db770a454f3dd44912f0477aae41cb6000241f35d4a40f322050029c6558ebf6a4338752018661d5e8b693a";

    fn unhex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn frames_of_the_reference_encoder_decode_one_after_another() {
        let body = br#"{"model":"mock-model","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hello hello hello"}]}],"stream":true}"#;
        let frame = unhex(REFERENCE_FRAME);
        assert_eq!(decode_body(Some("zstd"), &frame).unwrap(), body);
        // Two frames with a skippable frame (magic 0x184D2A50, 3 bytes) between them.
        let mut two = frame.clone();
        two.extend_from_slice(&[0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 1, 2, 3]);
        two.extend_from_slice(&frame);
        assert_eq!(
            decode_body(Some("zstd"), &two).unwrap(),
            [&body[..], body].concat()
        );
        // A frame cut short, or whose checksum does not match, is an error, never less data.
        let cut = &frame[..frame.len() - 3];
        assert!(decode_body(Some("zstd"), cut).is_err());
        let mut bad = frame.clone();
        let last = bad.len() - 1;
        bad[last] ^= 0xff;
        assert!(decode_body(Some("zstd"), &bad).is_err());
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
