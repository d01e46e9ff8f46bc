"""A loopback OpenAI Responses API server that logs every request it receives (for Codex).

    python3 responseslog.py LOG.jsonl [--port-file FILE] [--script SCRIPT.json]

Binds 127.0.0.1 on an ephemeral port (written to --port-file, and printed as the first line of
stdout), appends each request to LOG.jsonl as one JSON line ``{"method", "path", "headers",
"body"}`` (the body parsed when it is JSON), and answers ``POST .../responses`` with the server-sent
events Codex reads: ``response.created``, then per output item ``response.output_item.added``,
its deltas (``response.output_text.delta``, ``response.reasoning_summary_text.delta``) and
``response.output_item.done``, then ``response.completed`` with the usage. ``GET .../models``
lists no models. Anything else is a 404 (logged too). It stops on SIGTERM.

SCRIPT.json is a list of answers, one per ``/responses`` request in order; the last one repeats.
An answer is a list of output items, or one item alone, each one of:

* ``{"text": "..."}``: an assistant message (``output_text``);
* ``{"reasoning": "summary", "encrypted": "opaque"}``: a reasoning item (``encrypted_content``
  when given, its summary streamed as ``reasoning_summary_text`` deltas);
* ``{"call": NAME, "arguments": {...}}``: a ``function_call`` (the arguments sent as a JSON string);
* ``{"item": {...}}``: any item as it is, for shapes the others do not make;

and an object answer may carry ``"usage": {"input_tokens": N, ...}``, reported instead of the
estimate (4 characters a token), so a test can tell Codex its context is full. Without a script
every answer is ``{"text": "ok"}``.

Stdlib only, so it runs with any Python 3.9+; ``codex.py`` starts it itself.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Answer = dict[str, Any]


class Log:
    """The request log and the answer script, shared by the handler threads."""

    def __init__(self, path: str, script: list[Any]) -> None:
        self.path = path
        self.script = script or [{"text": "ok"}]
        self.served = 0
        self.lock = threading.Lock()

    def record(self, method: str, path: str, headers: dict[str, str], body: Any) -> None:
        entry = {"method": method, "path": path, "headers": headers, "body": body}
        line = json.dumps(entry, ensure_ascii=False)
        with self.lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def next_answer(self) -> Answer:
        with self.lock:
            answer = self.script[min(self.served, len(self.script) - 1)]
            self.served += 1
        if isinstance(answer, list):
            return {"items": answer}
        if "items" in answer:
            return answer
        # One item alone, with or without a usage beside it.
        item = {k: v for k, v in answer.items() if k != "usage"}
        return {"items": [item], **({"usage": answer["usage"]} if "usage" in answer else {})}


# Headers worth keeping in the log: what the client says it is and how it frames its body (the
# key itself is a fixed fake, but no header that carries one is written down).
LOGGED_HEADERS = (
    "content-type",
    "content-encoding",
    "accept",
    "user-agent",
    "originator",
    "session_id",
)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the log file is the record
        pass

    def _headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items() if k.lower() in LOGGED_HEADERS}

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
        self.server.log.record("GET", self.path, self._headers(), None)
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [], "models": []})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        body = self._body()
        self.server.log.record("POST", self.path, self._headers(), body)
        if not self.path.split("?")[0].rstrip("/").endswith("/responses") or not isinstance(
            body, dict
        ):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        self._stream(self.server.log.next_answer(), body)

    def _stream(self, answer: Answer, body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        response_id = f"resp_{uuid.uuid4().hex[:16]}"
        model = body.get("model", "model")
        self._event("response.created", {"response": {"id": response_id, "model": model}})
        done: list[dict[str, Any]] = []
        for index, spec in enumerate(answer["items"]):
            item = make_item(spec)
            self._event(
                "response.output_item.added", {"output_index": index, "item": skeleton(item)}
            )
            self._deltas(index, item)
            self._event("response.output_item.done", {"output_index": index, "item": item})
            done.append(item)
        used = answer.get("usage") or estimate(body, done)
        completed = {
            "id": response_id,
            "model": model,
            "status": "completed",
            "output": done,
            "usage": used,
        }
        self._event("response.completed", {"response": completed})
        self._chunk(b"")

    def _deltas(self, index: int, item: dict[str, Any]) -> None:
        if item["type"] == "message":
            for part, content in enumerate(item["content"]):
                for word in words(content.get("text", "")):
                    self._event(
                        "response.output_text.delta",
                        {
                            "item_id": item["id"],
                            "output_index": index,
                            "content_index": part,
                            "delta": word,
                        },
                    )
        elif item["type"] == "reasoning":
            for part, summary in enumerate(item.get("summary") or []):
                for word in words(summary.get("text", "")):
                    self._event(
                        "response.reasoning_summary_text.delta",
                        {
                            "item_id": item["id"],
                            "output_index": index,
                            "summary_index": part,
                            "delta": word,
                        },
                    )

    def _event(self, kind: str, data: dict[str, Any]) -> None:
        payload = json.dumps({"type": kind, **data})
        self._chunk(f"event: {kind}\ndata: {payload}\n\n".encode())

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def make_item(spec: dict[str, Any]) -> dict[str, Any]:
    """The Responses API output item a script entry stands for."""
    if "item" in spec:
        return dict(spec["item"])
    if "call" in spec:
        return {
            "type": "function_call",
            "id": f"fc_{uuid.uuid4().hex[:16]}",
            "call_id": spec.get("call_id") or f"call_{uuid.uuid4().hex[:16]}",
            "name": spec["call"],
            "arguments": json.dumps(spec.get("arguments", {})),
            "status": "completed",
        }
    if "reasoning" in spec:
        item: dict[str, Any] = {
            "type": "reasoning",
            "id": f"rs_{uuid.uuid4().hex[:16]}",
            "summary": [{"type": "summary_text", "text": spec["reasoning"]}]
            if spec["reasoning"]
            else [],
        }
        if spec.get("encrypted") is not None:
            item["encrypted_content"] = spec["encrypted"]
        return item
    return {
        "type": "message",
        "id": f"msg_{uuid.uuid4().hex[:16]}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": spec.get("text", "ok"), "annotations": []}],
    }


def skeleton(item: dict[str, Any]) -> dict[str, Any]:
    """The item as ``output_item.added`` announces it: before its text has streamed."""
    if item["type"] == "message":
        return {**item, "status": "in_progress", "content": []}
    if item["type"] == "reasoning":
        return {**item, "summary": []}
    return item


def estimate(body: dict[str, Any], output: list[dict[str, Any]]) -> dict[str, Any]:
    """Token counts at 4 characters a token, so Codex's own accounting stays realistic."""
    input_tokens = (len(json.dumps(body.get("input", []))) + 3) // 4
    output_tokens = (len(json.dumps(output)) + 3) // 4
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


def words(text: str) -> list[str]:
    """The text as deltas, one per word (spaces kept), so they join back to it."""
    pieces = text.split(" ")
    return [p + " " for p in pieces[:-1]] + [pieces[-1]]


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, log: Log) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.log = log

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up once it has read the last event is not an error worth a traceback.
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
