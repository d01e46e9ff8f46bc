"""The fake LLM server, driven the way handoff_cli drives a model: real LiteLLM over HTTP."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from typing import Any

import pytest

from .conftest import litellm
from .fakellm import (
    Drop,
    Error,
    FakeLLMServer,
    Hang,
    Raw,
    RecordedRequest,
    Reply,
    count_message_tokens,
    count_tokens,
)
from .fakellm import llm_server as llm_server  # the fixture, until conftest imports it

pytestmark = pytest.mark.litellm  # every test here asks LiteLLM itself

MESSAGES = [{"role": "user", "content": "Say hello."}]


def complete(server: FakeLLMServer, *, stream: bool = True, timeout: float = 5.0, **kw: Any) -> Any:
    """One litellm.completion call, as handoff_cli makes it."""
    kw.setdefault("messages", MESSAGES)
    if stream:
        kw["stream_options"] = {"include_usage": True}
    return litellm().completion(
        model="openai/test-model",
        api_base=server.base_url,
        api_key="sk-test",
        stream=stream,
        timeout=timeout,
        num_retries=0,
        **kw,
    )


def collect(stream: Any) -> tuple[str, Any]:
    """The streamed text and the usage from the final chunk."""
    text, usage = "", None
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
        usage = getattr(chunk, "usage", None) or usage
    return text, usage


def raw_post(
    server: FakeLLMServer, body: Any, path: str = "/v1/chat/completions"
) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request("POST", path, data, {"Content-Type": "application/json"})
    return conn.getresponse()


# --- successful replies through LiteLLM ---------------------------------------------------------


def test_stream_text_and_usage(llm_server: FakeLLMServer) -> None:
    llm_server.script(Reply("Hello there, world!", chunks=3, usage=(11, 7)))
    text, usage = collect(complete(llm_server))
    assert text == "Hello there, world!"
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (11, 7, 18)

    [request] = llm_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "test-model"
    assert request.body["messages"] == MESSAGES
    assert request.stream and request.body["stream_options"] == {"include_usage": True}
    assert request.headers["authorization"] == "Bearer sk-test"


def test_stream_counts_usage_when_not_given(llm_server: FakeLLMServer) -> None:
    llm_server.script(Reply("A reply of some forty characters, or so."))
    text, usage = collect(complete(llm_server))
    sent = llm_server.requests[0].messages
    assert usage.prompt_tokens == count_message_tokens(sent) == len(json.dumps(sent)) // 4 + 1
    assert usage.completion_tokens == count_tokens(text) == 10


def test_non_streaming(llm_server: FakeLLMServer) -> None:
    llm_server.script(Reply("Plain answer.", usage=(3, 2), finish_reason="length"))
    response = complete(llm_server, stream=False)
    assert response.choices[0].message.content == "Plain answer."
    assert response.choices[0].finish_reason == "length"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (3, 2)
    assert not llm_server.requests[0].stream


def test_a_server_that_ignores_stream_answers_one_json_completion(
    llm_server: FakeLLMServer,
) -> None:
    plain = Reply("Plain answer.", usage=(3, 2), ignore_stream=True)
    llm_server.script(plain, plain)
    response = raw_post(llm_server, {"messages": MESSAGES, "stream": True})
    assert response.getheader("Content-Type") == "application/json"
    body = json.loads(response.read())
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["content"] == "Plain answer."
    assert llm_server.requests[0].stream
    # What LiteLLM's own streaming makes of such an answer: nothing (model.py reads it itself).
    text, _ = collect(complete(llm_server, messages=MESSAGES))
    assert text == ""
    assert llm_server.wait_idle(2) and llm_server.sent[0] == len(json.dumps(body))


def test_raw_sends_its_body_as_it_is(llm_server: FakeLLMServer) -> None:
    llm_server.script(Raw(b"not json", "text/plain"))
    response = raw_post(llm_server, {"messages": MESSAGES, "stream": True})
    assert (response.status, response.getheader("Content-Type")) == (200, "text/plain")
    assert response.read() == b"not json"


def test_sent_counts_what_went_out_before_the_client_hung_up(llm_server: FakeLLMServer) -> None:
    llm_server.script(Reply("word " * 10_000, chunk_size=1000, delay=0.01), Reply("ok"))
    response = raw_post(llm_server, {"messages": MESSAGES, "stream": True})
    assert response.fp is not None
    response.fp.read(2500)
    response.close()
    assert llm_server.wait_idle(timeout=2) and llm_server.client_gone == 1
    raw_post(llm_server, {"messages": MESSAGES}).read()
    assert llm_server.wait_idle(timeout=2)
    cut, whole = llm_server.sent
    assert 2500 <= cut < 20_000 and whole > 0


def test_script_is_consumed_in_order_then_default(llm_server: FakeLLMServer) -> None:
    llm_server.script(Reply("one"), Reply("two"))
    llm_server.default = Reply("fallback")
    assert llm_server.pending == 2
    texts = [collect(complete(llm_server))[0] for _ in range(4)]
    assert texts == ["one", "two", "fallback", "fallback"]
    assert llm_server.pending == 0
    assert len(llm_server.requests) == 4


def test_a_step_can_be_chosen_from_the_request(llm_server: FakeLLMServer) -> None:
    def echo(request: RecordedRequest) -> Reply:
        return Reply(f"you said: {request.messages[-1]['content']}")

    llm_server.default = echo
    assert collect(complete(llm_server))[0] == "you said: Say hello."


def test_path_without_v1_is_accepted(llm_server: FakeLLMServer) -> None:
    response = litellm().completion(
        model="openai/test-model",
        api_base=llm_server.base_url.removesuffix("/v1"),
        api_key="sk-test",
        messages=MESSAGES,
        num_retries=0,
        timeout=5,
    )
    assert response.choices[0].message.content == "ok"
    assert llm_server.requests[0].path == "/chat/completions"


# --- failures through LiteLLM -------------------------------------------------------------------

ERRORS = [
    pytest.param(Error.auth(), "AuthenticationError", 401, id="401"),
    pytest.param(Error.rate_limit(), "RateLimitError", 429, id="429"),
    pytest.param(Error.server_error(), "InternalServerError", 500, id="500"),
    pytest.param(Error.context_length(8192, 9000), "ContextWindowExceededError", 400, id="context"),
]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
@pytest.mark.parametrize(("error", "expected", "status"), ERRORS)
def test_errors_map_to_litellm_exceptions(
    llm_server: FakeLLMServer, error: Error, expected: str, status: int, stream: bool
) -> None:
    llm_server.script(error)
    with pytest.raises(getattr(litellm().exceptions, expected)) as caught:
        collect(complete(llm_server, stream=stream))
    import openai  # as LiteLLM, when asked: its import is ~0.7 s

    assert isinstance(caught.value, openai.APIError)  # litellm.APIError is not their base
    assert getattr(caught.value, "status_code", None) == status
    assert error.message in str(caught.value)
    assert len(llm_server.requests) == 1  # num_retries=0 really means no retries


def test_context_limit_answers_400_without_using_the_script(llm_server: FakeLLMServer) -> None:
    llm_server.max_context_tokens = 50
    llm_server.script(Reply("summary"))
    long = [{"role": "user", "content": "x" * 400}]
    with pytest.raises(
        litellm().exceptions.ContextWindowExceededError, match="maximum context length is 50"
    ):
        complete(llm_server, messages=long)
    assert llm_server.pending == 1
    assert collect(complete(llm_server))[0] == "summary"


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
@pytest.mark.parametrize("headers", [False, True], ids=["silent", "headers-then-silent"])
def test_hang_times_out_and_frees_the_server(
    llm_server: FakeLLMServer, stream: bool, headers: bool
) -> None:
    llm_server.script(Hang(30, headers=headers))
    started = time.monotonic()
    with pytest.raises(litellm().exceptions.Timeout):
        collect(complete(llm_server, stream=stream, timeout=0.3))
    assert time.monotonic() - started < 3
    # The handler noticed the client hang up instead of sleeping out its 30 s.
    assert llm_server.wait_idle(timeout=2)
    assert llm_server.client_gone == 1


def test_drop_is_a_connection_error(llm_server: FakeLLMServer) -> None:
    llm_server.script(Drop(), Drop())
    # LiteLLM reports a dropped connection as a 500 InternalServerError, "Connection error."
    for stream in (True, False):
        with pytest.raises(litellm().exceptions.InternalServerError, match="Connection error"):
            collect(complete(llm_server, stream=stream))
    assert len(llm_server.requests) == 2


def test_stopped_server_is_a_connection_error() -> None:
    with FakeLLMServer() as server:
        pass
    with pytest.raises(litellm().exceptions.InternalServerError, match="Connection error"):
        complete(server, stream=False)


# --- the wire format and the server itself ------------------------------------------------------


def sse_events(response: http.client.HTTPResponse) -> list[str]:
    body = response.read().decode()
    assert body.endswith("\n\n")
    events = body.split("\n\n")[:-1]
    assert all(e.startswith("data: ") for e in events)
    return [e.removeprefix("data: ") for e in events]


def test_sse_matches_openai(llm_server: FakeLLMServer) -> None:
    llm_server.script(Reply("ab cd", chunk_size=2, usage=(5, 2)))
    body = {"model": "m", "messages": MESSAGES, "stream": True}
    response = raw_post(llm_server, {**body, "stream_options": {"include_usage": True}})
    assert response.status == 200
    assert response.getheader("content-type") == "text/event-stream; charset=utf-8"
    assert response.getheader("transfer-encoding") == "chunked"
    *chunks, done = sse_events(response)
    assert done == "[DONE]"
    parsed = [json.loads(c) for c in chunks]
    assert {c["object"] for c in parsed} == {"chat.completion.chunk"}
    assert len({c["id"] for c in parsed}) == 1
    first, *content, final, usage = parsed
    assert first["choices"][0]["delta"]["role"] == "assistant"
    assert [c["choices"][0]["delta"]["content"] for c in content] == ["ab", " c", "d"]
    assert all(c["usage"] is None for c in [first, *content, final])
    assert final["choices"][0] == {
        "index": 0,
        "delta": {},
        "logprobs": None,
        "finish_reason": "stop",
    }
    assert usage["choices"] == []
    assert usage["usage"] == {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}

    # Without include_usage: no usage chunk, no usage key.
    llm_server.script(Reply("ab cd"))
    *chunks, done = sse_events(raw_post(llm_server, body))
    assert all("usage" not in json.loads(c) for c in chunks)
    assert json.loads(chunks[-1])["choices"][0]["finish_reason"] == "stop"


def test_error_body_matches_openai(llm_server: FakeLLMServer) -> None:
    llm_server.script(Error.rate_limit(retry_after=2))
    response = raw_post(llm_server, {"messages": MESSAGES})
    assert response.status == 429
    assert response.getheader("retry-after") == "2"
    error = json.loads(response.read())["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["code"], error["param"]) == ("rate_limit_exceeded", None)


def test_bad_requests(llm_server: FakeLLMServer) -> None:
    assert raw_post(llm_server, b"{not json").status == 400
    assert raw_post(llm_server, {"messages": []}, path="/v1/embeddings").status == 404
    assert llm_server.requests == []  # only well-formed chat requests are recorded


@pytest.mark.parametrize(
    ("reply", "pieces"),
    [
        (Reply("Hello big world"), ["Hello ", "big ", "world"]),
        (Reply("abcdefg", chunks=3), ["ab", "cd", "efg"]),
        (Reply("ab", chunks=5), ["a", "b"]),
        (Reply("abcdefg", chunk_size=3), ["abc", "def", "g"]),
        (Reply(""), []),
    ],
)
def test_reply_pieces(reply: Reply, pieces: list[str]) -> None:
    assert reply.pieces() == pieces


def test_reply_rejects_both_chunkings() -> None:
    with pytest.raises(ValueError):
        Reply("x", chunks=2, chunk_size=2)


def test_client_closing_mid_stream_stops_the_reply(llm_server: FakeLLMServer) -> None:
    llm_server.script(Reply("one two three four five", delay=0.2))
    response = raw_post(llm_server, {"messages": MESSAGES, "stream": True})
    assert response.fp is not None
    response.fp.readline()  # the first chunk's size line: the stream has started
    response.close()
    assert llm_server.wait_idle(timeout=2)
    assert llm_server.client_gone == 1


def test_stop_ends_a_hang_and_idle_connections_promptly() -> None:
    server = FakeLLMServer().start()
    server.script(Hang(60))
    idle = socket.create_connection(("127.0.0.1", server.port))  # keep-alive, never sends
    outcome: list[BaseException] = []

    def hung_client() -> None:
        try:
            raw_post(server, {}).read()
        except (OSError, http.client.HTTPException) as exc:
            outcome.append(exc)

    client = threading.Thread(target=hung_client, daemon=True)
    client.start()
    while not server.requests:
        time.sleep(0.01)
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 2
    client.join(2)
    assert not client.is_alive()
    assert outcome  # the client saw the connection close, with no response
    assert server.client_gone == 0  # the server gave up, not the client
    idle.close()


def test_binds_loopback_only(llm_server: FakeLLMServer) -> None:
    assert llm_server.server_address[0] == "127.0.0.1"
    assert llm_server.base_url == f"http://127.0.0.1:{llm_server.port}/v1"
    assert llm_server.errors == []


def test_a_failing_step_is_recorded_not_swallowed() -> None:
    def broken(request: RecordedRequest) -> Reply:
        raise LookupError("bug in the test's script")

    with FakeLLMServer() as server:
        server.script(broken)
        with pytest.raises(litellm().exceptions.InternalServerError, match="Connection error"):
            complete(server, stream=False)
    assert [type(e) for e in server.errors] == [LookupError]  # llm_server re-raises this
