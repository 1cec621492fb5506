//! The body of an HTTP reply the mock sends: whole, or streamed from a channel that a
//! delivery task ([`crate::mock::stream`]) feeds; shared by the HTTP and WebSocket serving.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

use crate::mock::stream::Chunk;

/// A response body: whole, or streamed from a channel.
pub(crate) enum ReplyBody {
    /// The whole body (taken when sent).
    Whole(Option<Bytes>),
    /// Chunks as a delivery task sends them; an error chunk drops the connection.
    Stream(mpsc::Receiver<Chunk>),
}

impl ReplyBody {
    /// A whole body.
    pub(crate) fn whole(bytes: Bytes) -> ReplyBody {
        ReplyBody::Whole((!bytes.is_empty()).then_some(bytes))
    }
}

impl Body for ReplyBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        match self.get_mut() {
            ReplyBody::Whole(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            ReplyBody::Stream(receiver) => receiver
                .poll_recv(cx)
                .map(|chunk| chunk.map(|c| c.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, ReplyBody::Whole(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ReplyBody::Whole(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            ReplyBody::Stream(_) => SizeHint::default(),
        }
    }
}
