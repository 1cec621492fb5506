//! JSON values written as TOML text, the way a scenario file spells them: inline tables
//! and arrays, `"$null"` for null (TOML has none), bare keys where TOML allows them.

use serde_json::Value;

/// A key: bare when it is only letters, digits, `_` and `-`, else quoted.
pub fn key(k: &str) -> String {
    let bare = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { k.to_string() } else { string(k) }
}

/// A basic string, escaped.
pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A value, inline.
pub fn value(v: &Value) -> String {
    match v {
        Value::Null => string("$null"),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Array(items) => {
            format!(
                "[{}]",
                items.iter().map(value).collect::<Vec<_>>().join(", ")
            )
        }
        Value::Object(map) if map.is_empty() => "{}".to_string(),
        Value::Object(map) => format!(
            "{{ {} }}",
            map.iter()
                .map(|(k, v)| format!("{} = {}", key(k), value(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Text for a `# comment`: one line whatever it holds, its line breaks and other control
/// characters written as escapes (`\n`), so that no text can end the comment and become a
/// key of the file.
pub fn comment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:04X}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Text as a multi-line literal string (`'''…'''`, no escapes) when it can be one, else
/// as a basic string.
pub fn block(text: &str) -> String {
    if text.contains("'''")
        || text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        string(text)
    } else {
        format!("'''\n{text}'''")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_read_back_as_the_same_json() {
        let v = json!({"a b": [1, 2.5, true, "q\"\\\n\u{1}"], "x": {}, "y": {"z": "é"}});
        let text = format!("v = {}\nblock = {}\n", value(&v), block("{\"k\": 'x'}\n"));
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(serde_json::to_value(&parsed["v"]).unwrap(), v);
        assert_eq!(parsed["block"].as_str(), Some("{\"k\": 'x'}\n"));
        assert_eq!(value(&Value::Null), "\"$null\"");
        assert_eq!(block("a'''b"), "\"a'''b\"");
    }

    #[test]
    fn a_comment_stays_one_line_whatever_it_holds() {
        let hostile = "client --flag 'x\ntimeout_secs = 1\r\n[[step]]\u{2028}\u{7}'";
        let text = format!("# from: {}\nname = \"n\"\n", comment(hostile));
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(parsed.keys().collect::<Vec<_>>(), ["name"], "{text}");
        assert_eq!(text.lines().count(), 2, "{text}");
    }
}
