"""EngineTokenizer against a fake of the engine's tokenizer socket (the protocol in
rollout_client/areal/tokenizer.py): one byte per token, served on a real Unix socket."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import shutil
import socket
import socketserver
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Iterator, List, Optional

import numpy as np
import pytest

from rollout_client.areal import AsyncRewardWrapper, BatchEncoding, EngineTokenizer
from rollout_client.areal.utils.hf_utils import apply_chat_template

PAD, EOS, OFFSET = 0, 1, 2  # ids 0 and 1 are special; byte b is id b + 2
SPECIAL = {PAD: "<pad>", EOS: "<eos>"}


class FakeTokenizerServer:
    """The engine's side of the socket, byte-level. Counts connections and requests by op; keeps
    the last chat request; :meth:`drop_connections` closes every open connection."""

    def __init__(self, path: str, pad_token_id: Optional[int] = PAD) -> None:
        self.path = path
        self.pad_token_id = pad_token_id
        self.connections = 0
        self.ops: Dict[str, int] = {}
        self.last_chat: Optional[Dict[str, Any]] = None
        self._open: List[socket.socket] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                with fake._lock:
                    fake.connections += 1
                    fake._open.append(self.connection)
                for line in self.rfile:
                    self.wfile.write((json.dumps(fake.answer(json.loads(line))) + "\n").encode("utf-8"))

        self.server = socketserver.ThreadingUnixStreamServer(path, Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def answer(self, request: Dict[str, Any]) -> Dict[str, Any]:
        op = request.get("op")
        with self._lock:
            self.ops[op] = self.ops.get(op, 0) + 1
        if op == "info":
            return {"eos_token_id": EOS, "pad_token_id": self.pad_token_id, "vocab_size": 256 + OFFSET, "name": "fake-bytes"}
        if op == "encode":
            return {"ids": [b + OFFSET for b in request["text"].encode("utf-8")]}
        if op == "decode":
            return self.decode(request["ids"], request["skip_special_tokens"])
        if op == "chat":
            self.last_chat = request
            variables = "".join(f"[{k}={json.dumps(v, sort_keys=True)}]" for k, v in sorted(request["variables"].items()))
            turns = "".join(f"<{m['role']}>{m['content']}\n" for m in request["messages"])
            return {"text": variables + turns + ("<assistant>" if request["add_generation_prompt"] else "")}
        return {"error": f"unknown op {op!r}"}

    @staticmethod
    def decode(ids: List[int], skip_special_tokens: bool) -> Dict[str, Any]:
        bad = [i for i in ids if not 0 <= i < 256 + OFFSET]
        if bad:
            return {"error": f"ids {bad} are not in the vocabulary"}
        text, pending = "", bytearray()
        for i in ids:
            if i >= OFFSET:
                pending.append(i - OFFSET)
                continue
            text += pending.decode("utf-8", "replace") + ("" if skip_special_tokens else SPECIAL[i])
            pending = bytearray()
        return {"text": text + pending.decode("utf-8", "replace")}

    def drop_connections(self) -> None:
        with self._lock:
            for s in self._open:
                s.shutdown(socket.SHUT_RDWR)
            self._open.clear()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def socket_dir() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="tok", dir="/tmp")  # short: a socket's path has ~100 bytes at most
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def server(socket_dir: str) -> Iterator[FakeTokenizerServer]:
    s = FakeTokenizerServer(os.path.join(socket_dir, "tok.sock"))
    yield s
    s.close()


@pytest.fixture
def tok(server: FakeTokenizerServer) -> Iterator[EngineTokenizer]:
    t = EngineTokenizer(server.path)
    yield t
    t.close()


def ids(text: str) -> List[int]:
    return [b + OFFSET for b in text.encode("utf-8")]


def test_special_tokens_and_sizes_come_from_one_info_request(tok: EngineTokenizer, server: FakeTokenizerServer) -> None:
    assert server.connections == 0, "nothing is connected before the first request"
    assert (tok.eos_token_id, tok.pad_token_id, tok.vocab_size, len(tok), tok.name_or_path) == (EOS, PAD, 258, 258, "fake-bytes")
    assert (tok.eos_token, tok.pad_token) == ("<eos>", "<pad>")
    assert server.ops["info"] == 1 and server.connections == 1


def test_an_engine_without_a_pad_token_has_none(socket_dir: str) -> None:
    s = FakeTokenizerServer(os.path.join(socket_dir, "nopad.sock"), pad_token_id=None)
    try:
        t = EngineTokenizer(s.path)
        assert t.pad_token_id is None and t.pad_token is None and t.eos_token_id == EOS
    finally:
        s.close()


def test_encode_and_decode_are_the_engines(tok: EngineTokenizer) -> None:
    assert tok.encode("héllo") == ids("héllo")
    assert tok.encode("héllo", add_special_tokens=False) == ids("héllo")
    with_eos = ids("ok") + [EOS, PAD]
    assert tok.decode(with_eos) == "ok<eos><pad>"
    assert tok.decode(with_eos, skip_special_tokens=True) == "ok"
    assert tok.decode(EOS) == "<eos>"
    assert tok.decode(tuple(ids("ok"))) == "ok"
    assert tok.decode(np.asarray(ids("ok"), dtype=np.int64)) == "ok"
    assert tok.decode(np.int32(EOS)) == "<eos>"


def test_decode_takes_torch_tensors(tok: EngineTokenizer) -> None:
    torch = pytest.importorskip("torch")
    assert tok.decode(torch.tensor(ids("hi") + [EOS])) == "hi<eos>"
    assert tok.decode(torch.tensor(EOS)) == "<eos>"
    assert tok.batch_decode(torch.tensor([ids("ab"), ids("cd")]), skip_special_tokens=True) == ["ab", "cd"]


def test_batch_decode_decodes_each_row(tok: EngineTokenizer) -> None:
    assert tok.batch_decode([ids("ab") + [EOS], ids("c")]) == ["ab<eos>", "c"]
    assert tok.batch_decode(np.asarray([ids("ab") + [EOS], ids("cd") + [PAD]]), skip_special_tokens=True) == ["ab", "cd"]


def test_calling_it_gives_ids_and_mask_as_lists(tok: EngineTokenizer) -> None:
    one = tok("hi")
    assert isinstance(one, BatchEncoding) and isinstance(one, dict)
    assert one == {"input_ids": ids("hi"), "attention_mask": [1, 1]} and one.input_ids == ids("hi")
    many = tok(["a", "bcd"])
    assert many.input_ids == [ids("a"), ids("bcd")] and many.attention_mask == [[1], [1, 1, 1]]
    with pytest.raises(AttributeError):
        one.token_type_ids
    with pytest.raises(ValueError, match="return_tensors, padding"):
        tok(["a"], return_tensors="pt", padding=True)


def test_the_chat_template_is_rendered_by_the_engine_with_tools_and_kwargs_as_variables(
    tok: EngineTokenizer, server: FakeTokenizerServer
) -> None:
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "2+2?"}]
    tools = [{"type": "function", "function": {"name": "add"}}]
    text = tok.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False, enable_thinking=False)
    assert server.last_chat == {
        "op": "chat", "messages": messages, "add_generation_prompt": True,
        "variables": {"enable_thinking": False, "tools": tools},
    }
    assert text == '[enable_thinking=false][tools=[{"function": {"name": "add"}, "type": "function"}]]<system>be brief\n<user>2+2?\n<assistant>'
    assert tok.apply_chat_template(messages) == ids("<system>be brief\n<user>2+2?\n")
    assert server.last_chat["add_generation_prompt"] is False and server.last_chat["variables"] == {}
    as_dict = tok.apply_chat_template(messages[1:], add_generation_prompt=True, return_dict=True)
    assert as_dict.input_ids == ids("<user>2+2?\n<assistant>") and as_dict.attention_mask == [1] * len(as_dict.input_ids)
    with pytest.raises(ValueError, match="chat_template= is not supported"):
        tok.apply_chat_template(messages, chat_template="{{ messages }}")


def test_areal_apply_chat_template_works_with_it(tok: EngineTokenizer) -> None:
    messages = [{"role": "user", "content": "hi"}]
    assert apply_chat_template(tok, messages, add_generation_prompt=True) == ids("<user>hi\n<assistant>")
    assert apply_chat_template(tok, messages, add_generation_prompt=True, return_dict=True) == ids("<user>hi\n<assistant>")
    assert apply_chat_template(tok, messages, tokenize=False, enable_thinking=True) == "[enable_thinking=true]<user>hi\n"


def test_an_error_reply_raises_value_error_and_the_connection_serves_on(tok: EngineTokenizer, server: FakeTokenizerServer) -> None:
    with pytest.raises(ValueError, match=r"engine tokenizer, decode: ids \[999\] are not in the vocabulary"):
        tok.decode([5, 999])
    assert tok.decode([5]) == "\x03" and server.connections == 1


def test_each_thread_has_its_own_connection(tok: EngineTokenizer, server: FakeTokenizerServer) -> None:
    texts = [f"text {i} ü" for i in range(40)]
    start, seen = threading.Barrier(4), threading.local()

    def round_trip(text: str) -> str:
        if not getattr(seen, "started", False):  # each thread's first call holds until four run
            seen.started = True
            start.wait(10)
        return tok.decode(tok.encode(text))

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(round_trip, texts)) == texts
    assert server.connections == 4


def test_a_reward_in_async_reward_wrapper_threads_can_decode(tok: EngineTokenizer) -> None:
    def reward(completion_ids: List[int], answer: str) -> float:
        return float(tok.decode(completion_ids, skip_special_tokens=True) == answer)

    wrapped = AsyncRewardWrapper(reward, max_workers=3)

    async def score() -> List[float]:
        return list(await asyncio.gather(*(wrapped(ids(str(i)) + [EOS], "3") for i in range(6))))

    assert asyncio.run(score()) == [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]


def test_a_broken_kept_connection_is_replaced_once(tok: EngineTokenizer, server: FakeTokenizerServer) -> None:
    assert tok.encode("a") == ids("a")
    server.drop_connections()
    assert tok.encode("b") == ids("b")
    assert server.connections == 2


def test_without_a_socket_there_is_no_tokenizer(monkeypatch: pytest.MonkeyPatch, socket_dir: str) -> None:
    monkeypatch.delenv("ROLLOUT_TOKENIZER_SOCKET", raising=False)
    assert EngineTokenizer.from_env() is None
    with pytest.raises(ValueError, match="ROLLOUT_TOKENIZER_SOCKET"):
        EngineTokenizer()
    missing = os.path.join(socket_dir, "none.sock")
    monkeypatch.setenv("ROLLOUT_TOKENIZER_SOCKET", missing)
    t = EngineTokenizer.from_env()
    assert t is not None and t.socket_path == missing
    with pytest.raises(ConnectionError, match="none.sock"):
        t.encode("x")


def test_a_copy_connects_anew(tok: EngineTokenizer, server: FakeTokenizerServer) -> None:
    assert tok.encode("a") == ids("a")
    twin = copy.deepcopy(tok)
    assert twin.socket_path == tok.socket_path and twin.encode("b") == ids("b")
    assert server.connections == 2
