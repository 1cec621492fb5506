//! Unsigned ChatGPT access tokens (JWTs with `alg: none`) for the token-refresh scenarios:
//! codex reads the claims (account, user, plan, expiry) without checking a signature, and
//! sends the token as `Authorization: Bearer` to a provider with `requires_openai_auth`.

use serde_json::{Value, json};

use super::png::base64;

/// The workspace/account id of every token.
pub const ACCOUNT: &str = "acct-parity";

/// A token for the parity user whose `sub` is `name` (the refreshed token differs in it
/// only), valid for an hour. The user id matters: codex compares (user, account) before and
/// after a refresh, and a token without one counts as another owner.
pub fn token(name: &str) -> String {
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        + 3600;
    let claims = json!({
        "email": "parity@example.com",
        "sub": name,
        "exp": exp,
        "https://api.openai.com/auth": {
            "chatgpt_account_id": ACCOUNT,
            "chatgpt_user_id": "user-parity",
            "user_id": "user-parity",
            "chatgpt_plan_type": "plus"
        }
    });
    format!(
        "{}.{}.unsigned",
        url_part(&json!({"alg": "none", "typ": "JWT"})),
        url_part(&claims)
    )
}

/// The `sub` of a bearer token [`token`] made (`None` when it is not one).
pub fn subject(bearer: &str) -> Option<String> {
    let payload = bearer.strip_prefix("Bearer ")?.split('.').nth(1)?;
    let claims: Value = serde_json::from_slice(&decode_url(payload)?).ok()?;
    claims["sub"].as_str().map(String::from)
}

/// Unpadded URL-safe base64 of a JSON value (RFC 7515 §2).
fn url_part(value: &Value) -> String {
    base64(value.to_string().as_bytes())
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
    fn a_token_reads_back_its_subject() {
        let t = token("first");
        assert_eq!(t.split('.').count(), 3);
        assert!(!t.contains('=') && !t.contains('+') && !t.contains('/'));
        assert_eq!(subject(&format!("Bearer {t}")).as_deref(), Some("first"));
        assert_eq!(subject(&t), None, "without the Bearer prefix");
        assert_eq!(subject("Bearer not-a-jwt"), None);
    }

    #[test]
    fn url_base64_round_trips() {
        for text in ["", "f", "fo", "foo", "foob", "\u{fb}\u{ff}?>"] {
            let v = Value::String(text.into());
            let encoded = url_part(&v);
            assert_eq!(decode_url(&encoded).unwrap(), v.to_string().into_bytes());
        }
    }
}
