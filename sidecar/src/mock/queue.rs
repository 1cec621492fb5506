//! The script queue: scripted responses waiting for requests, each prepared as a ready
//! wiremock template, and the `when` routing that picks one for a request.

use std::collections::VecDeque;
use std::time::Duration;

use serde_json::Value;
use wiremock::ResponseTemplate;

use crate::mock::script::{ScriptError, Scripted, ScriptedReply, When};
use crate::wire::sse;

struct Entry {
    /// 0-based position in the order responses were scripted.
    ordinal: u64,
    when: Option<When>,
    template: ResponseTemplate,
    summary: String,
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
    pub fn push(&mut self, scripted: &Scripted) -> Result<(), ScriptError> {
        self.push_all(std::slice::from_ref(scripted))
            .map_err(|e| match e {
                ScriptError::AtIndex { source, .. } => *source,
                other => other,
            })
    }

    /// Appends responses, all or none; an error names the offending index.
    pub fn push_all(&mut self, list: &[Scripted]) -> Result<(), ScriptError> {
        let prepared = list
            .iter()
            .enumerate()
            .map(|(index, scripted)| {
                template_for(scripted)
                    .map(|template| (scripted, template))
                    .map_err(|e| ScriptError::AtIndex {
                        index,
                        source: Box::new(e),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        for (scripted, template) in prepared {
            self.conditional += usize::from(scripted.when.is_some());
            self.entries.push_back(Entry {
                ordinal: self.next_ordinal,
                when: scripted.when.clone(),
                template,
                summary: summary_of(scripted),
            });
            self.next_ordinal += 1;
        }
        Ok(())
    }

    /// Takes the response for a request: the first whose `when` it meets, else the first
    /// without `when`. Returns its ordinal and its template.
    pub fn take(
        &mut self,
        body: &[u8],
        headers: &[(String, String)],
    ) -> Option<(u64, ResponseTemplate)> {
        let specific = if self.conditional > 0 {
            let text = String::from_utf8_lossy(body);
            self.entries.iter().position(|e| {
                e.when
                    .as_ref()
                    .is_some_and(|when| when.matches_text(&text, headers))
            })
        } else {
            None
        };
        let position = specific.or_else(|| self.entries.iter().position(|e| e.when.is_none()))?;
        let entry = self.entries.remove(position)?;
        self.conditional -= usize::from(entry.when.is_some());
        Some((entry.ordinal, entry.template))
    }

    /// How many responses wait.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// One line per waiting response, for the shutdown report.
    pub fn describe_pending(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|e| format!("scripted response #{}: {}", e.ordinal, e.summary))
            .collect()
    }

    /// Drops every waiting response and restarts the numbering.
    pub fn clear(&mut self) {
        *self = Queue::default();
    }
}

/// The wiremock template that serves `scripted`.
pub(crate) fn template_for(scripted: &Scripted) -> Result<ResponseTemplate, ScriptError> {
    scripted.validate()?;
    let (status, body, mut mime) = match &scripted.reply {
        ScriptedReply::Sse(events) => {
            let text = sse::frame(events)?;
            (200, text.into_bytes(), "text/event-stream".to_string())
        }
        ScriptedReply::HttpError { status, body } => match body {
            Value::Null => (*status, Vec::new(), String::new()),
            Value::String(text) => (*status, text.clone().into_bytes(), "text/plain".to_string()),
            json => (
                *status,
                json.to_string().into_bytes(),
                "application/json".to_string(),
            ),
        },
        ScriptedReply::Raw { text, content_type } => {
            (200, text.clone().into_bytes(), content_type.clone())
        }
    };
    let mut template = ResponseTemplate::new(status);
    for (name, value) in &scripted.headers {
        if name.eq_ignore_ascii_case("content-type") {
            mime = value.clone();
        } else {
            template = template.append_header(name.as_str(), value.as_str());
        }
    }
    template = template.set_body_raw(body, &mime);
    if scripted.delay_ms > 0 {
        template = template.set_delay(Duration::from_millis(scripted.delay_ms));
    }
    Ok(template)
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
        q.take(body, headers).map(|(ordinal, _)| 501 + ordinal)
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
