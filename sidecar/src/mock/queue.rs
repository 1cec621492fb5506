//! The script queue: scripted responses waiting for requests, each prepared once (framed
//! body, parsed headers) when queued, and the `when` routing that picks one for a request.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderName, HeaderValue};
use serde_json::Value;

use crate::mock::script::{Endpoint, ScriptError, Scripted, ScriptedReply, When};
use crate::wire::sse;

/// A scripted response ready to serve: the script plus what it sends, computed once.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The script it came from.
    pub scripted: Scripted,
    /// The HTTP status.
    pub status: u16,
    /// The whole body (the framed SSE for an events body).
    pub body: Bytes,
    /// The `content-type`, if any.
    pub content_type: Option<HeaderValue>,
    /// The other scripted headers.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

struct Entry {
    /// 0-based position in the order responses were scripted.
    ordinal: u64,
    prepared: Arc<Prepared>,
    summary: String,
}

impl Entry {
    fn when(&self) -> Option<&When> {
        self.prepared.scripted.when.as_ref()
    }

    fn endpoint(&self) -> Endpoint {
        self.prepared.scripted.endpoint
    }
}

/// Scripted responses in the order they were queued.
#[derive(Default)]
pub(crate) struct Queue {
    entries: VecDeque<Entry>,
    conditional: usize,
    next_ordinal: u64,
}

impl Queue {
    /// Appends a response; fails (and appends nothing) if it cannot be served.
    #[cfg(test)]
    pub(crate) fn push(&mut self, scripted: &Scripted) -> Result<(), ScriptError> {
        self.push_all(std::slice::from_ref(scripted))
            .map_err(|e| match e {
                ScriptError::AtIndex { source, .. } => *source,
                other => other,
            })
    }

    /// Appends responses, all or none; an error names the offending index.
    pub(crate) fn push_all(&mut self, list: &[Scripted]) -> Result<(), ScriptError> {
        let prepared = list
            .iter()
            .enumerate()
            .map(|(index, scripted)| {
                prepare(scripted).map_err(|e| ScriptError::AtIndex {
                    index,
                    source: Box::new(e),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        for prepared in prepared {
            self.conditional += usize::from(prepared.scripted.when.is_some());
            let summary = summary_of(&prepared.scripted);
            self.entries.push_back(Entry {
                ordinal: self.next_ordinal,
                prepared: Arc::new(prepared),
                summary,
            });
            self.next_ordinal += 1;
        }
        Ok(())
    }

    /// Takes the response for a request to `endpoint`: the first whose `when` it meets, else
    /// the first without `when`. Returns its ordinal and what to serve.
    pub(crate) fn take(
        &mut self,
        endpoint: Endpoint,
        body: &[u8],
        headers: &[(String, String)],
    ) -> Option<(u64, Arc<Prepared>)> {
        let position = self.specific(endpoint, body, headers).or_else(|| {
            self.entries
                .iter()
                .position(|e| e.when().is_none() && e.endpoint() == endpoint)
        })?;
        self.remove(position)
    }

    /// Takes only a response whose `when` the request meets (never a generic one).
    pub(crate) fn take_specific(
        &mut self,
        endpoint: Endpoint,
        body: &[u8],
        headers: &[(String, String)],
    ) -> Option<(u64, Arc<Prepared>)> {
        let position = self.specific(endpoint, body, headers)?;
        self.remove(position)
    }

    fn specific(
        &self,
        endpoint: Endpoint,
        body: &[u8],
        headers: &[(String, String)],
    ) -> Option<usize> {
        if self.conditional == 0 {
            return None;
        }
        let text = String::from_utf8_lossy(body);
        self.entries.iter().position(|e| {
            e.endpoint() == endpoint
                && e.when()
                    .is_some_and(|when| when.matches_text(&text, headers))
        })
    }

    fn remove(&mut self, position: usize) -> Option<(u64, Arc<Prepared>)> {
        let entry = self.entries.remove(position)?;
        self.conditional -= usize::from(entry.when().is_some());
        Some((entry.ordinal, entry.prepared))
    }

    /// How many responses wait.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// One line per waiting response, for the shutdown report.
    pub(crate) fn describe_pending(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|e| format!("scripted response #{}: {}", e.ordinal, e.summary))
            .collect()
    }

    /// Drops every waiting response and restarts the numbering.
    pub(crate) fn clear(&mut self) {
        *self = Queue::default();
    }
}

/// Checks `scripted` and computes what it sends.
pub(crate) fn prepare(scripted: &Scripted) -> Result<Prepared, ScriptError> {
    scripted.validate()?;
    let (status, body, mut mime) = match &scripted.reply {
        ScriptedReply::Sse(events) => {
            let text = sse::frame(events)?;
            (
                200,
                Bytes::from(text),
                Some("text/event-stream".to_string()),
            )
        }
        ScriptedReply::HttpError { status, body } => match body {
            Value::Null => (*status, Bytes::new(), None),
            Value::String(text) => (
                *status,
                Bytes::from(text.clone()),
                Some("text/plain".to_string()),
            ),
            json => (
                *status,
                Bytes::from(json.to_string()),
                Some("application/json".to_string()),
            ),
        },
        ScriptedReply::Raw { text, content_type } => {
            (200, Bytes::from(text.clone()), Some(content_type.clone()))
        }
    };
    let mut headers = Vec::new();
    for (name, value) in &scripted.headers {
        if name.eq_ignore_ascii_case("content-type") {
            mime = Some(value.clone());
        } else {
            headers.push(header(name, value)?);
        }
    }
    let content_type = mime
        .map(|m| {
            HeaderValue::from_str(&m)
                .map_err(|_| ScriptError::Shape(format!("{m:?} is not a valid content type")))
        })
        .transpose()?;
    Ok(Prepared {
        scripted: scripted.clone(),
        status,
        body,
        content_type,
        headers,
    })
}

/// A header pair, checked.
pub(crate) fn header(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), ScriptError> {
    let name = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| ScriptError::Shape(format!("{name:?} is not a valid header name")))?;
    let value = HeaderValue::from_str(value).map_err(|_| {
        ScriptError::Shape(format!(
            "header {name}: {value:?} is not a valid header value"
        ))
    })?;
    Ok((name, value))
}

fn summary_of(scripted: &Scripted) -> String {
    let what = match &scripted.reply {
        ScriptedReply::Sse(events) => {
            let types: Vec<&str> = events
                .iter()
                .filter_map(|e| e.get("type").and_then(Value::as_str))
                .collect();
            format!("SSE body [{}]", types.join(", "))
        }
        ScriptedReply::HttpError { status, .. } => format!("HTTP {status}"),
        ScriptedReply::Raw { text, .. } => format!("raw body {:?}", sse::shorten(text, 60)),
    };
    let what = match scripted.endpoint {
        Endpoint::Compact => format!("{what} for …/responses/compact"),
        Endpoint::Responses => what,
    };
    match &scripted.when {
        Some(when) => format!("{what} when {}", when.to_json()),
        None => what,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::bodies;

    fn queue(items: &[Scripted]) -> Queue {
        let mut q = Queue::default();
        for item in items {
            q.push(item).unwrap();
        }
        q
    }

    fn id_of(q: &mut Queue, body: &[u8], headers: &[(String, String)]) -> Option<u64> {
        q.take(Endpoint::Responses, body, headers)
            .map(|(ordinal, _)| 501 + ordinal)
    }

    #[test]
    fn takes_in_order_then_runs_out() {
        let mut q = queue(&[
            Scripted::http_error(501, Value::Null),
            Scripted::http_error(502, Value::Null),
        ]);
        assert_eq!(id_of(&mut q, b"", &[]), Some(501));
        assert_eq!(id_of(&mut q, b"", &[]), Some(502));
        assert_eq!(id_of(&mut q, b"", &[]), None);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn specific_beats_generic_and_unmatched_conditions_wait() {
        let mut q = queue(&[
            Scripted::http_error(501, Value::Null),
            Scripted::http_error(502, Value::Null).when_body_contains("B"),
            Scripted::http_error(503, Value::Null).when_header("x-w", "1"),
        ]);
        let w1 = vec![("x-w".to_string(), "1".to_string())];
        assert_eq!(id_of(&mut q, b"xx B xx", &[]), Some(502));
        assert_eq!(id_of(&mut q, b"A", &w1), Some(503));
        assert_eq!(id_of(&mut q, b"B", &[]), Some(501));
        let mut q = queue(&[Scripted::http_error(504, Value::Null).when_body_contains("C")]);
        assert_eq!(id_of(&mut q, b"D", &[]), None);
        assert_eq!(q.len(), 1);
        assert_eq!(q.describe_pending().len(), 1);
        assert!(
            q.describe_pending()[0].contains("body_contains"),
            "{:?}",
            q.describe_pending()
        );
    }

    #[test]
    fn bad_scripts_are_refused() {
        let mut q = Queue::default();
        assert!(q.push(&Scripted::sse(vec![serde_json::json!({})])).is_err());
        assert_eq!(q.len(), 0);
        q.push(&Scripted::sse(bodies::empty_response("r"))).unwrap();
        q.clear();
        assert_eq!(q.len(), 0);
    }
}
