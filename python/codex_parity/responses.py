"""Builders for scripted model responses, to pass to `Sidecar.enqueue`.

Each function returns one scripted response in the shape of docs/sidecar-protocol.md: a
list of Responses API stream events (an SSE body), or a dict for an HTTP error. The event
shapes are those the Rust sidecar's own builders make (`codex_parity_sidecar::bodies`).

    sidecar.enqueue(responses.assistant_reply("Hello!"))
    sidecar.enqueue(responses.function_call_reply("call-1", "shell", {"command": ["ls"]}),
                    responses.assistant_reply("Done."))
"""

from __future__ import annotations

import itertools
import json
from typing import Any

_ids = itertools.count(1)


def _next_id(prefix: str) -> str:
    return f"{prefix}-{next(_ids)}"


def created(resp_id: str) -> dict[str, Any]:
    """`response.created`: the first event of a response."""
    return {"type": "response.created", "response": {"id": resp_id}}


def completed(resp_id: str, total_tokens: int = 0) -> dict[str, Any]:
    """`response.completed`, with `total_tokens` as input and total token counts."""
    return {
        "type": "response.completed",
        "response": {
            "id": resp_id,
            "usage": {
                "input_tokens": total_tokens,
                "input_tokens_details": None,
                "output_tokens": 0,
                "output_tokens_details": None,
                "total_tokens": total_tokens,
            },
        },
    }


def _message(item_id: str, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "id": item_id,
        "content": [{"type": "output_text", "text": text}],
    }


def assistant_reply(text: str, resp_id: str | None = None) -> list[dict[str, Any]]:
    """One assistant message: `created`, the whole message item, `completed`."""
    resp_id = resp_id or _next_id("resp")
    return [
        created(resp_id),
        {"type": "response.output_item.done", "item": _message(f"msg-{resp_id}", text)},
        completed(resp_id),
    ]


def streaming_reply(parts: list[str], resp_id: str | None = None) -> list[dict[str, Any]]:
    """A message streamed in `parts`: an empty message item, one text delta per part, the
    whole message, `completed`."""
    resp_id = resp_id or _next_id("resp")
    item_id = f"msg-{resp_id}"
    events: list[dict[str, Any]] = [
        created(resp_id),
        {"type": "response.output_item.added", "item": _message(item_id, "")},
    ]
    events += [{"type": "response.output_text.delta", "delta": p} for p in parts]
    events.append({"type": "response.output_item.done", "item": _message(item_id, "".join(parts))})
    events.append(completed(resp_id))
    return events


def function_call_reply(
    call_id: str, name: str, arguments: Any, resp_id: str | None = None
) -> list[dict[str, Any]]:
    """A turn whose model calls the tool `name` with `arguments` (a JSON string, or a
    value that is encoded as one)."""
    resp_id = resp_id or _next_id("resp")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    item = {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}
    return [
        created(resp_id),
        {"type": "response.output_item.done", "item": item},
        completed(resp_id),
    ]


def http_error(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    """An HTTP error reply with an OpenAI-style JSON error body."""
    error: dict[str, Any] = {"message": message, "type": "server_error"}
    if code is not None:
        error["code"] = code
    return {"status": status, "body": {"error": error}}
