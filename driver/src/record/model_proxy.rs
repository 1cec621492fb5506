//! The recording proxy of `codex-parity record`: codex's model provider points at
//! [`ModelProxy::base_url`], and every request codex makes there (`POST /v1/responses`,
//! `GET /v1/models?…`, `POST /v1/responses/compact`, the Responses WebSocket) is forwarded to
//! the [`Upstream`], answered back to codex as the upstream answers (streamed, unchanged),
//! and recorded as an [`Exchange`] with the time of every event. HTTP is relayed by
//! [`super::http_relay`], the WebSocket by [`super::ws_relay`]; what they record and the
//! problems they meet are kept in a [`Journal`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};

use super::exchange::Exchange;
use super::http_relay::{self, BASE_PATH};
use super::journal::Journal;
use super::upstream::Upstream;
use super::ws_relay;

/// A running recording proxy on `127.0.0.1`; dropping it stops the listener and every relay.
pub struct ModelProxy {
    address: SocketAddr,
    upstream: Arc<Upstream>,
    journal: Arc<Journal>,
}

impl ModelProxy {
    /// Listens on `127.0.0.1` and a free port, forwarding to `upstream`.
    pub async fn start(upstream: Upstream) -> anyhow::Result<ModelProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the recording proxy on 127.0.0.1")?;
        let address = listener
            .local_addr()
            .context("reading the recording proxy's address")?;
        let journal = Arc::new(Journal::default());
        let upstream = Arc::new(upstream);
        journal.spawn(accept(listener, journal.clone(), upstream.clone()));
        Ok(ModelProxy {
            address,
            upstream,
            journal,
        })
    }

    /// What codex's provider `base_url` is set to: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}{BASE_PATH}", self.address)
    }

    /// Where it forwards to.
    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }

    /// The exchanges finished so far, by index (one still streaming is not among them).
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.journal.exchanges()
    }

    /// Stops serving and returns every exchange: those still waiting for the upstream are
    /// recorded as abandoned by codex
    /// ([`crate::record::exchange::End::ClientClosed`]); and the problems.
    pub async fn finish(self) -> (Vec<Exchange>, Vec<String>) {
        self.journal.stop();
        // Aborted tasks drop their futures when the runtime next polls them.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        (self.journal.exchanges(), self.journal.problems())
    }

    /// What went wrong so far (an unreachable upstream, a refused upgrade, a body cut
    /// short), each naming its request.
    pub fn problems(&self) -> Vec<String> {
        self.journal.problems()
    }
}

impl Drop for ModelProxy {
    fn drop(&mut self) {
        self.journal.stop();
    }
}

/// Accepts codex's connections, each served in a task of its own.
async fn accept(listener: TcpListener, journal: Arc<Journal>, upstream: Arc<Upstream>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                journal.spawn(serve(stream, journal.clone(), upstream.clone()));
            }
            Err(e) => {
                // Out of descriptors and the like: say so and try again a little later.
                journal.problem(format!("the recording proxy could not accept: {e}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Serves one connection of codex: HTTP/1.1, with the upgrade to the WebSocket.
async fn serve(stream: TcpStream, journal: Arc<Journal>, upstream: Arc<Upstream>) {
    let service = service_fn(move |request| {
        let journal = journal.clone();
        let upstream = upstream.clone();
        async move {
            if ws_relay::is_upgrade(&request) {
                ws_relay::upgrade(journal, upstream, request).await
            } else {
                http_relay::forward(journal, upstream, request).await
            }
        }
    });
    // A connection that breaks is codex's doing; the relays record what it cut short.
    let _ = http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use bytes::Bytes;
    use codex_parity_sidecar::handshake::{self, HandshakeError};
    use codex_parity_sidecar::{ConnectionScript, Scripted, Server, bodies, sse};
    use futures_util::{SinkExt, StreamExt};
    use http::{Request, StatusCode};
    use http_body_util::{BodyExt, Full};
    use serde_json::{Value, json};
    use tokio_tungstenite::tungstenite::Message;

    use super::*;
    use crate::record::exchange::{End, Transport};

    const SECRET: &str = "Bearer sk-proxy-test-secret";

    async fn proxy_to(server: &Server) -> ModelProxy {
        ModelProxy::start(Upstream::parse(&server.base_url()).unwrap())
            .await
            .unwrap()
    }

    /// A request to the proxy as codex makes it.
    fn request(method: &str, path: &str, body: impl Into<Bytes>) -> Request<Full<Bytes>> {
        Request::builder()
            .method(method)
            .uri(format!("/v1{path}"))
            .header("host", "127.0.0.1")
            .header("authorization", SECRET)
            .header("content-type", "application/json")
            .body(Full::new(body.into()))
            .unwrap()
    }

    /// Sends `request` to the proxy; the status and the body's chunks with when they came.
    async fn send(
        proxy: &ModelProxy,
        request: Request<Full<Bytes>>,
    ) -> (u16, Vec<(Instant, Bytes)>) {
        let client = Upstream::parse(&proxy.base_url()).unwrap();
        let response = client.send(request).await.unwrap();
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let mut chunks = Vec::new();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.unwrap().into_data() {
                chunks.push((Instant::now(), data));
            }
        }
        (status, chunks)
    }

    fn joined(chunks: &[(Instant, Bytes)]) -> String {
        chunks
            .iter()
            .map(|(_, c)| String::from_utf8_lossy(c))
            .collect()
    }

    /// Waits up to 5 s for `n` exchanges.
    async fn exchanges(proxy: &ModelProxy, n: usize) -> Vec<Exchange> {
        for _ in 0..500 {
            let exchanges = proxy.exchanges();
            if exchanges.len() >= n {
                return exchanges;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("fewer than {n} exchanges: {:?}", proxy.exchanges());
    }

    fn free_port() -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    }

    #[tokio::test]
    async fn an_sse_response_streams_through_unchanged_with_its_events_timed() {
        let server = Server::start("127.0.0.1", 0).await.unwrap();
        let events = bodies::streaming_reply("r1", "m1", &["Hel", "lo"]);
        server
            .enqueue(&[Scripted::sse(events.clone()).gap_ms(100)])
            .unwrap();
        let proxy = proxy_to(&server).await;
        let body = json!({"model": "m", "input": [], "stream": true}).to_string();
        let (status, chunks) = send(&proxy, request("POST", "/responses", body)).await;

        assert_eq!(status, 200);
        assert_eq!(joined(&chunks), sse::frame(&events).unwrap());
        let span = chunks.last().unwrap().0 - chunks[0].0;
        assert!(span >= Duration::from_millis(350), "not streamed: {span:?}");

        let recorded = exchanges(&proxy, 1).await;
        let exchange = &recorded[0];
        assert_eq!(
            (exchange.index, exchange.transport.clone()),
            (0, Transport::Http)
        );
        assert_eq!(
            (exchange.method.as_str(), exchange.path.as_str()),
            ("POST", "/responses")
        );
        assert_eq!(exchange.request["model"], "m");
        assert_eq!(exchange.status, 200);
        assert_eq!(exchange.end, End::Completed);
        assert!(exchange.is_model_request());
        let values: Vec<Value> = exchange.events.iter().map(|(_, v)| v.clone()).collect();
        assert_eq!(values, events);
        // The sidecar waits 100 ms before each event: none can arrive earlier than that
        // (a late read shortens the gap after it, so gaps are checked only as a whole).
        let times: Vec<u64> = exchange.events.iter().map(|(at, _)| *at).collect();
        for (i, at) in times.iter().enumerate() {
            let after = at - exchange.request_at;
            assert!(
                after >= (i as u64 + 1) * 100_000,
                "event {i} {after} µs in: {times:?}"
            );
        }
        let spread = times[times.len() - 1] - times[0];
        assert!((300_000..2_000_000).contains(&spread), "{times:?}");
        assert!(
            exchange
                .headers
                .iter()
                .any(|(n, v)| n == "content-type" && v.starts_with("text/event-stream"))
        );
        assert!(proxy.problems().is_empty(), "{:?}", proxy.problems());
    }

    #[tokio::test]
    async fn credentials_reach_the_upstream_but_not_the_record() {
        let server = Server::start("127.0.0.1", 0).await.unwrap();
        let reply = Scripted::sse(bodies::assistant_reply("r1", "hi"))
            .header("openai-organization", "org-secret")
            .header("x-codex-primary-used-percent", "12");
        server.enqueue(&[reply]).unwrap();
        let proxy = proxy_to(&server).await;
        let (status, _) = send(&proxy, request("POST", "/responses", "{}")).await;
        assert_eq!(status, 200);

        let captured = server.received_requests();
        assert_eq!(captured[0].header("authorization"), Some(SECRET));
        assert_eq!(captured[0].path(), "/v1/responses");
        let host = format!("127.0.0.1:{}", proxy.upstream().port());
        assert_eq!(captured[0].all_headers.get("host"), Some(&host));
        let recorded = exchanges(&proxy, 1).await;
        let names: Vec<&str> = recorded[0]
            .headers
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        assert!(names.contains(&"x-codex-primary-used-percent"), "{names:?}");
        assert!(!names.contains(&"authorization") && !names.contains(&"openai-organization"));
        let text = serde_json::to_string(&recorded).unwrap();
        assert!(!text.contains("sk-proxy-test-secret") && !text.contains("org-secret"));
    }

    #[tokio::test]
    async fn a_zstd_request_body_is_forwarded_as_sent_and_recorded_decoded() {
        let server = Server::start("127.0.0.1", 0).await.unwrap();
        server
            .enqueue(&[Scripted::sse(bodies::assistant_reply("r1", "hi"))])
            .unwrap();
        let proxy = proxy_to(&server).await;
        let body = json!({"model": "m", "input": [{"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "squeezed"}]}]});
        let packed = ruzstd::encoding::compress_to_vec(
            body.to_string().as_bytes(),
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let mut zstd_request = request("POST", "/responses", packed);
        zstd_request
            .headers_mut()
            .insert("content-encoding", "zstd".parse().unwrap());
        let (status, _) = send(&proxy, zstd_request).await;
        assert_eq!(status, 200);

        let captured = server.received_requests();
        assert_eq!(captured[0].header("content-encoding"), Some("zstd"));
        assert_eq!(captured[0].last_user_text().as_deref(), Some("squeezed"));
        assert_eq!(exchanges(&proxy, 1).await[0].request, body);
    }

    #[tokio::test]
    async fn an_unreachable_upstream_gets_codex_a_502_and_is_recorded() {
        let url = format!("http://127.0.0.1:{}/v1", free_port());
        let proxy = ModelProxy::start(Upstream::parse(&url).unwrap())
            .await
            .unwrap();
        let (status, chunks) = send(&proxy, request("POST", "/responses", "{}")).await;
        assert_eq!(status, 502);
        let answer: Value = serde_json::from_str(&joined(&chunks)).unwrap();
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("the upstream {url} refused the connection: ")),
            "{message}"
        );

        let recorded = exchanges(&proxy, 1).await;
        assert_eq!(recorded[0].status, 502);
        assert!(matches!(&recorded[0].end, End::UpstreamError { message: m } if m == message));
        let problems = proxy.problems();
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].starts_with("exchange 0 (POST /responses): the upstream ")
                && problems[0].contains(&url),
            "{problems:?}"
        );
    }

    #[tokio::test]
    async fn codex_going_away_mid_stream_is_client_closed() {
        let server = Server::start("127.0.0.1", 0).await.unwrap();
        server
            .enqueue(&[Scripted::sse(bodies::assistant_reply("r1", "hi")).stall_after(1)])
            .unwrap();
        let proxy = proxy_to(&server).await;
        let client = Upstream::parse(&proxy.base_url()).unwrap();
        let response = client
            .send(request("POST", "/responses", "{}"))
            .await
            .unwrap();
        let mut body = response.into_body();
        let first = body.frame().await.unwrap().unwrap();
        assert!(first.into_data().is_ok());
        let gone = crate::record::exchange::now_us();
        drop(body);

        let recorded = exchanges(&proxy, 1).await;
        let End::ClientClosed { at } = recorded[0].end else {
            panic!("{:?}", recorded[0].end);
        };
        assert!(at >= gone);
        assert_eq!(recorded[0].events.len(), 1);
        assert_eq!(recorded[0].events[0].1["type"], "response.created");
    }

    #[tokio::test]
    async fn codex_going_away_after_the_final_event_is_completed() {
        let server = Server::start("127.0.0.1", 0).await.unwrap();
        let reply = bodies::assistant_reply("r1", "hi");
        let n = reply.len();
        // Every event sent, then the stream held open: codex may close before it ends.
        server
            .enqueue(&[Scripted::sse(reply).stall_after(n)])
            .unwrap();
        let proxy = proxy_to(&server).await;
        let client = Upstream::parse(&proxy.base_url()).unwrap();
        let response = client
            .send(request("POST", "/responses", "{}"))
            .await
            .unwrap();
        let mut body = response.into_body();
        let mut got = Vec::new();
        while !String::from_utf8_lossy(&got).contains("response.completed") {
            let frame = body.frame().await.unwrap().unwrap();
            got.extend_from_slice(&frame.into_data().unwrap());
        }
        drop(body);

        let recorded = exchanges(&proxy, 1).await;
        assert_eq!(recorded[0].end, End::Completed);
        assert_eq!(recorded[0].events.len(), n);
    }

    #[tokio::test]
    async fn an_upstream_cut_mid_body_is_upstream_closed() {
        let server = Server::start("127.0.0.1", 0).await.unwrap();
        server
            .enqueue(&[Scripted::sse(bodies::assistant_reply("r1", "hi")).disconnect_after(1)])
            .unwrap();
        let proxy = proxy_to(&server).await;
        let client = Upstream::parse(&proxy.base_url()).unwrap();
        let response = client
            .send(request("POST", "/responses", "{}"))
            .await
            .unwrap();
        // Codex sees the body break, as it would have without the proxy.
        assert!(response.into_body().collect().await.is_err());
        let recorded = exchanges(&proxy, 1).await;
        assert!(
            matches!(recorded[0].end, End::UpstreamClosed { .. }),
            "{recorded:?}"
        );
        assert_eq!(recorded[0].events.len(), 1);
        assert_eq!(proxy.problems().len(), 1, "{:?}", proxy.problems());
    }

    #[tokio::test]
    async fn a_json_body_is_recorded_as_text_with_the_query() {
        let server = Server::start("127.0.0.1", 0).await.unwrap();
        let models = json!({"models": [{"slug": "gpt-test"}]});
        server.set_models(&models);
        let proxy = proxy_to(&server).await;
        let (status, chunks) =
            send(&proxy, request("GET", "/models?client_version=0.1.0", "")).await;
        assert_eq!(status, 200);
        assert_eq!(
            serde_json::from_str::<Value>(&joined(&chunks)).unwrap(),
            models
        );

        let recorded = exchanges(&proxy, 1).await;
        let exchange = &recorded[0];
        assert_eq!(exchange.path, "/models?client_version=0.1.0");
        assert_eq!(exchange.request, Value::Null);
        assert!(exchange.events.is_empty());
        let body: Value = serde_json::from_str(exchange.body.as_deref().unwrap()).unwrap();
        assert_eq!(body, models);
        assert!(!exchange.is_model_request());
        let all = server.requests(codex_parity_sidecar::RequestFilter {
            since: 0,
            all: true,
        });
        assert_eq!(all[0].query.as_deref(), Some("client_version=0.1.0"));
    }

    /// Opens codex's WebSocket to the proxy's `/v1/responses`.
    async fn websocket(
        proxy: &ModelProxy,
    ) -> Result<
        (
            tokio_tungstenite::WebSocketStream<TcpStream>,
            http::Response<()>,
        ),
        HandshakeError,
    > {
        let url = format!("{}/responses", proxy.base_url().replace("http://", "ws://"));
        let mut request = handshake::request(&url).unwrap();
        let headers = request.headers_mut();
        headers.insert("authorization", SECRET.parse().unwrap());
        headers.insert(
            "openai-beta",
            "responses_websockets=2026-02-06".parse().unwrap(),
        );
        let stream = TcpStream::connect(proxy.address).await.unwrap();
        handshake::connect(stream, request).await
    }

    #[tokio::test]
    async fn websocket_responses_are_relayed_and_recorded_per_response_create() {
        let server = Server::start("127.0.0.1", 0).await.unwrap();
        let events = bodies::assistant_reply("r1", "hi");
        let script = ConnectionScript::accept()
            .header("x-codex-turn-state", "ts-1")
            .response(Scripted::sse(events.clone()).gap_ms(50));
        server.websocket(None, vec![script]);
        let proxy = proxy_to(&server).await;
        let (mut ws, handshake) = websocket(&proxy).await.unwrap();
        assert_eq!(handshake.headers()["x-codex-turn-state"], "ts-1");

        ws.send(Message::text(json!({"type": "other.frame"}).to_string()))
            .await
            .unwrap();
        let create = json!({"type": "response.create", "model": "m", "input": []});
        ws.send(Message::text(create.to_string())).await.unwrap();
        let mut received = Vec::new();
        while let Some(message) = ws.next().await {
            if let Message::Text(text) = message.unwrap() {
                let event: Value = serde_json::from_str(text.as_str()).unwrap();
                let done = event["type"] == "response.completed";
                received.push(event);
                if done {
                    break;
                }
            }
        }
        assert_eq!(received, events);
        let recorded = proxy.exchanges();
        assert_eq!(
            recorded.len(),
            1,
            "recorded before codex saw the end: {recorded:?}"
        );
        let exchange = &recorded[0];
        assert_eq!(exchange.transport, Transport::WebSocket { connection: 0 });
        assert_eq!(
            (exchange.method.as_str(), exchange.path.as_str()),
            ("WS", "/responses")
        );
        assert_eq!((exchange.request.clone(), exchange.status), (create, 101));
        assert_eq!(exchange.end, End::Completed);
        assert!(exchange.is_model_request());
        let values: Vec<Value> = exchange.events.iter().map(|(_, v)| v.clone()).collect();
        assert_eq!(values, events);
        assert!(exchange.events[2].0 - exchange.request_at >= 150_000);
        // The turn-state token is passed on to codex, never kept: it is no header known
        // to carry no secret.
        assert!(
            !exchange
                .headers
                .iter()
                .any(|(name, _)| name == "x-codex-turn-state"),
            "{:?}",
            exchange.headers
        );

        let upgrade = &server.requests(codex_parity_sidecar::RequestFilter {
            since: 0,
            all: true,
        })[0];
        assert_eq!(upgrade.path(), "/v1/responses");
        assert_eq!(upgrade.header("authorization"), Some(SECRET));
        assert_eq!(
            upgrade.all_headers.get("openai-beta").map(String::as_str),
            Some("responses_websockets=2026-02-06")
        );
        assert!(
            !serde_json::to_string(&recorded)
                .unwrap()
                .contains("sk-proxy-test-secret")
        );

        // A response still open when codex hangs up ends as its doing.
        server
            .enqueue(&[Scripted::sse(events.clone()).stall_after(1)])
            .unwrap();
        ws.send(Message::text(
            json!({"type": "response.create"}).to_string(),
        ))
        .await
        .unwrap();
        let first = ws.next().await.unwrap().unwrap();
        assert!(first.to_text().unwrap().contains("response.created"));
        ws.close(None).await.unwrap();
        let recorded = exchanges(&proxy, 2).await;
        assert!(
            matches!(recorded[1].end, End::ClientClosed { .. }),
            "{recorded:?}"
        );
        assert_eq!(recorded[1].index, 1);
        assert!(proxy.problems().is_empty(), "{:?}", proxy.problems());
    }

    #[tokio::test]
    async fn a_refused_websocket_upgrade_is_passed_on_and_recorded() {
        let server = Server::start("127.0.0.1", 0).await.unwrap();
        server.websocket(None, vec![ConnectionScript::refuse(426)]);
        let proxy = proxy_to(&server).await;
        let error = websocket(&proxy).await.err().unwrap();
        let HandshakeError::Refused(response) = error else {
            panic!("{error}");
        };
        assert_eq!(response.status(), StatusCode::UPGRADE_REQUIRED);

        let recorded = exchanges(&proxy, 1).await;
        let exchange = &recorded[0];
        assert_eq!(exchange.transport, Transport::WebSocket { connection: 0 });
        assert_eq!(
            (exchange.method.as_str(), exchange.path.as_str()),
            ("GET", "/responses")
        );
        assert_eq!(exchange.status, 426);
        assert!(matches!(&exchange.end, End::UpstreamError { message } if message.contains("426")));
        assert!(
            proxy.problems()[0].contains(&server.base_url()),
            "{:?}",
            proxy.problems()
        );
    }

    #[tokio::test]
    async fn an_unreachable_websocket_upstream_gets_a_502() {
        let url = format!("http://127.0.0.1:{}/v1", free_port());
        let proxy = ModelProxy::start(Upstream::parse(&url).unwrap())
            .await
            .unwrap();
        let error = websocket(&proxy).await.err().unwrap();
        let HandshakeError::Refused(response) = error else {
            panic!("{error}");
        };
        assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
        let recorded = exchanges(&proxy, 1).await;
        assert!(
            matches!(&recorded[0].end, End::UpstreamError { message } if message.contains(&url))
        );
    }

    #[tokio::test]
    async fn dropping_the_proxy_stops_its_listener() {
        let server = Server::start("127.0.0.1", 0).await.unwrap();
        let proxy = proxy_to(&server).await;
        let address = proxy.address;
        assert!(
            proxy.base_url().starts_with("http://127.0.0.1:") && proxy.base_url().ends_with("/v1")
        );
        drop(proxy);
        for _ in 0..100 {
            if TcpStream::connect(address).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("still listening on {address}");
    }
}
