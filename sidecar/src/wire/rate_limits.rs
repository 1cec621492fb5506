//! Rate limits on the wire (`transports.md` §4): the header families codex reads from an HTTP
//! response, a WebSocket 101 or an error frame's `headers`, and the `codex.rate_limits` event
//! (honoured over the WebSocket only).
//!
//! ```
//! use codex_parity_sidecar::rate_limits::{Window, headers, event};
//! let primary = Window {
//!     used_percent: 42.5,
//!     window_minutes: Some(300),
//!     reset_at: Some(1_796_089_227),
//! };
//! let h = headers("codex", Some(&primary), None);
//! assert!(h.contains(&("x-codex-primary-used-percent".to_string(), "42.5".to_string())));
//! let e = event(Some("plus"), Some(&primary), None);
//! assert_eq!(e["rate_limits"]["primary"]["window_minutes"], 300);
//! ```

use serde_json::{Map, Value, json};

/// One rate-limit window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Percentage used (codex rounds it to an integer).
    pub used_percent: f64,
    /// The window's length in minutes.
    pub window_minutes: Option<u64>,
    /// When it resets, in Unix seconds.
    pub reset_at: Option<u64>,
}

fn window_headers(prefix: &str, which: &str, window: &Window, out: &mut Vec<(String, String)>) {
    out.push((
        format!("{prefix}-{which}-used-percent"),
        window.used_percent.to_string(),
    ));
    if let Some(minutes) = window.window_minutes {
        out.push((
            format!("{prefix}-{which}-window-minutes"),
            minutes.to_string(),
        ));
    }
    if let Some(at) = window.reset_at {
        out.push((format!("{prefix}-{which}-reset-at"), at.to_string()));
    }
}

/// The header family `x-<family>-primary-…` and `x-<family>-secondary-…` (family `codex` for
/// the main limit; another family such as `codex-bengalfox` adds a further limit).
pub fn headers(
    family: &str,
    primary: Option<&Window>,
    secondary: Option<&Window>,
) -> Vec<(String, String)> {
    let prefix = format!("x-{family}");
    let mut out = Vec::new();
    if let Some(w) = primary {
        window_headers(&prefix, "primary", w, &mut out);
    }
    if let Some(w) = secondary {
        window_headers(&prefix, "secondary", w, &mut out);
    }
    out
}

/// The credit headers `x-codex-credits-has-credits`, `-unlimited` and `-balance`.
pub fn credits_headers(has_credits: bool, unlimited: bool, balance: &str) -> Vec<(String, String)> {
    vec![
        (
            "x-codex-credits-has-credits".into(),
            has_credits.to_string(),
        ),
        ("x-codex-credits-unlimited".into(), unlimited.to_string()),
        ("x-codex-credits-balance".into(), balance.to_string()),
    ]
}

fn window_json(window: Option<&Window>) -> Value {
    match window {
        None => Value::Null,
        Some(w) => json!({"used_percent": w.used_percent, "window_minutes": w.window_minutes,
            "reset_at": w.reset_at}),
    }
}

/// The `codex.rate_limits` event (WebSocket only; codex ignores it over SSE).
pub fn event(
    plan_type: Option<&str>,
    primary: Option<&Window>,
    secondary: Option<&Window>,
) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), Value::from("codex.rate_limits"));
    if let Some(plan) = plan_type {
        out.insert("plan_type".into(), Value::from(plan));
    }
    out.insert(
        "rate_limits".into(),
        json!({"primary": window_json(primary), "secondary": window_json(secondary)}),
    );
    Value::Object(out)
}

/// [`event`] with a `credits` object.
pub fn event_with_credits(
    plan_type: Option<&str>,
    primary: Option<&Window>,
    has_credits: bool,
    unlimited: bool,
    balance: &str,
) -> Value {
    let mut e = event(plan_type, primary, None);
    if let Some(object) = e.as_object_mut() {
        object.insert(
            "credits".into(),
            json!({"has_credits": has_credits, "unlimited": unlimited, "balance": balance}),
        );
    }
    e
}
