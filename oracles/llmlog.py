"""A loopback model server (OpenAI chat completions, Anthropic Messages) that logs every request.

    python3 llmlog.py LOG.jsonl [--port-file FILE] [--script SCRIPT.json]

Binds 127.0.0.1 on an ephemeral port (written to --port-file, and printed as the first line of
stdout), appends each request to LOG.jsonl as one JSON line ``{"method", "path", "body"}`` (the
body parsed when it is JSON; ``headers`` too for the Anthropic routes), and answers
``POST .../chat/completions`` with a streamed (SSE) or a plain completion, as OpenAI does, and
``POST .../v1/messages`` (``?beta=true`` or not) with a streamed or a plain message, as Anthropic
does (SSE events ``message_start``, ``content_block_start``/``_delta``/``_stop``,
``message_delta``, ``message_stop``). ``POST .../v1/messages/count_tokens`` counts at 4
characters a token and takes no answer from the script. ``GET .../models`` lists no models. It
stops on SIGTERM.

SCRIPT.json is a list of answers, used one per completion or message request in order; the last
one repeats. Each is ``{"text": "..."}`` or ``{"tool": NAME, "arguments": {...}}`` (one tool call,
the finish reason ``tool_calls``, or ``tool_use`` on the Anthropic route). An Anthropic answer
may instead give its blocks, ``{"content": [BLOCK, ...]}``, each ``{"type": "text", "text"}``,
``{"type": "thinking", "thinking", "signature"}``, ``{"type": "redacted_thinking", "data"}`` or
``{"type": "tool_use", "name", "input"}`` (an ``id`` is made when none is given), and
``"stop_reason"`` and ``"usage"`` (merged over the counted one: a large ``input_tokens`` makes a
client think its context is full). Without a script every answer is ``{"text": "ok"}``.

Stdlib only, so it runs with any Python 3.9+; the oracles' drivers start it themselves.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class Log:
    """The request log and the answer script, shared by the handler threads."""

    def __init__(self, path: str, script: list[dict[str, Any]]) -> None:
        self.path = path
        self.script = script or [{"text": "ok"}]
        self.served = 0
        self.lock = threading.Lock()

    def record(
        self, method: str, path: str, body: Any, headers: dict[str, str] | None = None
    ) -> None:
        entry: dict[str, Any] = {"method": method, "path": path, "body": body}
        if headers is not None:
            entry["headers"] = headers
        line = json.dumps(entry, ensure_ascii=False)
        with self.lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def next_answer(self) -> dict[str, Any]:
        with self.lock:
            answer = self.script[min(self.served, len(self.script) - 1)]
            self.served += 1
            return answer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the log file is the record
        pass

    def _body(self) -> Any:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.server.log.record("GET", self.path, None)
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": []})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        body = self._body()
        route = self.path.split("?", 1)[0].rstrip("/")
        if route.endswith("/messages") or route.endswith("/messages/count_tokens"):
            self.server.log.record("POST", self.path, body, dict(self.headers.items()))
            if not isinstance(body, dict):
                self._send(400, anthropic_error("invalid_request_error", "the body is not JSON"))
            elif route.endswith("/count_tokens"):
                self._send(200, {"input_tokens": anthropic_input_tokens(body)})
            else:
                self._anthropic(body)
            return
        self.server.log.record("POST", self.path, body)
        if not self.path.rstrip("/").endswith("/chat/completions") or not isinstance(body, dict):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        answer = self.server.log.next_answer()
        model = body.get("model", "model")
        used = usage(body, answer)
        if body.get("stream"):
            self._stream(answer, model, used)
        else:
            self._send(200, completion(answer, model, used))

    def _stream(self, answer: dict[str, Any], model: str, used: dict[str, int]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }

        def event(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> None:
            chunk = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            if usage is not None:
                chunk["usage"] = usage
            self._chunk(b"data: " + json.dumps(chunk).encode() + b"\n\n")

        event({"role": "assistant", "content": ""})
        if "tool" in answer:
            call = {
                "index": 0,
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {
                    "name": answer["tool"],
                    "arguments": json.dumps(answer.get("arguments", {})),
                },
            }
            event({"tool_calls": [call]})
            event({}, "tool_calls", used)
        else:
            for word in words(answer.get("text", "ok")):
                event({"content": word})
            event({}, "stop", used)
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _anthropic(self, body: dict[str, Any]) -> None:
        answer = self.server.log.next_answer()
        blocks = anthropic_blocks(answer)
        stop = answer.get("stop_reason") or (
            "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        )
        used = {
            "input_tokens": anthropic_input_tokens(body),
            "output_tokens": (len(json.dumps(blocks)) + 3) // 4,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            **answer.get("usage", {}),
        }
        message = {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "model"),
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": used,
        }
        if not body.get("stream"):
            self._send(200, message)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def event(name: str, data: dict[str, Any]) -> None:
            payload = json.dumps({"type": name, **data})
            self._chunk(f"event: {name}\ndata: {payload}\n\n".encode())

        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {**used, "output_tokens": 1},
        }
        event("message_start", {"message": start})
        for index, block in enumerate(blocks):
            event("content_block_start", {"index": index, "content_block": block_start(block)})
            for delta in block_deltas(block):
                event("content_block_delta", {"index": index, "delta": delta})
            event("content_block_stop", {"index": index})
        event(
            "message_delta",
            {
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": used["output_tokens"]},
            },
        )
        event("message_stop", {})
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def usage(body: dict[str, Any], answer: dict[str, Any]) -> dict[str, int]:
    """Token counts at 4 characters a token, so the agents' own estimates stay realistic."""
    prompt = (len(json.dumps(body.get("messages", []))) + 3) // 4
    completion_tokens = (len(json.dumps(answer)) + 3) // 4
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
    }


def words(text: str) -> list[str]:
    """The text as content deltas, one per word (spaces kept), so they join back to it."""
    pieces = text.split(" ")
    return [p + " " for p in pieces[:-1]] + [pieces[-1]]


def completion(answer: dict[str, Any], model: str, used: dict[str, int]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.get("text", "ok")}
    finish = "stop"
    if "tool" in answer:
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {
                        "name": answer["tool"],
                        "arguments": json.dumps(answer.get("arguments", {})),
                    },
                }
            ],
        }
        finish = "tool_calls"
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": used,
    }


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def anthropic_input_tokens(body: dict[str, Any]) -> int:
    """The request's system prompt and messages at 4 characters a token."""
    return (len(json.dumps([body.get("system"), body.get("messages", [])])) + 3) // 4


def anthropic_blocks(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """An answer's content blocks, whole, as a plain (not streamed) message carries them."""
    if "content" in answer:
        given = answer["content"]
    elif "tool" in answer:
        given = [{"type": "tool_use", "name": answer["tool"], "input": answer.get("arguments", {})}]
    else:
        given = [{"type": "text", "text": answer.get("text", "ok")}]
    blocks = []
    for block in given:
        if block["type"] == "tool_use":
            block = {
                "type": "tool_use",
                "id": block.get("id") or f"toolu_{uuid.uuid4().hex[:24]}",
                "name": block["name"],
                "input": block.get("input", {}),
            }
        elif block["type"] == "thinking":
            block = {
                "type": "thinking",
                "thinking": block["thinking"],
                "signature": block.get("signature", ""),
            }
        blocks.append(block)
    return blocks


def block_start(block: dict[str, Any]) -> dict[str, Any]:
    """A block as ``content_block_start`` opens it: empty, its deltas to follow."""
    if block["type"] == "text":
        return {"type": "text", "text": ""}
    if block["type"] == "thinking":
        return {"type": "thinking", "thinking": "", "signature": ""}
    if block["type"] == "tool_use":
        return {**block, "input": {}}
    return block


def block_deltas(block: dict[str, Any]) -> list[dict[str, Any]]:
    if block["type"] == "text":
        return [{"type": "text_delta", "text": w} for w in words(block["text"])]
    if block["type"] == "thinking":
        deltas = [{"type": "thinking_delta", "thinking": w} for w in words(block["thinking"])]
        return [*deltas, {"type": "signature_delta", "signature": block["signature"]}]
    if block["type"] == "tool_use":
        text = json.dumps(block["input"])
        half = len(text) // 2  # two pieces, as a client must join partial JSON
        return [{"type": "input_json_delta", "partial_json": p} for p in (text[:half], text[half:])]
    return []


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, log: Log) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.log = log

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up once it has read [DONE] is not an error worth a traceback.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log")
    parser.add_argument("--port-file")
    parser.add_argument("--script")
    args = parser.parse_args()
    script = json.loads(Path(args.script).read_text(encoding="utf-8")) if args.script else []
    server = Server(Log(args.log, script))
    port = server.server_address[1]
    if args.port_file:
        with open(args.port_file, "w") as f:
            f.write(f"{port}\n")
    print(port, flush=True)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    server.serve_forever()
    sys.exit(0)


if __name__ == "__main__":
    main()
