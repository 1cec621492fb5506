//! JSON Web Tokens (RFC 7519) in their compact form, as the scenarios hand them to codex:
//! unsigned (`alg: none`, for claims codex reads without checking) or signed with HMAC
//! SHA-256 (`alg: HS256`, for a listener started with `--ws-auth signed-bearer-token`).

use ring::hmac;
use serde_json::{Value, json};

use codex_parity_sidecar::base64;

/// `header.claims.unsigned`: a token whose claims are read, never verified.
pub fn unsigned(claims: &Value) -> String {
    format!(
        "{}.{}.unsigned",
        url_part(&json!({"alg": "none", "typ": "JWT"})),
        url_part(claims)
    )
}

/// `header.claims.signature` with an HS256 signature made with `secret`.
pub fn hs256(claims: &Value, secret: &[u8]) -> String {
    let signed = format!(
        "{}.{}",
        url_part(&json!({"alg": "HS256", "typ": "JWT"})),
        url_part(claims)
    );
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let tag = hmac::sign(&key, signed.as_bytes());
    format!("{signed}.{}", url_base64(tag.as_ref()))
}

/// The claims of a compact token (`None` when it is not one).
pub fn claims(token: &str) -> Option<Value> {
    let payload = token.split('.').nth(1)?;
    serde_json::from_slice(&decode_url(payload)?).ok()
}

/// Seconds since the Unix epoch, now.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Unpadded URL-safe base64 of a JSON value (RFC 7515 §2).
fn url_part(value: &Value) -> String {
    url_base64(value.to_string().as_bytes())
}

/// Unpadded URL-safe base64 of bytes.
fn url_base64(bytes: &[u8]) -> String {
    base64::encode(bytes)
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_")
}

/// Decodes unpadded URL-safe base64.
fn decode_url(text: &str) -> Option<Vec<u8>> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::new();
    for c in text.bytes() {
        let v = ALPHABET.iter().position(|&a| a == c)? as u32;
        bits = bits << 6 | v;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count & 0xff) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_base64_round_trips() {
        for text in ["", "f", "fo", "foo", "foob", "\u{fb}\u{ff}?>"] {
            let v = Value::String(text.into());
            let encoded = url_part(&v);
            assert!(!encoded.contains(['=', '+', '/']), "{encoded}");
            assert_eq!(decode_url(&encoded).unwrap(), v.to_string().into_bytes());
        }
    }

    #[test]
    fn an_unsigned_token_reads_back_its_claims() {
        let t = unsigned(&json!({"sub": "first"}));
        assert_eq!(t.split('.').count(), 3);
        assert_eq!(claims(&t), Some(json!({"sub": "first"})));
        assert_eq!(claims("not-a-jwt"), None);
    }

    /// RFC 7515 appendix A.1's HS256 example: its key and signing input give its signature.
    #[test]
    fn hs256_signs_like_rfc_7515() {
        let key = decode_url(
            "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow",
        )
        .unwrap();
        let input = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ";
        let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &key), input.as_bytes());
        assert_eq!(
            url_base64(tag.as_ref()),
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
        );
        let made = hs256(&json!({"iss": "joe"}), &key);
        let (signed, signature) = made.rsplit_once('.').unwrap();
        let again = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &key), signed.as_bytes());
        assert_eq!(signature, url_base64(again.as_ref()));
        assert_eq!(claims(&made), Some(json!({"iss": "joe"})));
    }
}
