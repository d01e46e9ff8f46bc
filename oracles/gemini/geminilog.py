"""A loopback Gemini API server that logs every request (stdlib only).

    python3 geminilog.py LOG.jsonl --port-file FILE [--script SCRIPT.json]

Binds 127.0.0.1 on an ephemeral port (written to --port-file), appends each request to
LOG.jsonl as ``{"method", "path", "body"}``, and answers ``POST …/models/<m>:generateContent``
and ``:streamGenerateContent`` (SSE when ``alt=sse``) with one candidate, ``:countTokens`` with
4 characters a token, ``GET …/models`` with none. SCRIPT.json is a list of answers used one per
generate request in order (the last repeats): ``{"text": "..."}`` or ``{"call": NAME,
"args": {...}}``. Without one every answer is ``{"text": "ok"}``. It stops on SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Log:
    def __init__(self, path: str, script: list[dict[str, Any]]) -> None:
        self.path, self.script, self.served = path, script or [{"text": "ok"}], 0
        self.lock = threading.Lock()

    def record(self, method: str, path: str, body: Any) -> None:
        with self.lock, open(self.path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"method": method, "path": path, "body": body}) + "\n")

    def answer(self) -> dict[str, Any]:
        with self.lock:
            answer = self.script[min(self.served, len(self.script) - 1)]
            self.served += 1
        return answer


def candidate(answer: dict[str, Any], prompt_tokens: int) -> dict[str, Any]:
    if "call" in answer:
        part: dict[str, Any] = {
            "functionCall": {"name": answer["call"], "args": answer.get("args", {})}
        }
    else:
        part = {"text": answer.get("text", "ok")}
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
            log.record("GET", self.path, None)
            self._send(200, b'{"models": []}')

        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(size)
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            log.record("POST", self.path, body)
            tokens = len(raw) // 4
            if ":countTokens" in self.path:
                self._send(200, json.dumps({"totalTokens": tokens}).encode())
                return
            if ":generateContent" not in self.path and ":streamGenerateContent" not in self.path:
                self._send(404, b'{"error": {"code": 404, "message": "not here"}}')
                return
            made = candidate(log.answer(), tokens)
            if "alt=sse" in self.path:
                self._send(200, f"data: {json.dumps(made)}\r\n\r\n".encode(), "text/event-stream")
            elif ":streamGenerateContent" in self.path:
                self._send(200, json.dumps([made]).encode())
            else:
                self._send(200, json.dumps(made).encode())

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--script")
    args = parser.parse_args()
    script = json.load(open(args.script)) if args.script else []
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(Log(args.log, script)))
    with open(args.port_file, "w") as out:
        out.write(str(server.server_address[1]))
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print(server.server_address[1], flush=True)
    server.serve_forever()
    sys.exit(0)


if __name__ == "__main__":
    main()
