//! A JSON Schema (draft-07) validator for the schema a codex binary publishes, written for
//! the conformance checks ([`crate::codex::conformance`]): every assertion keyword of
//! draft-07 is checked; `format` is an annotation (codex's formats such as `int64` and
//! `uint32` are not standard ones); references are the document's own (`#/definitions/...`).
//!
//! [`Schema::new`] reads the whole document once and refuses what it could not check (a
//! reference that leaves the document or leads nowhere, a `pattern` that is not a regular
//! expression, an `$id` below the root), so a check never passes because a keyword was
//! skipped. A failed check is a tree of [`Failure`]s: a union (`oneOf`, `anyOf`) that no
//! variant matched keeps every variant's own failures, for the caller to tell the variant
//! that was meant.

use std::borrow::Cow;
use std::collections::HashMap;

use regex::Regex;
use serde_json::{Map, Value};

/// Keywords whose value is one subschema (`items` is one or an array of them).
const ONE: [&str; 8] = [
    "additionalItems",
    "additionalProperties",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
];

/// Keywords whose value is an array of subschemas.
const MANY: [&str; 3] = ["allOf", "anyOf", "oneOf"];

/// Keywords whose value maps names to subschemas (`dependencies`: or to arrays of names).
const MAPS: [&str; 4] = [
    "properties",
    "patternProperties",
    "definitions",
    "dependencies",
];

/// A schema document, checked whole and ready to validate against any of its subschemas.
#[derive(Debug)]
pub struct Schema {
    root: Value,
    patterns: HashMap<String, Regex>,
}

/// Why a document cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// A `$ref` that is not a pointer into the document, or points at nothing.
    #[error("{at}: the reference {reference:?} {why}")]
    Reference {
        /// Where the reference is (a JSON pointer into the document).
        at: String,
        /// The reference.
        reference: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A `pattern` or a `patternProperties` name that is not a regular expression.
    #[error("{at}: the pattern {pattern:?} is not a regular expression: {error}")]
    Pattern {
        /// Where the pattern is.
        at: String,
        /// The pattern.
        pattern: String,
        /// The regular expression parser's words.
        error: String,
    },
    /// An `$id` below the root: it would change what references mean.
    #[error("{at}: a nested $id is not supported (references would change meaning)")]
    NestedId {
        /// Where the `$id` is.
        at: String,
    },
    /// No subschema at the pointer a check asked for.
    #[error("the schema has nothing at {0:?}")]
    Missing(String),
}

/// One way an instance does not match.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// Where in the instance: the tokens of a JSON pointer (unescaped).
    pub at: Vec<String>,
    /// What the schema wanted there, in words.
    pub wanted: String,
    /// What kind of failure, for explaining unions.
    pub kind: FailureKind,
}

/// The kinds of [`Failure`] a caller needs to tell apart.
#[derive(Debug, Clone, PartialEq)]
pub enum FailureKind {
    /// The value has another JSON type than the schema allows.
    Type,
    /// The value is not the single value the schema allows (`const`, a one-value `enum`).
    Tag,
    /// No variant of a `oneOf` or `anyOf` matched: each variant's failures, in order.
    Union(Vec<Vec<Failure>>),
    /// Any other assertion.
    Other,
}

impl Failure {
    /// The JSON pointer of [`Failure::at`], escaped.
    pub fn pointer(&self) -> String {
        self.at
            .iter()
            .map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1")))
            .collect()
    }
}

impl Schema {
    /// Reads a document: every subschema is visited once, its references resolved and its
    /// patterns compiled.
    pub fn new(root: Value) -> Result<Schema, SchemaError> {
        let mut patterns = HashMap::new();
        let mut pending = vec![(String::new(), &root)];
        while let Some((at, schema)) = pending.pop() {
            let Value::Object(map) = schema else { continue };
            if !at.is_empty() && map.contains_key("$id") {
                return Err(SchemaError::NestedId { at });
            }
            if let Some(reference) = map.get("$ref") {
                resolve(&root, reference).map_err(|why| SchemaError::Reference {
                    at: at.clone(),
                    reference: reference.to_string(),
                    why,
                })?;
            }
            let mut add_pattern = |pattern: &str, at: String| {
                if patterns.contains_key(pattern) {
                    return Ok(());
                }
                let regex = Regex::new(pattern).map_err(|e| SchemaError::Pattern {
                    at,
                    pattern: pattern.to_string(),
                    error: e.to_string(),
                })?;
                patterns.insert(pattern.to_string(), regex);
                Ok(())
            };
            if let Some(Value::String(p)) = map.get("pattern") {
                add_pattern(p, format!("{at}/pattern"))?;
            }
            if let Some(Value::Object(props)) = map.get("patternProperties") {
                for name in props.keys() {
                    add_pattern(name, format!("{at}/patternProperties"))?;
                }
            }
            for key in ONE {
                if let Some(s) = map.get(key) {
                    pending.push((format!("{at}/{key}"), s));
                }
            }
            match map.get("items") {
                Some(Value::Array(list)) => {
                    for (i, s) in list.iter().enumerate() {
                        pending.push((format!("{at}/items/{i}"), s));
                    }
                }
                Some(s) => pending.push((format!("{at}/items"), s)),
                None => {}
            }
            for key in MANY {
                if let Some(Value::Array(list)) = map.get(key) {
                    for (i, s) in list.iter().enumerate() {
                        pending.push((format!("{at}/{key}/{i}"), s));
                    }
                }
            }
            for key in MAPS {
                if let Some(Value::Object(entries)) = map.get(key) {
                    for (name, s) in entries {
                        let token = name.replace('~', "~0").replace('/', "~1");
                        pending.push((format!("{at}/{key}/{token}"), s));
                    }
                }
            }
            // Codex nests namespaces of definitions (`definitions.v2.X`): plain objects
            // without keywords hold schemas too.
            if at.starts_with("/definitions") && !map.keys().any(|k| is_keyword(k)) {
                for (name, s) in map {
                    pending.push((format!("{at}/{name}"), s));
                }
            }
        }
        Ok(Schema { root, patterns })
    }

    /// Validates `instance` against the subschema at `pointer` (`""`: the whole document):
    /// empty when it matches. A first pass only asks whether it matches and stops at the
    /// first failure; the failures are gathered only for what does not.
    pub fn validate(&self, pointer: &str, instance: &Value) -> Result<Vec<Failure>, SchemaError> {
        let schema = self
            .root
            .pointer(pointer)
            .ok_or_else(|| SchemaError::Missing(pointer.to_string()))?;
        let mut at = Vec::new();
        if self.matches(schema, instance, &mut at) {
            return Ok(Vec::new());
        }
        Ok(self.failures(schema, instance, &mut at))
    }

    /// Whether `instance` matches `schema`.
    fn matches<'i>(&self, schema: &Value, instance: &'i Value, at: &mut Vec<Token<'i>>) -> bool {
        let mut sink = Sink::default();
        self.check(schema, instance, at, &mut sink);
        !sink.failed
    }

    /// Every way `instance` fails `schema`.
    fn failures<'i>(
        &self,
        schema: &Value,
        instance: &'i Value,
        at: &mut Vec<Token<'i>>,
    ) -> Vec<Failure> {
        let mut sink = Sink {
            collect: true,
            ..Sink::default()
        };
        self.check(schema, instance, at, &mut sink);
        sink.failures
    }

    /// Tells `sink` how `instance` (at `at`) fails `schema`.
    fn check<'i>(
        &self,
        schema: &Value,
        instance: &'i Value,
        at: &mut Vec<Token<'i>>,
        sink: &mut Sink,
    ) {
        let k = match schema {
            Value::Object(map) => Keywords::of(map),
            Value::Bool(false) => {
                return sink.fail(at, FailureKind::Other, || {
                    "nothing (the schema is false)".into()
                });
            }
            _ => return,
        };
        // Draft-07: a reference replaces every keyword beside it.
        if let Some(reference) = k.reference {
            match resolve(&self.root, reference) {
                Ok(target) => self.check(target, instance, at, sink),
                Err(why) => sink.fail(at, FailureKind::Other, || {
                    format!("a schema the reference {reference} names, but it {why}")
                }),
            }
            return;
        }
        self.check_type(&k, instance, at, sink);
        check_values(&k, instance, at, sink);
        if sink.done() {
            return;
        }
        self.check_combinators(&k, instance, at, sink);
        match instance {
            Value::Object(object) => self.check_object(&k, object, instance, at, sink),
            Value::Array(items) => self.check_array(&k, items, at, sink),
            Value::String(text) => self.check_string(&k, text, at, sink),
            Value::Number(_) => check_number(&k, instance, at, sink),
            _ => {}
        }
    }

    fn check_type(&self, k: &Keywords, instance: &Value, at: &[Token], sink: &mut Sink) {
        let fits = match k.ty {
            Some(Value::String(t)) => has_type(instance, t),
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(Value::as_str)
                .any(|t| has_type(instance, t)),
            _ => return,
        };
        if !fits {
            sink.fail(at, FailureKind::Type, || {
                let wanted = match k.ty {
                    Some(Value::Array(list)) => list
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" or "),
                    other => other
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                };
                format!("{wanted}, not {}", type_of(instance))
            });
        }
    }

    fn check_combinators<'i>(
        &self,
        k: &Keywords,
        instance: &'i Value,
        at: &mut Vec<Token<'i>>,
        sink: &mut Sink,
    ) {
        if let Some(Value::Array(all)) = k.all_of {
            for s in all {
                self.check(s, instance, at, sink);
            }
        }
        for (key, found) in [("anyOf", k.any_of), ("oneOf", k.one_of)] {
            let Some(Value::Array(variants)) = found else {
                continue;
            };
            let mut matched = Vec::new();
            for (i, s) in variants.iter().enumerate() {
                if self.matches(s, instance, at) {
                    matched.push(i);
                    if key == "anyOf" || matched.len() > 1 {
                        break;
                    }
                }
            }
            if matched.is_empty() {
                let kind = if sink.collect {
                    let each = variants.iter().map(|s| self.failures(s, instance, at));
                    FailureKind::Union(each.collect())
                } else {
                    FailureKind::Other
                };
                sink.fail(at, kind, || "one of the union's variants".into());
            } else if matched.len() > 1 {
                sink.fail(at, FailureKind::Other, || {
                    format!("exactly one variant of the oneOf (variants {matched:?} match)")
                });
            }
        }
        if let Some(not) = k.not
            && self.matches(not, instance, at)
        {
            sink.fail(at, FailureKind::Other, || {
                "a value the `not` schema refuses".into()
            });
        }
        if let Some(condition) = k.condition {
            let branch = if self.matches(condition, instance, at) {
                k.then
            } else {
                k.otherwise
            };
            if let Some(s) = branch {
                self.check(s, instance, at, sink);
            }
        }
    }

    fn check_object<'i>(
        &self,
        k: &Keywords,
        object: &'i Map<String, Value>,
        instance: &'i Value,
        at: &mut Vec<Token<'i>>,
        sink: &mut Sink,
    ) {
        if let Some(Value::Array(required)) = k.required {
            require(required, object, at, sink, "");
        }
        let count = object.len() as u64;
        if let Some(min) = k.min_properties.and_then(Value::as_u64)
            && count < min
        {
            sink.fail(at, FailureKind::Other, || {
                format!("at least {min} properties")
            });
        }
        if let Some(max) = k.max_properties.and_then(Value::as_u64)
            && count > max
        {
            sink.fail(at, FailureKind::Other, || {
                format!("at most {max} properties")
            });
        }
        if let Some(Value::Object(dependencies)) = k.dependencies {
            for (name, dependency) in dependencies
                .iter()
                .filter(|(n, _)| entry(object, n).is_some())
            {
                match dependency {
                    Value::Array(names) => require(names, object, at, sink, name),
                    schema => self.check(schema, instance, at, sink),
                }
            }
        }
        let properties = k.properties.and_then(Value::as_object);
        let patterns = k.pattern_properties.and_then(Value::as_object);
        let additional = k.additional_properties;
        let mut extra = Vec::new();
        for (name, value) in object {
            if sink.done() {
                return;
            }
            if let Some(names) = k.property_names
                && !self.matches(names, &Value::String(name.clone()), &mut Vec::new())
            {
                sink.fail(at, FailureKind::Other, || {
                    format!("property names the schema allows, not {name:?}")
                });
            }
            at.push(Token::Key(name));
            let mut known = false;
            if let Some(s) = properties.and_then(|p| entry(p, name)) {
                known = true;
                self.check(s, value, at, sink);
            }
            for (pattern, s) in patterns.into_iter().flatten() {
                if self.patterns.get(pattern).is_some_and(|r| r.is_match(name)) {
                    known = true;
                    self.check(s, value, at, sink);
                }
            }
            match additional {
                Some(Value::Bool(false)) if !known => extra.push(name.as_str()),
                Some(s) if !known => self.check(s, value, at, sink),
                _ => {}
            }
            at.pop();
        }
        if !extra.is_empty() {
            sink.fail(at, FailureKind::Other, || {
                format!("no properties beyond the schema's, not {}", quoted(&extra))
            });
        }
    }

    fn check_array<'i>(
        &self,
        k: &Keywords,
        items: &'i [Value],
        at: &mut Vec<Token<'i>>,
        sink: &mut Sink,
    ) {
        let count = items.len() as u64;
        if let Some(min) = k.min_items.and_then(Value::as_u64)
            && count < min
        {
            sink.fail(at, FailureKind::Other, || format!("at least {min} items"));
        }
        if let Some(max) = k.max_items.and_then(Value::as_u64)
            && count > max
        {
            sink.fail(at, FailureKind::Other, || format!("at most {max} items"));
        }
        if k.unique_items == Some(&Value::Bool(true)) {
            let repeated = (0..items.len()).find_map(|j| {
                (0..j)
                    .find(|&i| equal(&items[i], &items[j]))
                    .map(|i| (i, j))
            });
            if let Some((i, j)) = repeated {
                sink.fail(at, FailureKind::Other, || {
                    format!("unique items (items {i} and {j} are equal)")
                });
            }
        }
        let (tuple, rest) = match k.items {
            Some(Value::Array(tuple)) => (tuple.as_slice(), k.additional_items),
            other => (&[][..], other),
        };
        for (i, item) in items.iter().enumerate() {
            if sink.done() {
                return;
            }
            let Some(s) = tuple.get(i).or(rest) else {
                break;
            };
            at.push(Token::Index(i));
            self.check(s, item, at, sink);
            at.pop();
        }
        if let Some(s) = k.contains {
            let any = items.iter().enumerate().any(|(i, item)| {
                at.push(Token::Index(i));
                let ok = self.matches(s, item, at);
                at.pop();
                ok
            });
            if !any {
                sink.fail(at, FailureKind::Other, || {
                    "an item the `contains` schema allows".into()
                });
            }
        }
    }

    fn check_string(&self, k: &Keywords, text: &str, at: &[Token], sink: &mut Sink) {
        let length = || text.chars().count() as u64;
        if let Some(min) = k.min_length.and_then(Value::as_u64)
            && length() < min
        {
            sink.fail(at, FailureKind::Other, || {
                format!("at least {min} characters")
            });
        }
        if let Some(max) = k.max_length.and_then(Value::as_u64)
            && length() > max
        {
            sink.fail(at, FailureKind::Other, || {
                format!("at most {max} characters")
            });
        }
        if let Some(Value::String(pattern)) = k.pattern
            && self
                .patterns
                .get(pattern)
                .is_some_and(|r| !r.is_match(text))
        {
            sink.fail(at, FailureKind::Other, || {
                format!("a string matching {pattern:?}")
            });
        }
    }
}

/// One step of a place in the instance, borrowed from it.
#[derive(Debug, Clone, Copy)]
enum Token<'i> {
    Key(&'i str),
    Index(usize),
}

/// Where a check's failures go: only noticed (a check that needs a yes or no stops at the
/// first), or gathered with their words.
#[derive(Debug, Default)]
struct Sink {
    collect: bool,
    failed: bool,
    failures: Vec<Failure>,
}

impl Sink {
    /// Whether the answer is known: a failure, and nobody wants the rest.
    fn done(&self) -> bool {
        self.failed && !self.collect
    }

    /// Notes a failure; its words are written only when they are gathered.
    fn fail(&mut self, at: &[Token], kind: FailureKind, wanted: impl FnOnce() -> String) {
        self.failed = true;
        if self.collect {
            let at = at
                .iter()
                .map(|t| match t {
                    Token::Key(k) => (*k).to_string(),
                    Token::Index(i) => i.to_string(),
                })
                .collect();
            self.failures.push(Failure {
                at,
                wanted: wanted(),
                kind,
            });
        }
    }
}

/// `const` and `enum`.
fn check_values(k: &Keywords, instance: &Value, at: &[Token], sink: &mut Sink) {
    if let Some(want) = k.constant
        && !equal(want, instance)
    {
        sink.fail(at, FailureKind::Tag, || format!("the value {want}"));
    }
    if let Some(Value::Array(choices)) = k.choices
        && !choices.iter().any(|c| equal(c, instance))
    {
        let kind = if choices.len() == 1 {
            FailureKind::Tag
        } else {
            FailureKind::Other
        };
        sink.fail(at, kind, || {
            let listed: Vec<String> = choices.iter().map(Value::to_string).collect();
            format!("one of {}", listed.join(", "))
        });
    }
}

/// `required`, and the names a present property's `dependencies` list (`with`).
fn require(
    names: &[Value],
    object: &Map<String, Value>,
    at: &[Token],
    sink: &mut Sink,
    with: &str,
) {
    let missing: Vec<&str> = names
        .iter()
        .filter_map(Value::as_str)
        .filter(|n| entry(object, n).is_none())
        .collect();
    if !missing.is_empty() {
        sink.fail(at, FailureKind::Other, || match with {
            "" => format!("the properties {}", quoted(&missing)),
            with => format!("the properties {} (with {with:?})", quoted(&missing)),
        });
    }
}

/// The bounds of a number (`minimum`, `maximum`, their exclusive forms, `multipleOf`).
fn check_number(k: &Keywords, instance: &Value, at: &[Token], sink: &mut Sink) {
    let Some(x) = instance.as_f64() else { return };
    let bound = |v: Option<&Value>| v.and_then(Value::as_f64);
    let mut wanted = Vec::new();
    if let Some(min) = bound(k.minimum).filter(|m| x < *m) {
        wanted.push(format!("at least {min}"));
    }
    if let Some(max) = bound(k.maximum).filter(|m| x > *m) {
        wanted.push(format!("at most {max}"));
    }
    if let Some(min) = bound(k.exclusive_minimum).filter(|m| x <= *m) {
        wanted.push(format!("more than {min}"));
    }
    if let Some(max) = bound(k.exclusive_maximum).filter(|m| x >= *m) {
        wanted.push(format!("less than {max}"));
    }
    if let Some(step) = bound(k.multiple_of).filter(|m| *m > 0.0) {
        let q = x / step;
        if (q - q.round()).abs() > 1e-9 * q.abs().max(1.0) {
            wanted.push(format!("a multiple of {step}"));
        }
    }
    for w in wanted {
        sink.fail(at, FailureKind::Other, || format!("a number {w}"));
    }
}

/// The draft-07 keywords of one schema object, found in one pass over it (a lookup by name
/// for each keyword cost the most of a check in a debug build; the frequent ones are
/// compared first).
#[derive(Debug, Default)]
struct Keywords<'s> {
    reference: Option<&'s Value>,
    ty: Option<&'s Value>,
    constant: Option<&'s Value>,
    choices: Option<&'s Value>,
    all_of: Option<&'s Value>,
    any_of: Option<&'s Value>,
    one_of: Option<&'s Value>,
    not: Option<&'s Value>,
    condition: Option<&'s Value>,
    then: Option<&'s Value>,
    otherwise: Option<&'s Value>,
    required: Option<&'s Value>,
    min_properties: Option<&'s Value>,
    max_properties: Option<&'s Value>,
    dependencies: Option<&'s Value>,
    properties: Option<&'s Value>,
    pattern_properties: Option<&'s Value>,
    additional_properties: Option<&'s Value>,
    property_names: Option<&'s Value>,
    items: Option<&'s Value>,
    additional_items: Option<&'s Value>,
    min_items: Option<&'s Value>,
    max_items: Option<&'s Value>,
    unique_items: Option<&'s Value>,
    contains: Option<&'s Value>,
    min_length: Option<&'s Value>,
    max_length: Option<&'s Value>,
    pattern: Option<&'s Value>,
    minimum: Option<&'s Value>,
    maximum: Option<&'s Value>,
    exclusive_minimum: Option<&'s Value>,
    exclusive_maximum: Option<&'s Value>,
    multiple_of: Option<&'s Value>,
}

impl<'s> Keywords<'s> {
    fn of(map: &'s Map<String, Value>) -> Keywords<'s> {
        let mut k = Keywords::default();
        for (name, value) in map {
            let slot = match name.as_str() {
                "type" => &mut k.ty,
                // Annotations, most of a schema's keys: skipped before the rest are compared.
                "title" | "description" | "format" | "default" => continue,
                "properties" => &mut k.properties,
                "required" => &mut k.required,
                "$ref" => &mut k.reference,
                "enum" => &mut k.choices,
                "anyOf" => &mut k.any_of,
                "items" => &mut k.items,
                "additionalProperties" => &mut k.additional_properties,
                "minimum" => &mut k.minimum,
                "oneOf" => &mut k.one_of,
                "allOf" => &mut k.all_of,
                "const" => &mut k.constant,
                "not" => &mut k.not,
                "if" => &mut k.condition,
                "then" => &mut k.then,
                "else" => &mut k.otherwise,
                "minProperties" => &mut k.min_properties,
                "maxProperties" => &mut k.max_properties,
                "dependencies" => &mut k.dependencies,
                "patternProperties" => &mut k.pattern_properties,
                "propertyNames" => &mut k.property_names,
                "additionalItems" => &mut k.additional_items,
                "minItems" => &mut k.min_items,
                "maxItems" => &mut k.max_items,
                "uniqueItems" => &mut k.unique_items,
                "contains" => &mut k.contains,
                "minLength" => &mut k.min_length,
                "maxLength" => &mut k.max_length,
                "pattern" => &mut k.pattern,
                "maximum" => &mut k.maximum,
                "exclusiveMinimum" => &mut k.exclusive_minimum,
                "exclusiveMaximum" => &mut k.exclusive_maximum,
                "multipleOf" => &mut k.multiple_of,
                _ => continue,
            };
            *slot = Some(value);
        }
        k
    }
}

/// The value of `key` in `map`: a map of a few entries is searched in order, which in a
/// debug build is several times faster than hashing the key.
fn entry<'m>(map: &'m Map<String, Value>, key: &str) -> Option<&'m Value> {
    if map.len() > 16 {
        return map.get(key);
    }
    map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
}

/// The subschema a `$ref` names: a JSON pointer into the document (`#`, `#/definitions/X`).
fn resolve<'a>(root: &'a Value, reference: &Value) -> Result<&'a Value, &'static str> {
    let text = reference.as_str().ok_or("is not a string")?;
    let pointer = text
        .strip_prefix('#')
        .ok_or("leaves the document (only `#...` references are read)")?;
    let pointer = percent_decoded(pointer).ok_or("is not valid percent-encoding")?;
    root.pointer(&pointer)
        .ok_or("points at nothing in the document")
}

/// A URI fragment's percent-encoding undone.
fn percent_decoded(text: &str) -> Option<Cow<'_, str>> {
    if !text.contains('%') {
        return Some(Cow::Borrowed(text));
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok().map(Cow::Owned)
}

/// Whether a key is a JSON Schema keyword (an object holding one is a schema, not a
/// namespace of definitions).
fn is_keyword(key: &str) -> bool {
    ONE.contains(&key)
        || MANY.contains(&key)
        || MAPS.contains(&key)
        || matches!(
            key,
            "$ref"
                | "$schema"
                | "type"
                | "enum"
                | "const"
                | "items"
                | "required"
                | "title"
                | "description"
                | "format"
                | "default"
        )
}

/// Whether `value` is of the JSON Schema type `name` (`integer`: a number without fraction).
fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => match value {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        _ => false,
    }
}

/// The JSON type of a value, as a schema names it.
fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) if has_type(value, "integer") => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// JSON equality: numbers by value (`1` equals `1.0`), objects regardless of key order.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(p), Some(q), _, _) => p == q,
                (_, _, Some(p), Some(q)) => p == q,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

/// Names quoted and joined.
fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The failures of `instance` against `schema` (a whole document), as (pointer, kind).
    fn failures(schema: Value, instance: Value) -> Vec<(String, FailureKind)> {
        let schema = Schema::new(schema).unwrap();
        let found = schema.validate("", &instance).unwrap();
        found.into_iter().map(|f| (f.pointer(), f.kind)).collect()
    }

    fn passes(schema: Value, instance: Value) -> bool {
        failures(schema, instance).is_empty()
    }

    #[test]
    fn every_draft7_assertion_refuses_what_it_should_and_keeps_what_it_should() {
        // (schema, a value it keeps, a value it refuses)
        let cases = [
            (json!({"type": "integer"}), json!(1.0), json!(1.5)),
            (json!({"type": ["string", "null"]}), json!(null), json!(0)),
            (json!({"const": 1}), json!(1.0), json!(2)),
            (
                json!({"enum": ["a", {"b": [1]}]}),
                json!({"b": [1.0]}),
                json!("c"),
            ),
            (json!({"required": ["a"]}), json!({"a": 0}), json!({"b": 0})),
            (json!({"minProperties": 1}), json!({"a": 0}), json!({})),
            (json!({"maxProperties": 0}), json!({}), json!({"a": 0})),
            (
                json!({"properties": {"a": {"type": "string"}}}),
                json!({"a": "x"}),
                json!({"a": 1}),
            ),
            (
                json!({"patternProperties": {"^x": {"type": "null"}}}),
                json!({"xa": null}),
                json!({"xa": 1}),
            ),
            (
                json!({"additionalProperties": false, "properties": {"a": {}}}),
                json!({"a": 1}),
                json!({"b": 1}),
            ),
            (
                json!({"additionalProperties": {"type": "null"}}),
                json!({"z": null}),
                json!({"z": 1}),
            ),
            (
                json!({"propertyNames": {"maxLength": 1}}),
                json!({"a": 1}),
                json!({"ab": 1}),
            ),
            (
                json!({"dependencies": {"a": ["b"]}}),
                json!({"a": 1, "b": 2}),
                json!({"a": 1}),
            ),
            (
                json!({"dependencies": {"a": {"required": ["c"]}}}),
                json!({"b": 1}),
                json!({"a": 1}),
            ),
            (
                json!({"items": {"type": "string"}}),
                json!(["a"]),
                json!(["a", 2]),
            ),
            (
                json!({"items": [{"type": "string"}], "additionalItems": false}),
                json!(["a"]),
                json!(["a", 2]),
            ),
            (json!({"minItems": 1, "maxItems": 1}), json!([0]), json!([])),
            (json!({"uniqueItems": true}), json!([1, 2]), json!([1, 1.0])),
            (json!({"contains": {"const": 3}}), json!([1, 3]), json!([1])),
            (
                json!({"minLength": 2, "maxLength": 2}),
                json!("é!"),
                json!("é"),
            ),
            (json!({"pattern": "^[a-z]+$"}), json!("abc"), json!("ab1")),
            (json!({"minimum": 0, "maximum": 1}), json!(1), json!(-1)),
            (json!({"exclusiveMinimum": 0}), json!(0.5), json!(0)),
            (json!({"exclusiveMaximum": 1}), json!(0.5), json!(1)),
            (json!({"multipleOf": 0.5}), json!(1.5), json!(1.2)),
            (
                json!({"allOf": [{"type": "number"}, {"minimum": 2}]}),
                json!(3),
                json!(1),
            ),
            (
                json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
                json!(null),
                json!(1),
            ),
            (
                json!({"oneOf": [{"type": "integer"}, {"type": "number"}]}),
                json!(1.5),
                json!(1),
            ),
            (json!({"not": {"type": "null"}}), json!(1), json!(null)),
            (
                json!({"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"type": "null"}}),
                json!("ab"),
                json!(1),
            ),
            (
                json!({"definitions": {"s": {"type": "string"}}, "$ref": "#/definitions/s"}),
                json!("a"),
                json!(1),
            ),
            (json!({"items": false}), json!([]), json!([1])),
        ];
        for (schema, kept, refused) in cases {
            assert!(
                passes(schema.clone(), kept.clone()),
                "{schema} should keep {kept}"
            );
            assert!(
                !passes(schema.clone(), refused.clone()),
                "{schema} should refuse {refused}"
            );
        }
    }

    #[test]
    fn a_reference_replaces_the_keywords_beside_it_and_format_is_an_annotation() {
        let schema = json!({"definitions": {"n": {"type": "integer", "format": "uint32"}},
            "properties": {"a": {"$ref": "#/definitions/n", "type": "string"}}});
        assert!(passes(schema.clone(), json!({"a": -5})));
        assert!(!passes(schema, json!({"a": "5"})));
    }

    #[test]
    fn failures_say_where_and_unions_keep_each_variant() {
        let schema = json!({"definitions": {"v2": {"Item": {"type": "object",
            "required": ["a/b"], "properties": {"a/b": {"type": "string"}}}}},
            "properties": {"items": {"items": {"oneOf": [
                {"$ref": "#/definitions/v2/Item"}, {"type": "null"}]}}}});
        let found = failures(schema, json!({"items": [null, {"a/b": 1}]}));
        assert_eq!(found.len(), 1, "{found:?}");
        let (pointer, kind) = &found[0];
        assert_eq!(pointer, "/items/1");
        let FailureKind::Union(variants) = kind else {
            panic!("{kind:?}")
        };
        assert_eq!(variants[0][0].pointer(), "/items/1/a~1b");
        assert_eq!(variants[0][0].kind, FailureKind::Type);
        assert_eq!(
            (variants[1][0].pointer(), &variants[1][0].kind),
            ("/items/1".into(), &FailureKind::Type)
        );
    }

    #[test]
    fn what_could_not_be_checked_is_refused_up_front() {
        let outside = Schema::new(json!({"properties": {"a": {"$ref": "other.json#/x"}}}));
        assert!(
            matches!(outside, Err(SchemaError::Reference { .. })),
            "{outside:?}"
        );
        let nowhere = Schema::new(json!({"anyOf": [{"$ref": "#/definitions/none"}]}));
        assert!(
            matches!(nowhere, Err(SchemaError::Reference { .. })),
            "{nowhere:?}"
        );
        let pattern = Schema::new(json!({"definitions": {"x": {"pattern": "(["}}}));
        assert!(
            matches!(pattern, Err(SchemaError::Pattern { .. })),
            "{pattern:?}"
        );
        let id = Schema::new(json!({"items": {"$id": "http://elsewhere/"}}));
        assert!(matches!(id, Err(SchemaError::NestedId { .. })), "{id:?}");
        let schema = Schema::new(json!({"definitions": {}})).unwrap();
        assert!(matches!(
            schema.validate("/definitions/gone", &json!(1)),
            Err(SchemaError::Missing(_))
        ));
    }
}
