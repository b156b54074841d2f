"""A minimal asyncio OpenAI client in the standard library, shaped as the openai package's ``AsyncOpenAI``.

AReaL-style agents (``async def run(self, data, **extra_kwargs)``) build
``AsyncOpenAI(base_url=extra_kwargs["base_url"], api_key=extra_kwargs["api_key"])`` and call
``await client.chat.completions.create(model=..., messages=[...])``; this client lets them run where
the openai package is not installed. A workflow worker runs many agents as tasks of ONE asyncio
loop, so nothing here blocks it: every request is its own connection (``asyncio.open_connection``,
HTTP/1.1 written by hand, ``Connection: close``), timed out with ``asyncio.wait_for`` and closed
when its task is cancelled.

What it does::

    client = AsyncOpenAI(base_url="http://127.0.0.1:8000/s/42:3/v1", api_key="sk-...")
    reply = await client.chat.completions.create(model="default", messages=[...], max_tokens=8)
    reply.choices[0].message.content, reply.usage.total_tokens, reply.model_dump()
    text = (await client.completions.create(model="default", prompt="1 + 1 =")).choices[0].text

``create`` sends ``{model, messages or prompt, **params}`` (a parameter given as None is left out),
plus openai's request options ``extra_body`` (merged into the body), ``extra_headers``,
``extra_query`` and ``timeout`` (this call's, in seconds). A non-2xx answer raises
:class:`APIStatusError` (or its subclass for the status, e.g. :class:`BadRequestError`) quoting the
server's ``{"error": {"message": ...}}``; a request that takes longer than ``timeout`` raises
:class:`APITimeoutError`; one that cannot connect or is cut off raises :class:`APIConnectionError`.

Not supported: ``https://`` (a ValueError: the engine's agent proxy speaks plain HTTP on the node)
and ``stream=True`` (NotImplementedError).
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import random
from typing import Any, Dict, List, Mapping, Optional, Tuple
from urllib.parse import urlencode, urlsplit

__all__ = [
    "APIConnectionError",
    "APIError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AsyncOpenAI",
    "AuthenticationError",
    "BadRequestError",
    "ChatCompletion",
    "ChatCompletionMessage",
    "ChatCompletionMessageToolCall",
    "Choice",
    "Completion",
    "CompletionChoice",
    "CompletionUsage",
    "ConflictError",
    "InternalServerError",
    "NotFoundError",
    "OpenAIError",
    "PermissionDeniedError",
    "RateLimitError",
    "UnprocessableEntityError",
]

_USER_AGENT = "rollout-client-AsyncOpenAI/0.1"
_INITIAL_RETRY_DELAY_S = 0.5
_MAX_RETRY_DELAY_S = 8.0
_STREAM_LIMIT = 1 << 20  # the longest header line accepted


# ---------------------------------------------------------------------------------------- errors


class OpenAIError(Exception):
    """The base of this client's errors, as the openai package's ``OpenAIError``."""


class APIError(OpenAIError):
    """A request failed; ``message`` says why, ``body`` is what the server answered (or None)."""

    def __init__(self, message: str, *, body: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.body = body
        error = body if isinstance(body, dict) else {}
        self.code = error.get("code")
        self.param = error.get("param")
        self.type = error.get("type")


class APIConnectionError(APIError):
    """The server could not be reached, or the connection broke before a whole answer came."""

    def __init__(self, message: str = "Connection error.") -> None:
        super().__init__(message)


class APITimeoutError(APIConnectionError):
    """The request took longer than the client's (or the call's) ``timeout``."""

    def __init__(self, message: str = "Request timed out.") -> None:
        super().__init__(message)


class APIResponseValidationError(APIError):
    """A 2xx answer that is not the JSON object expected."""

    def __init__(self, message: str, *, status_code: int, body: Any = None) -> None:
        super().__init__(message, body=body)
        self.status_code = status_code


class APIStatusError(APIError):
    """The server answered with a status that is not 2xx.

    ``status_code`` is the status; ``body`` the answer's ``error`` object when it is OpenAI's error
    JSON (``{"error": {"message": ...}}``), else the decoded JSON, else the text; ``headers`` the
    answer's headers (lowercase names). The message quotes the server's error message.
    """

    def __init__(self, message: str, *, status_code: int, body: Any = None, headers: Optional[Dict[str, str]] = None) -> None:
        super().__init__(message, body=body)
        self.status_code = status_code
        self.headers = dict(headers or {})


class BadRequestError(APIStatusError):
    """400."""


class AuthenticationError(APIStatusError):
    """401."""


class PermissionDeniedError(APIStatusError):
    """403."""


class NotFoundError(APIStatusError):
    """404."""


class ConflictError(APIStatusError):
    """409."""


class UnprocessableEntityError(APIStatusError):
    """422."""


class RateLimitError(APIStatusError):
    """429."""


class InternalServerError(APIStatusError):
    """5xx."""


_STATUS_ERRORS = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def _status_error(status: int, raw: bytes, headers: Dict[str, str]) -> APIStatusError:
    text = raw.decode("utf-8", errors="replace").strip()
    body: Any = text
    detail = text
    try:
        body = json.loads(text)
    except ValueError:
        pass
    if isinstance(body, dict) and "error" in body:
        body = body["error"]
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        detail = body["message"]
    elif isinstance(body, str) and body:
        detail = body
    elif body is not None and body != "":
        detail = json.dumps(body)
    cls = _STATUS_ERRORS.get(status) or (InternalServerError if status >= 500 else APIStatusError)
    message = f"Error code: {status} - {detail}" if detail else f"Error code: {status}"
    return cls(message, status_code=status, body=body, headers=headers)


# -------------------------------------------------------------------------------- response types


class _Model:
    """An answer's JSON object with attribute access: the fields in ``_fields`` are always there (None
    when the server left them out), any other key of the object is an attribute too.
    ``model_dump()`` is the object as the server sent it."""

    _fields: Dict[str, Any] = {}

    def __init__(self, data: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_raw", dict(data))
        for name, kind in self._fields.items():
            setattr(self, name, _convert(data.get(name), kind))
        for name, value in data.items():
            if name not in self._fields and isinstance(name, str) and name.isidentifier() and not hasattr(type(self), name):
                setattr(self, name, _convert(value, None))

    def model_dump(self, **_ignored: Any) -> Dict[str, Any]:
        """The JSON object as received (a deep copy)."""
        return copy.deepcopy(self._raw)

    def model_dump_json(self, **_ignored: Any) -> str:
        return json.dumps(self._raw)

    def to_dict(self) -> Dict[str, Any]:
        return self.model_dump()

    def to_json(self) -> str:
        return self.model_dump_json()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({shown})"


def _convert(value: Any, kind: Any) -> Any:
    """``value`` with its JSON objects as models: ``kind`` is a _Model class, ``[cls]`` for a list of
    them, or None for a generic model."""
    if value is None:
        return None
    if isinstance(kind, list):
        return [_convert(v, kind[0]) for v in value] if isinstance(value, list) else value
    if isinstance(value, dict):
        return (kind or _Model)(value)
    if isinstance(value, list):
        return [_convert(v, None) for v in value]
    return value


class CompletionUsage(_Model):
    _fields = {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None}


class Function(_Model):
    _fields = {"name": None, "arguments": None}


class ChatCompletionMessageToolCall(_Model):
    _fields = {"id": None, "type": None, "function": Function}


class ChatCompletionMessage(_Model):
    _fields = {
        "role": None,
        "content": None,
        "tool_calls": [ChatCompletionMessageToolCall],
        "refusal": None,
        "function_call": Function,
    }


class Choice(_Model):
    _fields = {"index": None, "message": ChatCompletionMessage, "finish_reason": None, "logprobs": None}


class ChatCompletion(_Model):
    """What ``chat.completions.create`` returns: ``id``, ``model``, ``choices`` (each ``message``,
    ``finish_reason``), ``usage``, and ``model_dump()``."""

    _fields = {
        "id": None,
        "object": None,
        "created": None,
        "model": None,
        "choices": [Choice],
        "usage": CompletionUsage,
        "system_fingerprint": None,
    }


class CompletionChoice(_Model):
    _fields = {"index": None, "text": None, "finish_reason": None, "logprobs": None}


class Completion(_Model):
    """What ``completions.create`` returns: ``choices[i].text``, ``usage``, and ``model_dump()``."""

    _fields = {
        "id": None,
        "object": None,
        "created": None,
        "model": None,
        "choices": [CompletionChoice],
        "usage": CompletionUsage,
        "system_fingerprint": None,
    }


# ---------------------------------------------------------------------------------------- HTTP


def _check_header(name: str, value: str) -> None:
    if any(c in str(name) + str(value) for c in "\r\n\0") or not name or ":" in name:
        raise ValueError(f"invalid HTTP header {name!r}")


class _Endpoint:
    """Where ``base_url`` points: host, port, the path prefix and the Host header."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        if parts.scheme == "https":
            raise ValueError(
                f"AsyncOpenAI: base_url {base_url!r} is https://, which this standard-library client does not speak;"
                " give an http:// base_url (the engine's agent proxy is plain HTTP) or install the openai package"
            )
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"AsyncOpenAI: base_url {base_url!r} is not an http:// URL with a host")
        self.host = parts.hostname
        try:
            self.port = parts.port or 80
        except ValueError as e:
            raise ValueError(f"AsyncOpenAI: base_url {base_url!r} has an invalid port: {e}") from None
        self.host_header = parts.netloc.rpartition("@")[2]
        self.prefix = parts.path.rstrip("/")
        self.query = parts.query

    def target(self, path: str, query: Optional[Mapping[str, Any]]) -> str:
        target = self.prefix + "/" + path.lstrip("/")
        q = "&".join(p for p in (self.query, urlencode(dict(query)) if query else "") if p)
        return target + ("?" + q if q else "")


async def _read_headers(reader: asyncio.StreamReader) -> Tuple[int, Dict[str, str]]:
    """The status and headers of one answer, 1xx interim answers skipped."""
    while True:
        line = await reader.readline()
        if not line:
            raise APIConnectionError("Connection error: the server closed the connection before answering.")
        parts = line.decode("latin-1").strip().split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise APIConnectionError(f"Connection error: not an HTTP status line: {line[:100]!r}")
        status = int(parts[1])
        headers: Dict[str, str] = {}
        while True:
            line = await reader.readline()
            if not line.endswith(b"\n"):
                raise APIConnectionError("Connection error: the connection closed inside the answer's headers.")
            if line in (b"\r\n", b"\n"):
                break
            name, sep, value = line.decode("latin-1").partition(":")
            if not sep:
                raise APIConnectionError(f"Connection error: malformed header line {line[:100]!r}")
            name = name.strip().lower()
            value = value.strip()
            headers[name] = headers[name] + ", " + value if name in headers else value
        if 100 <= status < 200 and status != 101:
            continue
        return status, headers


async def _read_body(reader: asyncio.StreamReader, status: int, headers: Dict[str, str]) -> bytes:
    if status in (204, 304):
        return b""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks: List[bytes] = []
        while True:
            line = await reader.readline()
            size_text = line.split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise APIConnectionError(f"Connection error: malformed chunk size line {line[:100]!r}") from None
            if size == 0:
                while True:  # trailers, up to the blank line (or the end, from a lax server)
                    trailer = await reader.readline()
                    if trailer in (b"\r\n", b"\n", b""):
                        return b"".join(chunks)
            chunks.append(await reader.readexactly(size))
            if await reader.readline() not in (b"\r\n", b"\n"):
                raise APIConnectionError("Connection error: a chunk does not end with CRLF.")
    length = headers.get("content-length")
    if length is not None:
        try:
            n = int(length.split(",")[0].strip())
        except ValueError:
            raise APIConnectionError(f"Connection error: invalid Content-Length {length!r}") from None
        return await reader.readexactly(n)
    return await reader.read()  # no length: the body runs to the end of the connection


class _Transport:
    """One HTTP/1.1 request per connection, on the running loop."""

    def __init__(self, base_url: str, api_key: str) -> None:
        self.endpoint = _Endpoint(base_url)
        _check_header("Authorization", api_key)
        self.api_key = api_key

    async def post(
        self, path: str, body: Dict[str, Any], headers: Optional[Mapping[str, str]], query: Optional[Mapping[str, Any]]
    ) -> Tuple[int, Dict[str, str], bytes]:
        e = self.endpoint
        payload = json.dumps(body).encode("utf-8")
        fields = {
            "Host": e.host_header,
            "User-Agent": _USER_AGENT,
            "Accept": "application/json",
            "Accept-Encoding": "identity",
            "Authorization": f"Bearer {self.api_key}",
            "Content-Type": "application/json",
        }
        for name, value in (headers or {}).items():
            if value is None:  # openai's way of removing a default header
                fields = {k: v for k, v in fields.items() if k.lower() != name.lower()}
                continue
            _check_header(name, str(value))
            fields = {k: v for k, v in fields.items() if k.lower() != name.lower()}
            fields[name] = str(value)
        fields["Content-Length"] = str(len(payload))
        fields["Connection"] = "close"
        head = f"POST {e.target(path, query)} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
        try:
            reader, writer = await asyncio.open_connection(e.host, e.port, limit=_STREAM_LIMIT)
        except OSError as exc:
            raise APIConnectionError(f"Connection error: cannot connect to {e.host_header}: {exc}") from exc
        done = False
        try:
            writer.write(head.encode("latin-1") + payload)
            await writer.drain()
            status, answer_headers = await _read_headers(reader)
            raw = await _read_body(reader, status, answer_headers)
            done = True
            return status, answer_headers, raw
        except asyncio.IncompleteReadError as exc:
            raise APIConnectionError(
                f"Connection error: the connection closed after {len(exc.partial)} of {exc.expected} bytes of the answer."
            ) from exc
        except (OSError, ValueError, asyncio.LimitOverrunError) as exc:  # ValueError: a line over the limit
            raise APIConnectionError(f"Connection error: {type(exc).__name__}: {exc}") from exc
        finally:
            # Cancelled (a timeout is a cancellation too) or failed: drop the socket at once.
            if done:
                writer.close()
            else:
                writer.transport.abort()


# ---------------------------------------------------------------------------------------- client

_REQUEST_OPTIONS = ("extra_headers", "extra_query", "extra_body", "timeout")


class AsyncOpenAI:
    """``AsyncOpenAI(base_url, api_key, timeout=600.0, max_retries=0)``: ``chat.completions.create``
    and ``completions.create`` over plain HTTP, without blocking the loop. Other keyword arguments of
    the openai package's constructor (``organization``, ``http_client``, ...) are accepted and
    ignored. ``base_url`` and ``api_key`` default to ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``.

    ``max_retries`` retries, with openai's backoff (0.5 s doubling up to 8 s), connection errors,
    timeouts and the statuses 408, 409, 429 and 5xx; the default 0 never retries, since every call
    through the engine's proxy is recorded for training.
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        timeout: Optional[float] = 600.0,
        max_retries: int = 0,
        **ignored: Any,
    ) -> None:
        if base_url is None:
            base_url = os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            raise OpenAIError("AsyncOpenAI needs a base_url: pass base_url= or set OPENAI_BASE_URL")
        if api_key is None:
            api_key = os.environ.get("OPENAI_API_KEY")
        if api_key is None:
            raise OpenAIError("AsyncOpenAI needs an api_key: pass api_key= or set OPENAI_API_KEY")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self._transport = _Transport(str(base_url), str(api_key))
        self.base_url = str(base_url).rstrip("/") + "/"
        self.api_key = str(api_key)
        self.timeout = timeout
        self.max_retries = int(max_retries)
        self._closed = False
        self.chat = _Chat(self)
        self.completions = _Completions(self)

    async def _post(self, path: str, body: Dict[str, Any], options: Dict[str, Any]) -> Dict[str, Any]:
        if self._closed:
            raise RuntimeError("AsyncOpenAI: cannot send a request, as the client has been closed")
        extra_body = options.get("extra_body")
        if extra_body:
            body.update(extra_body)
        timeout = options["timeout"] if options.get("timeout") is not None else self.timeout
        attempt = 0
        while True:
            try:
                status, headers, raw = await self._attempt(path, body, options, timeout)
            except APIConnectionError:
                if attempt >= self.max_retries:
                    raise
            else:
                if 200 <= status < 300:
                    return self._decode(status, raw)
                error = _status_error(status, raw, headers)
                if attempt >= self.max_retries or not (status in (408, 409, 429) or status >= 500):
                    raise error
            await asyncio.sleep(min(_INITIAL_RETRY_DELAY_S * 2 ** attempt, _MAX_RETRY_DELAY_S) * (1 - 0.25 * random.random()))
            attempt += 1

    async def _attempt(
        self, path: str, body: Dict[str, Any], options: Dict[str, Any], timeout: Optional[float]
    ) -> Tuple[int, Dict[str, str], bytes]:
        request = self._transport.post(path, body, options.get("extra_headers"), options.get("extra_query"))
        if timeout is None:
            return await request
        try:
            return await asyncio.wait_for(request, timeout)
        except asyncio.TimeoutError:
            raise APITimeoutError(f"Request timed out: POST {path} took longer than {timeout} s.") from None

    @staticmethod
    def _decode(status: int, raw: bytes) -> Dict[str, Any]:
        try:
            data = json.loads(raw.decode("utf-8"))
        except ValueError:
            raise APIResponseValidationError(
                f"the server's {status} answer is not JSON: {raw[:200]!r}", status_code=status, body=raw.decode("utf-8", "replace")
            ) from None
        if not isinstance(data, dict):
            raise APIResponseValidationError(f"the server's {status} answer is not a JSON object", status_code=status, body=data)
        return data

    def is_closed(self) -> bool:
        return self._closed

    async def close(self) -> None:
        """No request may be sent afterwards; requests under way finish (each has its own connection)."""
        self._closed = True

    async def __aenter__(self) -> "AsyncOpenAI":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncOpenAI(base_url={self.base_url!r})"


def _split(params: Dict[str, Any], what: str) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """The body's parameters (None left out) and the request options, refusing ``stream=True``."""
    if params.get("stream"):
        raise NotImplementedError(
            f"{what}(stream=True): streaming is not supported by rollout_client's AsyncOpenAI"
            " (standard library only); call without stream, or install the openai package"
        )
    options = {k: params.pop(k) for k in _REQUEST_OPTIONS if k in params}
    return {k: v for k, v in params.items() if v is not None}, options


class _ChatCompletions:
    def __init__(self, client: AsyncOpenAI) -> None:
        self._client = client

    async def create(self, *, messages: List[Dict[str, Any]], model: str, **params: Any) -> ChatCompletion:
        """POST ``{base_url}/chat/completions`` with ``{model, messages, **params}``."""
        rest, options = _split(params, "chat.completions.create")
        body = {"model": model, "messages": messages, **rest}
        return ChatCompletion(await self._client._post("chat/completions", body, options))


class _Chat:
    def __init__(self, client: AsyncOpenAI) -> None:
        self.completions = _ChatCompletions(client)


class _Completions:
    def __init__(self, client: AsyncOpenAI) -> None:
        self._client = client

    async def create(self, *, model: str, prompt: Any, **params: Any) -> Completion:
        """POST ``{base_url}/completions`` with ``{model, prompt, **params}``."""
        rest, options = _split(params, "completions.create")
        body = {"model": model, "prompt": prompt, **rest}
        return Completion(await self._client._post("completions", body, options))
