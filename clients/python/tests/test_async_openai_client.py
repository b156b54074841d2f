"""rollout_client's standard-library AsyncOpenAI against a real local HTTP server on the test's loop,
and the letters agent (examples/python-workflows/letters_agent.py) that uses it."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

import pytest

from rollout_client.areal.experimental.openai import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AsyncOpenAI,
    BadRequestError,
    ChatCompletion,
    Completion,
    InternalServerError,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "python-workflows"
API_KEY = "sk-rollout-test"
PREFIX = "/s/42:3/v1"  # as the engine's proxy hands out base URLs


def chat_answer(content: str, model: str = "served-model", tool_calls: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    message: Dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
    }


class FakeServer:
    """An HTTP/1.1 server on 127.0.0.1 (port 0) that records each request and answers by its
    ``model``: "chunked" answers chunked, "error" 400 with OpenAI's error JSON, "flaky" 500 once,
    "slow" after 5 s, "wait" after 0.5 s, "hang" never (until the client goes away)."""

    def __init__(self) -> None:
        self.requests: List[Dict[str, Any]] = []
        self.received = asyncio.Event()
        self.disconnected = asyncio.Event()
        self.reply = "hello"
        self.tool_calls: Optional[List[Dict[str, Any]]] = None
        self.flaky = 0
        self._server: Optional[asyncio.AbstractServer] = None

    async def __aenter__(self) -> "FakeServer":
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}{PREFIX}"
        return self

    async def __aexit__(self, *exc: Any) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            method, target, version = (await reader.readline()).decode("latin-1").strip().split(" ")
            headers: Dict[str, str] = {}
            while True:
                line = (await reader.readline()).decode("latin-1")
                if line in ("\r\n", ""):
                    break
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = json.loads(await reader.readexactly(int(headers["content-length"])))
            self.requests.append({"method": method, "target": target, "version": version, "headers": headers, "body": body})
            self.received.set()
            await self._answer(reader, writer, target, body)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, target: str, body: Dict[str, Any]) -> None:
        model = body.get("model")
        if model == "hang":
            await reader.read()  # until the client closes its side
            self.disconnected.set()
            return
        if model == "slow":
            await asyncio.sleep(5)
        if model == "wait":
            await asyncio.sleep(0.5)
        if model == "error":
            error = {"error": {"message": "This model's maximum context length is 32 tokens.", "type": "invalid_request_error",
                               "param": "messages", "code": "context_length_exceeded"}}
            return await self._send(writer, 400, json.dumps(error).encode())
        if model == "flaky" and self.flaky > 0:
            self.flaky -= 1
            return await self._send(writer, 500, b'{"error": {"message": "try again"}}')
        if target.endswith("/chat/completions"):
            answer = chat_answer(self.reply, model=model, tool_calls=self.tool_calls)
        elif target.endswith("/completions"):
            answer = {"id": "cmpl-1", "object": "text_completion", "model": model,
                      "choices": [{"index": 0, "text": " 2", "finish_reason": "length", "logprobs": None}],
                      "usage": {"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5}}
        else:
            return await self._send(writer, 404, b'{"error": {"message": "no such route"}}')
        await self._send(writer, 200, json.dumps(answer).encode("utf-8"), chunked=model == "chunked")

    @staticmethod
    async def _send(writer: asyncio.StreamWriter, status: int, payload: bytes, chunked: bool = False) -> None:
        head = f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nConnection: close\r\n"
        if not chunked:
            writer.write((head + f"Content-Length: {len(payload)}\r\n\r\n").encode() + payload)
        else:
            writer.write((head + "Transfer-Encoding: chunked\r\n\r\n").encode())
            for i in range(0, len(payload), 7):  # small chunks, one with an extension, written apart
                piece = payload[i:i + 7]
                ext = ";name=value" if i == 0 else ""
                writer.write(f"{len(piece):X}{ext}\r\n".encode() + piece + b"\r\n")
                await writer.drain()
                await asyncio.sleep(0)
            writer.write(b"0\r\nX-Trailer: yes\r\n\r\n")
        await writer.drain()


def run(scenario: Callable[[FakeServer], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with FakeServer() as server:
            return await scenario(server)

    return asyncio.run(main())


MESSAGES = [{"role": "user", "content": "Reply with the letter q: qqqqqqqq"}]


def test_chat_completion_posts_the_request_and_returns_attribute_objects() -> None:
    async def scenario(server: FakeServer) -> Tuple[ChatCompletion, Dict[str, Any]]:
        async with AsyncOpenAI(base_url=server.base_url, api_key=API_KEY, organization="ignored") as client:
            reply = await client.chat.completions.create(
                model="m1", messages=MESSAGES, max_tokens=8, temperature=0.5, top_p=None,
                extra_body={"chat_template_kwargs": {"enable_thinking": False}}, extra_headers={"X-Episode": "7"},
            )
        return reply, server.requests[0]

    reply, request = run(scenario)
    assert request["method"] == "POST" and request["version"] == "HTTP/1.1"
    assert request["target"] == PREFIX + "/chat/completions"
    headers = request["headers"]
    assert headers["authorization"] == "Bearer " + API_KEY
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    assert headers["host"].startswith("127.0.0.1:")
    assert headers["x-episode"] == "7"
    assert request["body"] == {"model": "m1", "messages": MESSAGES, "max_tokens": 8, "temperature": 0.5,
                               "chat_template_kwargs": {"enable_thinking": False}}  # top_p=None left out

    assert isinstance(reply, ChatCompletion)
    assert reply.id == "chatcmpl-1" and reply.model == "m1"
    choice = reply.choices[0]
    assert choice.message.content == "hello" and choice.message.role == "assistant"
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop" and choice.index == 0
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (5, 3, 8)
    assert reply.model_dump() == chat_answer("hello", model="m1")


def test_tool_calls_are_objects_too() -> None:
    calls = [{"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 1}"}}]

    async def scenario(server: FakeServer) -> Tuple[ChatCompletion, str]:
        server.reply, server.tool_calls = "", calls
        client = AsyncOpenAI(base_url=server.base_url + "/", api_key=API_KEY)
        reply = await client.chat.completions.create(model="m", messages=MESSAGES, tools=[{"type": "function"}])
        return reply, server.requests[0]["target"]

    reply, target = run(scenario)
    assert target == PREFIX + "/chat/completions"  # a trailing slash on base_url changes nothing
    call = reply.choices[0].message.tool_calls[0]
    assert (call.id, call.type, call.function.name, json.loads(call.function.arguments)) == ("call_1", "function", "add", {"a": 1})
    assert reply.choices[0].message.model_dump()["tool_calls"] == calls


def test_chunked_answer_is_reassembled() -> None:
    async def scenario(server: FakeServer) -> ChatCompletion:
        server.reply = "a reply long enough for many chunks, ünïcödé included"
        client = AsyncOpenAI(base_url=server.base_url, api_key=API_KEY)
        return await client.chat.completions.create(model="chunked", messages=MESSAGES)

    reply = run(scenario)
    assert reply.choices[0].message.content == "a reply long enough for many chunks, ünïcödé included"
    assert reply.model == "chunked"


def test_completions_posts_the_prompt_and_returns_text() -> None:
    async def scenario(server: FakeServer) -> Tuple[Completion, Dict[str, Any]]:
        client = AsyncOpenAI(base_url=server.base_url, api_key=API_KEY)
        reply = await client.completions.create(model="m2", prompt="1 + 1 =", max_tokens=1, stop=None)
        await client.close()
        return reply, server.requests[0]

    reply, request = run(scenario)
    assert request["target"] == PREFIX + "/completions"
    assert request["body"] == {"model": "m2", "prompt": "1 + 1 =", "max_tokens": 1}
    assert isinstance(reply, Completion)
    assert reply.choices[0].text == " 2" and reply.choices[0].finish_reason == "length"
    assert reply.usage.total_tokens == 5
    assert reply.model_dump()["object"] == "text_completion"


def test_an_error_status_raises_with_the_servers_message() -> None:
    async def scenario(server: FakeServer) -> None:
        client = AsyncOpenAI(base_url=server.base_url, api_key=API_KEY)
        await client.chat.completions.create(model="error", messages=MESSAGES)

    with pytest.raises(APIStatusError) as caught:
        run(scenario)
    e = caught.value
    assert isinstance(e, BadRequestError) and isinstance(e, Exception)
    assert e.status_code == 400
    assert "This model's maximum context length is 32 tokens." in str(e)
    assert e.body["message"] == "This model's maximum context length is 32 tokens."
    assert e.code == "context_length_exceeded" and e.type == "invalid_request_error"


def test_max_retries_retries_a_500_and_the_default_does_not() -> None:
    async def scenario(server: FakeServer) -> Tuple[str, int, Optional[Exception]]:
        server.flaky = 1
        retried = await AsyncOpenAI(base_url=server.base_url, api_key=API_KEY, max_retries=2).chat.completions.create(
            model="flaky", messages=MESSAGES)
        server.flaky = 1
        try:
            await AsyncOpenAI(base_url=server.base_url, api_key=API_KEY).chat.completions.create(model="flaky", messages=MESSAGES)
            error = None
        except InternalServerError as e:
            error = e
        return retried.choices[0].message.content, len(server.requests), error

    content, requests, error = run(scenario)
    assert content == "hello"
    assert requests == 3  # 500 then 200, then one 500 without a retry
    assert error is not None and error.status_code == 500 and "try again" in str(error)


def test_a_slow_answer_times_out_and_the_connection_is_closed() -> None:
    async def scenario(server: FakeServer) -> float:
        client = AsyncOpenAI(base_url=server.base_url, api_key=API_KEY, timeout=0.3)
        start = time.monotonic()
        with pytest.raises(APITimeoutError, match="timed out"):
            await client.chat.completions.create(model="slow", messages=MESSAGES)
        elapsed = time.monotonic() - start
        with pytest.raises(APITimeoutError):  # a call's own timeout wins over the client's
            await AsyncOpenAI(base_url=server.base_url, api_key=API_KEY).chat.completions.create(
                model="slow", messages=MESSAGES, timeout=0.2)
        return elapsed

    elapsed = run(scenario)
    assert 0.25 <= elapsed < 2.0


def test_fifty_concurrent_requests_on_one_loop_take_about_the_time_of_one() -> None:
    async def scenario(server: FakeServer) -> Tuple[float, List[str]]:
        client = AsyncOpenAI(base_url=server.base_url, api_key=API_KEY)
        start = time.monotonic()
        replies = await asyncio.gather(*(
            client.chat.completions.create(model="wait", messages=[{"role": "user", "content": str(i)}]) for i in range(50)
        ))
        return time.monotonic() - start, [r.choices[0].message.content for r in replies]

    elapsed, contents = run(scenario)
    assert contents == ["hello"] * 50
    assert elapsed < 2.5, f"50 requests of 0.5 s each took {elapsed:.2f} s: the client blocks the loop"


def test_cancelling_a_request_closes_its_connection() -> None:
    async def scenario(server: FakeServer) -> bool:
        client = AsyncOpenAI(base_url=server.base_url, api_key=API_KEY)
        task = asyncio.get_running_loop().create_task(client.chat.completions.create(model="hang", messages=MESSAGES))
        await asyncio.wait_for(server.received.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(server.disconnected.wait(), 5)  # the server saw the socket close
        return server.disconnected.is_set()

    assert run(scenario)


def test_refusals_https_streaming_closed_client_and_no_server() -> None:
    with pytest.raises(ValueError, match="https"):
        AsyncOpenAI(base_url="https://api.example.com/v1", api_key="k")
    with pytest.raises(ValueError, match="http://"):
        AsyncOpenAI(base_url="ftp://host/v1", api_key="k")

    async def scenario(server: FakeServer) -> None:
        client = AsyncOpenAI(base_url=server.base_url, api_key=API_KEY)
        with pytest.raises(NotImplementedError, match="stream"):
            await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        with pytest.raises(NotImplementedError, match="stream"):
            await client.completions.create(model="m", prompt="x", stream=True)
        assert server.requests == []
        await client.close()
        assert client.is_closed()
        with pytest.raises(RuntimeError, match="closed"):
            await client.chat.completions.create(model="m", messages=MESSAGES)
        port = server.port
        await server.__aexit__()  # nobody listens on the port any more
        with pytest.raises(APIConnectionError):
            await AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=API_KEY).chat.completions.create(
                model="m", messages=MESSAGES)
        server._server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)  # for run()'s exit

    run(scenario)


def test_the_letters_agent_scores_the_reply_through_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.setitem(sys.modules, "openai", None)  # as where the openai package is not installed
    sys.modules.pop("letters_agent", None)
    import letters_agent

    assert letters_agent.AsyncOpenAI is AsyncOpenAI
    data = {"messages": MESSAGES, "target": "q"}

    async def scenario(server: FakeServer) -> Tuple[float, float, Dict[str, Any]]:
        agent = letters_agent.LettersAgent(gconfig=None, tokenizer=None)
        extra = {"base_url": server.base_url, "api_key": API_KEY}
        server.reply = "qqqqabcd"
        mixed = await agent.run(data, **extra)
        server.reply = "qqqqqqqq"
        perfect = await agent.run(data, **extra)
        return mixed, perfect, server.requests[0]

    mixed, perfect, request = run(scenario)
    sys.modules.pop("letters_agent", None)
    assert request["target"] == PREFIX + "/chat/completions"
    assert request["headers"]["authorization"] == "Bearer " + API_KEY
    assert request["body"] == {"model": "default", "messages": MESSAGES, "max_tokens": 8}
    assert mixed == pytest.approx((0.6 * 8 + 0.4 * 4) / 8)  # 0.8
    assert perfect == pytest.approx(1.0)
