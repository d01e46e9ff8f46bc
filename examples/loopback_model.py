"""A model anyone can start, to try handoff's model path with no provider and no key.

    python3 examples/loopback_model.py            # serves http://127.0.0.1:8000/v1
    handoff SESSION --model openai/loopback --api-base http://127.0.0.1:8000/v1

An OpenAI-compatible chat-completions server on loopback, Python's standard library only (no
project install needed to run it). It is no language model: each answer is a handoff document
in the six sections handoff asks for, made from the request itself (the conversation's first
user request as the goal, the number of messages, the last one), streamed as Server-Sent Events
when the client asks for a stream, as OpenAI streams. Stop it with Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOST = "127.0.0.1"
PATHS = ("/v1/chat/completions", "/chat/completions")


def text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = (p.get("text") for p in content if isinstance(p, dict))
        return " ".join(p for p in parts if isinstance(p, str))
    return ""


def one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def document(messages: list[Any]) -> str:
    """The answer: a document in handoff's six sections, from what the request holds."""
    users = [text_of(m.get("content")) for m in messages if m.get("role") == "user"]
    # The last user message is handoff's own prompt; the conversation comes before it.
    task = next((u for u in users[:-1] if u.strip()), "(no request in the conversation)")
    before = messages[:-1] if users else messages
    last = next((text_of(m.get("content")) for m in reversed(before) if m.get("content")), "")
    return "\n\n".join(
        [
            f"## Goal\n- {one_line(task)}",
            "## Constraints & Preferences\n- (written by the loopback model, which reads no "
            "constraints)",
            f"## Progress\n- {len(before)} messages of conversation were read",
            "## Key Decisions\n- none recorded by the loopback model",
            f"## Critical Context\n- the last message: {one_line(last) or '(empty)'}",
            "## Next Steps\n- go on from the last message",
        ]
    )


def tokens(text: str) -> int:
    """A crude count (4 characters a token): enough for the usage an answer reports."""
    return (len(text) + 3) // 4


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        if self.path.split("?")[0] not in PATHS:
            self._send(404, {"error": {"message": f"no such path: {self.path}"}})
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
            messages = [m for m in request.get("messages", []) if isinstance(m, dict)]
        except (ValueError, AttributeError):
            self._send(400, {"error": {"message": "the body is not a chat request"}})
            return
        answer = document(messages)
        usage = {
            "prompt_tokens": tokens(json.dumps(messages)),
            "completion_tokens": tokens(answer),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "created": int(time.time()),
            "model": request.get("model", "loopback"),
        }
        if request.get("stream"):
            self._stream(base, answer, usage)
        else:
            message = {"role": "assistant", "content": answer}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            self._send(
                200, {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
            )

    def _stream(self, base: dict[str, Any], answer: str, usage: dict[str, int]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        chunk = {**base, "object": "chat.completion.chunk"}
        words = answer.split(" ")
        last = len(words) - 1
        pieces = [{"role": "assistant", "content": ""}]
        pieces += [{"content": w + (" " if n < last else "")} for n, w in enumerate(words)]
        for delta in pieces:
            self._event({**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        self._event({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        self._event({**chunk, "choices": [], "usage": usage})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def _event(self, value: dict[str, Any]) -> None:
        self.wfile.write(b"data: " + json.dumps(value).encode() + b"\n\n")

    def _send(self, status: int, value: dict[str, Any]) -> None:
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the URL printed at start is all a person needs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8000, help="0: any free port")
    port = parser.parse_args().port
    server = ThreadingHTTPServer((HOST, port), Handler)
    print(f"loopback model at http://{HOST}:{server.server_address[1]}/v1 (Ctrl-C stops it)")
    print(
        f"  handoff SESSION --model openai/loopback --api-base http://{HOST}:{server.server_address[1]}/v1",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
