"""A tokenizer with the Hugging Face API whose ids are the engine's: it asks the engine's JVM.

The worker's environment names a stream Unix socket in ``ROLLOUT_TOKENIZER_SOCKET``. On it, each
request is one line of JSON and its reply is one line of JSON:

  {"op": "info"}                                   -> {"eos_token_id": 2, "pad_token_id": 0 or null,
                                                       "vocab_size": 151936, "name": "..."}
  {"op": "encode", "text": "..."}                  -> {"ids": [...]}
  {"op": "decode", "ids": [...], "skip_special_tokens": false}  -> {"text": "..."}
  {"op": "chat", "messages": [...], "add_generation_prompt": true,
   "variables": {"tools": [...], "enable_thinking": false, ...}} -> {"text": "..."}
  any request that fails                           -> {"error": "..."}  (raised as ValueError)

Each thread opens its own connection on its first request, so a reward function run in
:class:`AsyncRewardWrapper`'s threads can decode while episodes tokenize on the event loop's
thread. ``info`` is asked once and kept. A request changes nothing in the engine, so one whose
kept connection turns out broken (reset, or closed before the reply) is sent once more on a new
connection; a timeout is not retried.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from typing import Any, Dict, List, Optional, Sequence, Union

__all__ = ["SOCKET_ENV", "BatchEncoding", "EngineTokenizer"]

#: The environment variable holding the socket's path.
SOCKET_ENV = "ROLLOUT_TOKENIZER_SOCKET"

#: ``__call__`` keywords that would change its result's form: refused rather than ignored.
_UNSUPPORTED_CALL_KWARGS = ("return_tensors", "padding", "truncation", "max_length")


class BatchEncoding(dict):
    """What calling the tokenizer returns: a dict whose keys are also attributes, as transformers'."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _ids(token_ids: Any) -> List[int]:
    """An int, a sequence of ints, a numpy array or a torch tensor (1-d or a scalar) as a list."""
    if hasattr(token_ids, "tolist"):  # numpy and torch, arrays and scalars
        token_ids = token_ids.tolist()
    if isinstance(token_ids, int):
        return [token_ids]
    return [int(t) for t in token_ids]


class EngineTokenizer:
    """The engine's tokenizer through the socket at ``socket_path`` (default: ``$ROLLOUT_TOKENIZER_SOCKET``).

    Nothing is connected until the first request. ``timeout`` bounds each request, in seconds.
    """

    def __init__(self, socket_path: Optional[str] = None, timeout: float = 60.0) -> None:
        path = socket_path or os.environ.get(SOCKET_ENV)
        if not path:
            raise ValueError(f"no tokenizer socket: pass socket_path or set {SOCKET_ENV}")
        self.socket_path = path
        self.timeout = timeout
        self._local = threading.local()
        self._info: Optional[Dict[str, Any]] = None
        self._info_lock = threading.Lock()

    @classmethod
    def from_env(cls) -> Optional["EngineTokenizer"]:
        """The tokenizer of ``$ROLLOUT_TOKENIZER_SOCKET``, or None when it is not set."""
        path = os.environ.get(SOCKET_ENV)
        return cls(path) if path else None

    def __reduce__(self) -> Any:  # copies and pickles connect anew
        return (type(self), (self.socket_path, self.timeout))

    def __repr__(self) -> str:
        return f"EngineTokenizer(socket_path={self.socket_path!r})"

    # --- the connection ------------------------------------------------------------------------

    def _connection(self) -> Any:
        stream = getattr(self._local, "stream", None)
        if stream is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            try:
                sock.connect(self.socket_path)
            except OSError as e:
                sock.close()
                raise ConnectionError(f"engine tokenizer at {self.socket_path}: {e}") from e
            stream = self._local.stream = sock.makefile("rwb")
            self._local.sock = sock
        return stream

    def close(self) -> None:
        """Closes this thread's connection (the next request opens a new one)."""
        stream = getattr(self._local, "stream", None)
        if stream is not None:
            self._local.stream = None
            stream.close()
            self._local.sock.close()

    def _exchange(self, line: bytes) -> bytes:
        stream = self._connection()
        try:
            stream.write(line)
            stream.flush()
            reply = stream.readline()
        except OSError:
            self.close()
            raise
        if not reply.endswith(b"\n"):
            self.close()
            raise ConnectionError(f"engine tokenizer at {self.socket_path} closed the connection")
        return reply

    def _request(self, message: Dict[str, Any]) -> Dict[str, Any]:
        line = (json.dumps(message) + "\n").encode("utf-8")
        reused = getattr(self._local, "stream", None) is not None
        try:
            reply = self._exchange(line)
        except ConnectionError:
            if not reused:
                raise
            reply = self._exchange(line)  # the kept connection had gone stale: once on a new one
        answer = json.loads(reply)
        if "error" in answer:
            raise ValueError(f"engine tokenizer, {message['op']}: {answer['error']}")
        return answer

    def _get_info(self) -> Dict[str, Any]:
        with self._info_lock:
            if self._info is None:
                self._info = self._request({"op": "info"})
            return self._info

    # --- Hugging Face's surface ----------------------------------------------------------------

    @property
    def eos_token_id(self) -> int:
        return int(self._get_info()["eos_token_id"])

    @property
    def pad_token_id(self) -> Optional[int]:
        pad = self._get_info().get("pad_token_id")
        return None if pad is None else int(pad)

    @property
    def eos_token(self) -> str:
        return self.decode([self.eos_token_id])

    @property
    def pad_token(self) -> Optional[str]:
        pad = self.pad_token_id
        return None if pad is None else self.decode([pad])

    @property
    def vocab_size(self) -> int:
        return int(self._get_info()["vocab_size"])

    @property
    def name_or_path(self) -> str:
        return str(self._get_info()["name"])

    def __len__(self) -> int:
        return self.vocab_size

    def encode(self, text: str, add_special_tokens: bool = True, **kwargs: Any) -> List[int]:
        """The engine's ids of ``text``. ``add_special_tokens`` and other keywords are accepted for
        transformers' signature; the engine's encoding is used as it is."""
        if not isinstance(text, str):
            raise TypeError(f"encode takes a str, not {type(text).__name__}")
        return [int(t) for t in self._request({"op": "encode", "text": text})["ids"]]

    def decode(self, token_ids: Any, skip_special_tokens: bool = False, **kwargs: Any) -> str:
        """The text of ``token_ids``: an int, a list or tuple, a numpy array or a torch tensor."""
        reply = self._request({"op": "decode", "ids": _ids(token_ids), "skip_special_tokens": bool(skip_special_tokens)})
        return str(reply["text"])

    def batch_decode(self, sequences: Any, skip_special_tokens: bool = False, **kwargs: Any) -> List[str]:
        """:meth:`decode` of each sequence (a list of lists, or the rows of a 2-d array or tensor)."""
        return [self.decode(s, skip_special_tokens=skip_special_tokens) for s in sequences]

    def __call__(self, text: Union[str, Sequence[str]], add_special_tokens: bool = True, **kwargs: Any) -> BatchEncoding:
        """``input_ids`` and ``attention_mask`` as lists, or lists of lists for a list of texts.
        Padding, truncation and tensors are not provided: those keywords raise ``ValueError``."""
        unsupported = [k for k in _UNSUPPORTED_CALL_KWARGS if kwargs.get(k)]
        if unsupported:
            raise ValueError(f"EngineTokenizer returns lists only; not supported: {', '.join(unsupported)}")
        if isinstance(text, str):
            ids = self.encode(text)
            return BatchEncoding(input_ids=ids, attention_mask=[1] * len(ids))
        rows = [self.encode(t) for t in text]
        return BatchEncoding(input_ids=rows, attention_mask=[[1] * len(r) for r in rows])

    def apply_chat_template(
        self,
        conversation: List[Dict[str, Any]],
        tools: Optional[List[Any]] = None,
        add_generation_prompt: bool = False,
        tokenize: bool = True,
        return_dict: bool = False,
        **kwargs: Any,
    ) -> Union[str, List[int], BatchEncoding]:
        """The engine's chat template rendered over ``conversation``: the text when ``tokenize`` is
        false, else its ids, or with ``return_dict`` the :meth:`__call__` form. ``tools`` and the
        other keywords (``enable_thinking``, ...) are the template's variables."""
        if kwargs.get("chat_template") is not None:
            raise ValueError("EngineTokenizer renders the engine's chat template; chat_template= is not supported")
        variables = {k: v for k, v in kwargs.items() if k != "chat_template"}
        if tools is not None:
            variables["tools"] = tools
        text = str(self._request({
            "op": "chat",
            "messages": list(conversation),
            "add_generation_prompt": bool(add_generation_prompt),
            "variables": variables,
        })["text"])
        if not tokenize:
            return text
        return self(text) if return_dict else self.encode(text)
