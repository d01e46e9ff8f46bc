"""A loopback Gemini API server that logs every request (stdlib only).

    python3 geminilog.py LOG.jsonl --port-file FILE [--script SCRIPT.json]

Binds 127.0.0.1 on an ephemeral port (written to --port-file, and printed), appends each
request to LOG.jsonl as one JSON line ``{"n", "method", "path", "kind", "body"}`` and answers
the routes of the Generative Language API that Gemini CLI calls:

* ``POST …/models/<m>:streamGenerateContent?alt=sse``: ``kind: "main"``. The CLI sends every
  chat turn (its main agent loop) this way, with ``tools``. Answered from SCRIPT in order.
* ``POST …/models/<m>:generateContent``: ``kind: "aux"``. The CLI's side calls (the model
  router's classifier when the model is ``auto``, summaries, checks): no ``tools``, usually a
  ``responseJsonSchema``. Answered with a JSON value made from that schema (enums: their first
  value; so the router picks ``flash``), or text ``ok``. They never consume SCRIPT.
* ``POST …:countTokens``: about 4 characters a token. ``POST …:embedContent`` /
  ``:batchEmbedContents``: small vectors. ``GET …/models``: an empty list. Others: 404.

SCRIPT.json is a list of answers, one per main request in order (the last one repeats):
``{"text": "..."}`` or ``{"call": NAME, "args": {...}}``. Without one every answer is
``{"text": "ok"}``. It stops on SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Log:
    def __init__(self, path: str, script: list[dict[str, Any]]) -> None:
        self.path, self.script, self.served, self.count = path, script or [{"text": "ok"}], 0, 0
        self.lock = threading.Lock()

    def record(self, method: str, path: str, kind: str, body: Any) -> None:
        with self.lock, open(self.path, "a", encoding="utf-8") as log:
            self.count += 1
            entry = {"n": self.count, "method": method, "path": path, "kind": kind, "body": body}
            log.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def answer(self) -> dict[str, Any]:
        with self.lock:
            answer = self.script[min(self.served, len(self.script) - 1)]
            self.served += 1
        return answer


def from_schema(schema: Any) -> Any:
    """The smallest value a JSON schema (as the CLI writes them) accepts."""
    if not isinstance(schema, dict):
        return "ok"
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0]
    kind = str(kind or "object").lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: from_schema(sub) for name, sub in props.items()}
    if kind == "array":
        return [from_schema(schema.get("items"))] * int(schema.get("minItems", 0) or 0)
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "loopback"


def candidate(part: dict[str, Any], prompt_tokens: int) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": 5,
            "totalTokenCount": prompt_tokens + 5,
        },
        "modelVersion": "loopback",
    }


def main_part(answer: dict[str, Any]) -> dict[str, Any]:
    if "call" in answer:
        return {"functionCall": {"name": answer["call"], "args": answer.get("args", {})}}
    return {"text": answer.get("text", "ok")}


def aux_part(body: Any) -> dict[str, Any]:
    config = (body.get("generationConfig") or {}) if isinstance(body, dict) else {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if schema is not None:
        return {"text": json.dumps(from_schema(schema))}
    if config.get("responseMimeType") == "application/json":
        return {"text": "{}"}
    return {"text": "ok"}


def handler(log: Log) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            log.record("GET", self.path, "other", None)
            self._send(200, b'{"models": []}')

        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(size)
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            tokens = len(raw) // 4
            route = self.path.split("?")[0]
            if route.endswith(":streamGenerateContent"):
                log.record("POST", self.path, "main", body)
                made = candidate(main_part(log.answer()), tokens)
                if "alt=sse" in self.path:
                    data = f"data: {json.dumps(made)}\r\n\r\n".encode()
                    self._send(200, data, "text/event-stream")
                else:
                    self._send(200, json.dumps([made]).encode())
            elif route.endswith(":generateContent"):
                log.record("POST", self.path, "aux", body)
                self._send(200, json.dumps(candidate(aux_part(body), tokens)).encode())
            elif route.endswith(":countTokens"):
                log.record("POST", self.path, "other", body)
                self._send(200, json.dumps({"totalTokens": tokens}).encode())
            elif route.endswith(":embedContent"):
                log.record("POST", self.path, "other", body)
                self._send(200, b'{"embedding": {"values": [0.0, 0.0, 0.0]}}')
            elif route.endswith(":batchEmbedContents"):
                log.record("POST", self.path, "other", body)
                n = len(body.get("requests", [])) if isinstance(body, dict) else 0
                vectors = [{"values": [0.0, 0.0, 0.0]}] * n
                self._send(200, json.dumps({"embeddings": vectors}).encode())
            else:
                log.record("POST", self.path, "other", body)
                self._send(404, b'{"error": {"code": 404, "message": "not here"}}')

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--script")
    args = parser.parse_args()
    script = json.load(open(args.script)) if args.script else []
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(Log(args.log, script)))
    with open(args.port_file + ".part", "w") as out:
        out.write(str(server.server_address[1]))
    os.replace(args.port_file + ".part", args.port_file)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print(server.server_address[1], flush=True)
    server.serve_forever()
    sys.exit(0)


if __name__ == "__main__":
    main()
