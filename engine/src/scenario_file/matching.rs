//! JSON subset matching for scenario files, with variables and operators.
//!
//! - **Subset**: an expected object matches an actual object that has every expected key
//!   with a matching value (other keys are ignored); an expected array matches an actual
//!   array of the same length element by element; scalars must be equal (numbers by value).
//! - **Variables**: a string `"$name"` is the value bound to `name` (by a step's `capture`,
//!   or built in: `$thread`, `$turn`, `$workspace`, `$home`); `"${name}"` inside a longer
//!   string is its text; `"$null"` is JSON null (TOML has none); `"$$…"` is a literal `$…`.
//! - **Special values**: `"$any"` matches any present value, `"$absent"` a missing key.
//! - **Operators**: an object with one `$` key: `{"$contains" = X}` (a string containing
//!   the text X, or an array with an element matching X), `{"$regex" = "…"}`,
//!   `{"$starts_with" = "…"}`, `{"$len" = N}` (array, object or string length),
//!   `{"$one_of" = [A, B]}`, `{"$not" = X}`, `{"$gte" = N}`, `{"$lte" = N}`.

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::{Map, Value};

/// The operators an expectation may use, as written.
pub const OPERATORS: [&str; 8] = [
    "$contains",
    "$regex",
    "$starts_with",
    "$len",
    "$one_of",
    "$not",
    "$gte",
    "$lte",
];

/// Values that are not variables: `$null`, `$any`, `$absent`.
pub const SPECIAL: [&str; 3] = ["$null", "$any", "$absent"];

/// The variables of one scenario run: name (without `$`) → value.
#[derive(Debug, Clone, Default)]
pub struct Vars(BTreeMap<String, Value>);

/// A whole-string variable reference: `$name` with a name of letters, digits and `_`.
fn whole_ref(s: &str) -> Option<&str> {
    let name = s.strip_prefix('$')?;
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(name)
}

/// The `${name}` references inside a string, in order.
fn inner_refs(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(at) = rest.find("${") {
        let after = &rest[at + 2..];
        match after.find('}') {
            Some(end) => {
                out.push(&after[..end]);
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    out
}

/// Every variable name a value refers to (`$name` and `${name}`), specials excluded.
pub fn references(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk_strings(value, &mut |s| {
        if s.starts_with("$$") || SPECIAL.contains(&s) {
            return;
        }
        if let Some(name) = whole_ref(s) {
            out.push(name.to_string());
        } else {
            out.extend(inner_refs(s).into_iter().map(str::to_string));
        }
    });
    out
}

/// Every `$` key of an object in `value` that is not an operator, and every operator
/// object with other keys beside its operator.
pub fn bad_operators(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk_objects(value, &mut |map| {
        let ops: Vec<&String> = map.keys().filter(|k| k.starts_with('$')).collect();
        for k in &ops {
            if !OPERATORS.contains(&k.as_str()) {
                out.push(k.to_string());
            }
        }
        if !ops.is_empty() && map.len() > 1 {
            out.push(format!("{} with other keys beside it", ops[0]));
        }
    });
    out
}

fn walk_strings(value: &Value, f: &mut impl FnMut(&str)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().for_each(|v| walk_strings(v, f)),
        Value::Object(map) => map.values().for_each(|v| walk_strings(v, f)),
        _ => {}
    }
}

fn walk_objects(value: &Value, f: &mut impl FnMut(&Map<String, Value>)) {
    match value {
        Value::Array(items) => items.iter().for_each(|v| walk_objects(v, f)),
        Value::Object(map) => {
            f(map);
            map.values().for_each(|v| walk_objects(v, f));
        }
        _ => {}
    }
}

/// `value` with only `"$null"` (null) and `"$$…"` (a literal `$…`) replaced: scripted
/// responses take no variables, so a `$` in a model's text stays as written.
pub fn literals(value: &Value) -> Value {
    match value {
        Value::String(s) if s == "$null" => Value::Null,
        Value::String(s) => match s.strip_prefix("$$") {
            Some(rest) => Value::String(format!("${rest}")),
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(literals).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), literals(v))).collect())
        }
        other => other.clone(),
    }
}

impl Vars {
    /// Binds `name` (without `$`).
    pub fn set(&mut self, name: &str, value: Value) {
        self.0.insert(name.to_string(), value);
    }

    /// The value of `name` (without `$`).
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name)
    }

    /// A string value: `"$name"` resolved, as text (a variable holding a string).
    pub fn text(&self, s: &str) -> Result<String, String> {
        match self.substitute(&Value::String(s.to_string()))? {
            Value::String(t) => Ok(t),
            other => Err(format!("{s} is {other}, not a string")),
        }
    }

    /// `value` with its variables replaced; `$any`, `$absent` and operators are kept.
    pub fn substitute(&self, value: &Value) -> Result<Value, String> {
        Ok(match value {
            Value::String(s) => self.string(s)?,
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| self.substitute(v))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| Ok((k.clone(), self.substitute(v)?)))
                    .collect::<Result<_, String>>()?,
            ),
            other => other.clone(),
        })
    }

    fn string(&self, s: &str) -> Result<Value, String> {
        if let Some(literal) = s.strip_prefix("$$") {
            return Ok(Value::String(format!("${literal}")));
        }
        if s == "$null" {
            return Ok(Value::Null);
        }
        if s == "$any" || s == "$absent" {
            return Ok(Value::String(s.to_string()));
        }
        if let Some(name) = whole_ref(s) {
            return self
                .get(name)
                .cloned()
                .ok_or_else(|| format!("${name} is not bound"));
        }
        let mut out = s.to_string();
        for name in inner_refs(s) {
            let value = self
                .get(name)
                .ok_or_else(|| format!("${{{name}}} is not bound"))?;
            let text = match value {
                Value::String(t) => t.clone(),
                other => other.to_string(),
            };
            out = out.replace(&format!("${{{name}}}"), &text);
        }
        Ok(Value::String(out))
    }
}

/// Short text of a value for messages.
fn show(value: Option<&Value>) -> String {
    match value {
        None => "nothing (absent)".into(),
        Some(v) => {
            let text = v.to_string();
            if text.chars().count() > 200 {
                format!("{}…", text.chars().take(200).collect::<String>())
            } else {
                text
            }
        }
    }
}

/// Whether two JSON numbers are equal by value.
fn same_number(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// Checks that `actual` matches `expected` (variables already substituted); the error
/// names the place (a JSON pointer from `at`), what was expected and what was found.
pub fn check(expected: &Value, actual: Option<&Value>, at: &str) -> Result<(), String> {
    let fail = |what: String| {
        Err(format!(
            "at {}: {what}",
            if at.is_empty() { "/" } else { at }
        ))
    };
    match expected {
        Value::String(s) if s == "$any" => match actual {
            Some(_) => Ok(()),
            None => fail("expected a value, found nothing (absent)".into()),
        },
        Value::String(s) if s == "$absent" => match actual {
            None => Ok(()),
            Some(v) => fail(format!("expected no value, found {}", show(Some(v)))),
        },
        Value::Object(map) if map.len() == 1 && map.keys().all(|k| k.starts_with('$')) => {
            let Some((op, operand)) = map.iter().next() else {
                return Ok(());
            };
            operator(op, operand, actual, at)
        }
        Value::Object(map) => {
            let Some(Value::Object(have)) = actual else {
                return fail(format!("expected an object, found {}", show(actual)));
            };
            for (key, want) in map {
                check(want, have.get(key), &format!("{at}/{key}"))?;
            }
            Ok(())
        }
        Value::Array(items) => {
            let Some(Value::Array(have)) = actual else {
                return fail(format!("expected an array, found {}", show(actual)));
            };
            if items.len() != have.len() {
                return fail(format!(
                    "expected {} element(s), found {}: {}",
                    items.len(),
                    have.len(),
                    show(actual)
                ));
            }
            for (i, (want, got)) in items.iter().zip(have).enumerate() {
                check(want, Some(got), &format!("{at}/{i}"))?;
            }
            Ok(())
        }
        Value::Number(_) if actual.is_some_and(|a| same_number(expected, a)) => Ok(()),
        scalar => {
            if actual == Some(scalar) {
                Ok(())
            } else {
                fail(format!("expected {scalar}, found {}", show(actual)))
            }
        }
    }
}

/// One operator applied to `actual`.
fn operator(op: &str, operand: &Value, actual: Option<&Value>, at: &str) -> Result<(), String> {
    let here = if at.is_empty() { "/" } else { at };
    let fail = |what: String| Err(format!("at {here}: {what}"));
    let expected = format!("{op} {operand}");
    let found = show(actual);
    match op {
        "$contains" => match (actual, operand) {
            (Some(Value::String(s)), Value::String(t)) if s.contains(t.as_str()) => Ok(()),
            (Some(Value::Array(items)), _)
                if items.iter().any(|i| check(operand, Some(i), at).is_ok()) =>
            {
                Ok(())
            }
            _ => fail(format!("expected {expected}, found {found}")),
        },
        "$regex" => {
            let pattern = operand.as_str().unwrap_or_default();
            let re = Regex::new(pattern).map_err(|e| format!("at {here}: bad $regex: {e}"))?;
            match actual {
                Some(Value::String(s)) if re.is_match(s) => Ok(()),
                _ => fail(format!("expected {expected}, found {found}")),
            }
        }
        "$starts_with" => match (actual, operand) {
            (Some(Value::String(s)), Value::String(t)) if s.starts_with(t.as_str()) => Ok(()),
            _ => fail(format!("expected {expected}, found {found}")),
        },
        "$len" => {
            let len = match actual {
                Some(Value::Array(a)) => Some(a.len()),
                Some(Value::Object(o)) => Some(o.len()),
                Some(Value::String(s)) => Some(s.chars().count()),
                _ => None,
            };
            match (len, operand.as_u64()) {
                (Some(n), Some(want)) if n as u64 == want => Ok(()),
                _ => fail(format!("expected {expected}, found {found}")),
            }
        }
        "$one_of" => {
            let options = operand.as_array().cloned().unwrap_or_default();
            if options.iter().any(|o| check(o, actual, at).is_ok()) {
                Ok(())
            } else {
                fail(format!("expected {expected}, found {found}"))
            }
        }
        "$not" => match check(operand, actual, at) {
            Ok(()) => fail(format!("expected {expected}, found {found}")),
            Err(_) => Ok(()),
        },
        "$gte" | "$lte" => {
            let (Some(have), Some(bound)) = (actual.and_then(Value::as_f64), operand.as_f64())
            else {
                return fail(format!("expected {expected}, found {found}"));
            };
            let ok = if op == "$gte" {
                have >= bound
            } else {
                have <= bound
            };
            if ok {
                Ok(())
            } else {
                fail(format!("expected {expected}, found {found}"))
            }
        }
        other => fail(format!(
            "unknown operator {other} (valid: {})",
            OPERATORS.join(", ")
        )),
    }
}

/// The value a JSON pointer names in `value` (`""` is the whole value).
pub fn capture(value: &Value, pointer: &str) -> Result<Value, String> {
    value
        .pointer(pointer)
        .cloned()
        .ok_or_else(|| format!("nothing at {pointer} in {}", show(Some(value))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subsets_match_and_mismatches_say_where_and_what() {
        let actual = json!({"turn": {"status": "completed", "items": [1, 2]}, "x": 1});
        assert_eq!(
            check(&json!({"turn": {"status": "completed"}}), Some(&actual), ""),
            Ok(())
        );
        let err = check(&json!({"turn": {"status": "failed"}}), Some(&actual), "").unwrap_err();
        assert_eq!(
            err,
            "at /turn/status: expected \"failed\", found \"completed\""
        );
        let err = check(&json!({"turn": {"items": [1]}}), Some(&actual), "").unwrap_err();
        assert!(err.contains("expected 1 element(s), found 2"), "{err}");
        assert_eq!(check(&json!({"x": 1.0}), Some(&actual), ""), Ok(()));
    }

    #[test]
    fn operators_and_specials() {
        let actual = json!({"m": "hello world", "a": [{"k": 1}, {"k": 2}], "n": 5});
        let ok = |e: Value| check(&e, Some(&actual), "");
        assert_eq!(ok(json!({"m": {"$contains": "lo w"}})), Ok(()));
        assert_eq!(ok(json!({"a": {"$contains": {"k": 2}}})), Ok(()));
        assert!(ok(json!({"a": {"$contains": {"k": 3}}})).is_err());
        assert_eq!(ok(json!({"m": {"$regex": "^h.*d$"}})), Ok(()));
        assert_eq!(ok(json!({"a": {"$len": 2}})), Ok(()));
        assert_eq!(
            ok(json!({"n": {"$gte": 5}, "m": {"$starts_with": "he"}})),
            Ok(())
        );
        assert_eq!(ok(json!({"n": {"$one_of": [4, 5]}})), Ok(()));
        assert_eq!(ok(json!({"n": {"$not": 4}})), Ok(()));
        assert_eq!(ok(json!({"zz": "$absent", "n": "$any"})), Ok(()));
        let err = ok(json!({"n": "$absent"})).unwrap_err();
        assert_eq!(err, "at /n: expected no value, found 5");
    }

    #[test]
    fn responses_take_literals_only() {
        let v = json!({"text": "costs $5 or $thread", "n": "$null", "d": "$$null"});
        assert_eq!(
            literals(&v),
            json!({"text": "costs $5 or $thread", "n": null, "d": "$null"})
        );
        assert_eq!(literals(&json!("$thread")), json!("$thread"));
    }

    #[test]
    fn variables_are_substituted_and_checked() {
        let mut vars = Vars::default();
        vars.set("thread", json!("t-1"));
        vars.set("workspace", json!("/w"));
        let v = json!({"threadId": "$thread", "p": "${workspace}/a.txt", "b": "$null",
                       "lit": "$$thread", "o": "$any"});
        assert_eq!(
            vars.substitute(&v).unwrap(),
            json!({"threadId": "t-1", "p": "/w/a.txt", "b": null, "lit": "$thread", "o": "$any"})
        );
        let mut refs = references(&v);
        refs.sort();
        assert_eq!(refs, vec!["thread", "workspace"]);
        assert_eq!(
            vars.substitute(&json!("$other")).unwrap_err(),
            "$other is not bound"
        );
        assert_eq!(
            bad_operators(&json!({"a": {"$contians": 1}, "b": {"$len": 1, "x": 2}})),
            vec!["$contians", "$len with other keys beside it"]
        );
    }
}
