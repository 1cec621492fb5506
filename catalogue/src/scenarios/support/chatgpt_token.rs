//! Unsigned ChatGPT access tokens (JWTs with `alg: none`) for the token-refresh scenarios:
//! codex reads the claims (account, user, plan, expiry) without checking a signature, and
//! sends the token as `Authorization: Bearer` to a provider with `requires_openai_auth`.

use serde_json::json;

use super::jwt;

/// The workspace/account id of every token.
pub const ACCOUNT: &str = "acct-parity";

/// A token for the parity user whose `sub` is `name` (the refreshed token differs in it
/// only), valid for an hour. The user id matters: codex compares (user, account) before and
/// after a refresh, and a token without one counts as another owner.
pub fn token(name: &str) -> String {
    jwt::unsigned(&json!({
        "email": "parity@example.com",
        "sub": name,
        "exp": jwt::now() + 3600,
        "https://api.openai.com/auth": {
            "chatgpt_account_id": ACCOUNT,
            "chatgpt_user_id": "user-parity",
            "user_id": "user-parity",
            "chatgpt_plan_type": "plus"
        }
    }))
}

/// The `sub` of a bearer token [`token`] made (`None` when it is not one).
pub fn subject(bearer: &str) -> Option<String> {
    let claims = jwt::claims(bearer.strip_prefix("Bearer ")?)?;
    claims["sub"].as_str().map(String::from)
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
}
