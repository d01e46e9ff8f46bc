"""A loopback OpenAI-compatible chat-completions server for the tests (stdlib only).

Each test scripts what the "model" does, one response per request::

    server.script(Reply("Hello there", chunks=3), Error.rate_limit(), Hang(30), Drop())
    server.default = Reply("ok")      # used once the script runs out
    server.max_context_tokens = 1000  # optional: longer prompts get a 400 context_length_exceeded

and then reads what the client sent from ``server.requests``, and how many bytes of each answer
went out (before it ended, or the client hung up) from ``server.sent``. It speaks HTTP/1.1 with
keep-alive, answers streaming requests with chunked ``text/event-stream`` SSE exactly as OpenAI
does, and binds only 127.0.0.1 on an ephemeral port. Token counts are deliberately crude but
deterministic: see ``count_tokens``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import select
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from types import TracebackType
from typing import Any

import pytest

HOST = "127.0.0.1"
PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})


def count_tokens(text: str) -> int:
    """The fake tokenizer: one token per 4 characters, rounded up (so "ok" is 1 token)."""
    return (len(text) + 3) // 4


def count_message_tokens(messages: Any) -> int:
    """Prompt tokens: ``count_tokens(json.dumps(messages))``, with json's default separators."""
    return count_tokens(json.dumps(messages))


# --- what a scripted request gets ---------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A successful completion; streamed as SSE when the request asks for ``stream``.

    The text is cut into ``chunks`` near-equal pieces or ``chunk_size``-character pieces (default:
    one piece per word, trailing space included). ``delay`` seconds pass before each piece.
    ``usage`` is ``(prompt_tokens, completion_tokens)``; None counts them with ``count_tokens``.
    With ``ignore_stream``, a streaming request gets one plain JSON completion
    (``Content-Type: application/json``), as from a server that ignores ``stream``. With
    ``cut_after``, the stream breaks off after that many pieces: the connection is closed with
    no end of the answer (no finish, no ``[DONE]``, no last HTTP chunk).
    """

    text: str = "ok"
    chunks: int | None = None
    chunk_size: int | None = None
    delay: float = 0.0
    usage: tuple[int, int] | None = None
    finish_reason: str = "stop"
    ignore_stream: bool = False
    cut_after: int | None = None

    def __post_init__(self) -> None:
        if self.chunks is not None and self.chunk_size is not None:
            raise ValueError("give chunks or chunk_size, not both")
        if (self.chunks is not None and self.chunks < 1) or (
            self.chunk_size is not None and self.chunk_size < 1
        ):
            raise ValueError("chunks and chunk_size must be at least 1")

    def pieces(self) -> list[str]:
        """The content deltas, which always join back to ``text``."""
        text = self.text
        if not text:
            return []
        if self.chunk_size is not None:
            size = self.chunk_size
            return [text[i : i + size] for i in range(0, len(text), size)]
        if self.chunks is not None:
            n = min(self.chunks, len(text))
            bounds = [len(text) * i // n for i in range(n + 1)]
            return [text[a:b] for a, b in itertools.pairwise(bounds)]
        return re.findall(r"\s*\S+\s*|\s+", text)


@dataclass(frozen=True)
class Error:
    """An OpenAI-style error body ``{"error": {message, type, param, code}}`` with ``status``."""

    status: int
    message: str
    type: str = "invalid_request_error"
    code: str | None = None
    param: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def auth(cls, key: str = "sk-test") -> Error:
        return cls(
            401,
            f"Incorrect API key provided: {key}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            code="invalid_api_key",
        )

    @classmethod
    def rate_limit(cls, retry_after: float | None = None) -> Error:
        # Real 429s carry retry-after; only send it when asked so clients don't sleep by default.
        headers = () if retry_after is None else (("retry-after", f"{retry_after:g}"),)
        return cls(
            429,
            "Rate limit reached for test-model in organization org-test on requests per min "
            "(RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.",
            type="requests",
            code="rate_limit_exceeded",
            headers=headers,
        )

    @classmethod
    def server_error(cls) -> Error:
        return cls(
            500,
            "The server had an error while processing your request. Sorry about that!",
            type="server_error",
            code="server_error",
        )

    @classmethod
    def context_length(cls, max_tokens: int, actual: int) -> Error:
        # Word for word what OpenAI sends; LiteLLM recognises it by this text.
        return cls(
            400,
            f"This model's maximum context length is {max_tokens} tokens. However, your "
            f"messages resulted in {actual} tokens. Please reduce the length of the messages.",
            code="context_length_exceeded",
            param="messages",
        )

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


@dataclass(frozen=True)
class Hang:
    """Read the request, then send nothing for ``seconds`` and close the connection.

    With ``headers=True`` a 200 status line and headers go out first, so the client is stuck
    reading the body rather than waiting for a response. Ends early when the client hangs up or
    the server stops, so a timed-out client never leaves a thread behind.
    """

    seconds: float = 60.0
    headers: bool = False


@dataclass(frozen=True)
class Drop:
    """Close the connection without sending a single byte back."""


@dataclass(frozen=True)
class Raw:
    """An answer whose body is ``body`` exactly, whatever the request asked for (with
    ``status``, 200 by default)."""

    body: bytes
    content_type: str = "application/json"
    status: int = 200


Response = Reply | Error | Hang | Drop | Raw
# A script step is a response or a function choosing one from the request.
Step = Response | Callable[["RecordedRequest"], Response]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received. ``headers`` keys are lower-case."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))


# --- the server ---------------------------------------------------------------------------------


class _ClientGone(Exception):
    """The client closed the connection (or the server is stopping) mid-response."""


class FakeLLMServer(ThreadingHTTPServer):
    """The server; ``start()`` it (or use ``with``), script it, read ``requests``, ``stop()`` it."""

    daemon_threads = True  # a stuck handler must never keep the test process alive
    block_on_close = False  # stop() joins the handlers itself, with a deadline

    def __init__(self) -> None:
        super().__init__((HOST, 0), _Handler)
        self.default: Step = Reply("ok")
        self.max_context_tokens: int | None = None
        # How the limit counts a prompt: a real provider uses its own tokenizer.
        self.count_tokens: Callable[[Any], int] = count_message_tokens
        self.stopping = threading.Event()
        self._lock = threading.Condition()
        self._script: deque[Step] = deque()
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self.most_in_flight = 0
        """The most requests ever answered at once."""
        self._client_gone = 0
        self._sent: list[int] = []
        self._connections: dict[threading.Thread, socket.socket] = {}
        self._thread: threading.Thread | None = None
        self.errors: list[BaseException] = []  # exceptions raised while handling, for asserts

    def server_bind(self) -> None:
        # HTTPServer.server_bind calls getfqdn(), a reverse DNS lookup that can stall offline.
        TCPServer.server_bind(self)
        self.server_name, self.server_port = HOST, self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A bug in a scripted callable should show up in the test, not just on stderr.
        exc = sys.exc_info()[1]
        if exc is not None and not isinstance(exc, ConnectionError):  # hang-ups are normal
            with self._lock:
                self.errors.append(exc)

    # -- lifecycle

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    def start(self) -> FakeLLMServer:
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, end every response in progress, close every connection, join."""
        self.stopping.set()
        if self._thread is not None:
            self.shutdown()
            self._thread.join(timeout)
            self._thread = None
        self.server_close()
        with self._lock:
            conns = dict(self._connections)
        for sock in conns.values():
            # Wakes handlers blocked reading an idle keep-alive connection.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout
        for thread in conns:
            thread.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- scripting and inspection

    def script(self, *steps: Step) -> None:
        """Queue responses; each request takes the next one, then ``default`` once they run out."""
        with self._lock:
            self._script.extend(steps)

    @property
    def pending(self) -> int:
        """Scripted responses not yet used."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def client_gone(self) -> int:
        """How many responses were cut short because the client hung up."""
        with self._lock:
            return self._client_gone

    @property
    def sent(self) -> list[int]:
        """The bytes of each response's body written to the client, in the order they ended
        (whole, or cut short by the client hanging up)."""
        with self._lock:
            return list(self._sent)

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Wait until no request is being answered; False if that took longer than ``timeout``."""
        with self._lock:
            return self._lock.wait_for(lambda: self._in_flight == 0, timeout)

    # -- used by the handler

    def _next(self, request: RecordedRequest) -> Response:
        with self._lock:
            self._requests.append(request)
            self._in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self._in_flight)
            limit = self.max_context_tokens
            tokens = self.count_tokens(request.body.get("messages", []))
            # An over-long prompt does not use up a scripted step: the retry should get it.
            if limit is not None and tokens > limit:
                return Error.context_length(limit, tokens)
            step = self._script.popleft() if self._script else self.default
        return step(request) if callable(step) else step

    def _done(self, gone: bool, sent: int) -> None:
        with self._lock:
            self._in_flight -= 1
            self._client_gone += gone
            self._sent.append(sent)
            self._lock.notify_all()

    def _register(self, sock: socket.socket | None) -> None:
        with self._lock:
            if sock is None:
                self._connections.pop(threading.current_thread(), None)
            else:
                self._connections[threading.current_thread()] = sock


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked SSE, like api.openai.com
    server_version = "fakellm/1.0"
    timeout = 60  # an idle keep-alive connection gives up eventually
    server: FakeLLMServer
    _body_sent = 0  # bytes of the current response's body written so far

    def setup(self) -> None:
        super().setup()
        self.server._register(self.connection)

    def finish(self) -> None:
        self.server._register(None)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean

    def do_GET(self) -> None:
        self._send_json(404, _not_found(self.path).body())

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.split("?")[0] not in PATHS:
            self._send_json(404, _not_found(self.path).body())
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._send_json(400, Error(400, "We could not parse the JSON body.").body())
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = RecordedRequest(self.path, body, headers)
        gone = False
        self._body_sent = 0
        try:
            self._respond(self.server._next(request), request)
        except (_ClientGone, ConnectionError):
            gone = not self.server.stopping.is_set()
            self.close_connection = True
        finally:
            self.server._done(gone, self._body_sent)

    # -- the responses

    def _respond(self, response: Response, request: RecordedRequest) -> None:
        if isinstance(response, Error):
            self._send_json(response.status, response.body(), response.headers)
        elif isinstance(response, Drop):
            self.close_connection = True
        elif isinstance(response, Raw):
            self._send_body(response.status, response.body, response.content_type)
        elif isinstance(response, Hang):
            self.close_connection = True  # whatever happens, this response is unfinished
            if response.headers:
                kind = "text/event-stream" if request.stream else "application/json"
                self._start(200, kind, chunked=True)
            self._wait(response.seconds)
        elif request.stream and not response.ignore_stream:
            self._stream(response, request)
        else:
            self._complete(response, request)

    def _complete(self, reply: Reply, request: RecordedRequest) -> None:
        self._wait(reply.delay * len(reply.pieces()))  # as long as the stream would take
        body = {
            **_envelope("chat.completion", request),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text, "refusal": None},
                    "logprobs": None,
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": _usage(reply, request),
        }
        self._send_json(200, body)

    def _stream(self, reply: Reply, request: RecordedRequest) -> None:
        options = request.body.get("stream_options") or {}
        include_usage = bool(options.get("include_usage"))
        base = _envelope("chat.completion.chunk", request)
        if include_usage:
            base["usage"] = None  # OpenAI puts usage: null on every chunk but the last

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return {**base, "choices": [choice]}

        self._start(200, "text/event-stream; charset=utf-8", chunked=True)
        self._event(chunk({"role": "assistant", "content": "", "refusal": None}))
        for number, piece in enumerate(reply.pieces()):
            if number == reply.cut_after:
                self.close_connection = True
                return
            self._wait(reply.delay)
            self._event(chunk({"content": piece}))
        self._event(chunk({}, reply.finish_reason))
        if include_usage:
            self._event({**base, "choices": [], "usage": _usage(reply, request)})
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")

    # -- HTTP plumbing

    def _start(self, status: int, content_type: str, *, chunked: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()

    def _send_json(
        self, status: int, body: dict[str, Any], headers: tuple[tuple[str, str], ...] = ()
    ) -> None:
        self._send_body(status, json.dumps(body).encode(), "application/json", headers)

    def _send_body(
        self,
        status: int,
        data: bytes,
        content_type: str,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        for start in range(0, len(data), 65536):  # in slices, so that a hang-up is counted
            self._write(data[start : start + 65536])

    def _event(self, payload: dict[str, Any]) -> None:
        self._write_chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _write_chunk(self, data: bytes) -> None:
        # One HTTP chunk per SSE event; the empty chunk ends the body.
        self._write(b"%x\r\n%s\r\n" % (len(data), data))

    def _write(self, data: bytes) -> None:
        self.wfile.write(data)
        self.wfile.flush()
        self._body_sent += len(data)

    def _wait(self, seconds: float) -> None:
        """Sleep, but raise _ClientGone as soon as the client hangs up or the server stops."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if self.server.stopping.is_set():
                raise _ClientGone
            readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
            if readable:
                if _peer_closed(self.connection):
                    raise _ClientGone
                self.server.stopping.wait(min(left, 0.05))  # pipelined bytes: don't spin


def _peer_closed(sock: socket.socket) -> bool:
    # The request was read in full, so a readable socket means EOF (or a pipelined request).
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _not_found(path: str) -> Error:
    return Error(404, f"Unknown request URL: POST {path}.", code="unknown_url")


def _envelope(obj: str, request: RecordedRequest) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": obj,
        "created": int(time.time()),
        "model": str(request.body.get("model", "test-model")),
        "system_fingerprint": None,
    }


def _usage(reply: Reply, request: RecordedRequest) -> dict[str, int]:
    if reply.usage is not None:
        prompt, completion = reply.usage
    else:
        prompt = count_message_tokens(request.body.get("messages", []))
        completion = count_tokens(reply.text)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


@pytest.fixture
def llm_server() -> Iterator[FakeLLMServer]:
    """A running FakeLLMServer, stopped (and its threads joined) after the test.

    Teardown re-raises the first exception a handler hit (say, a bug in a scripted callable),
    which the client would otherwise only see as a dropped connection.
    """
    with FakeLLMServer() as server:
        yield server
    if server.errors:
        raise server.errors[0]
