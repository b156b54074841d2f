"""The chunked-body reader: any chunk sizes, extensions and trailers; early ends and bad framing."""

from __future__ import annotations

import io
import random

import pytest

from rollout_client.chunked import ChunkedBody


def frame(payload: bytes, sizes, ext: bool = False, trailer: bytes = b"") -> bytes:
    out, i = bytearray(), 0
    for n in sizes:
        part = payload[i : i + n]
        if not part:
            break
        out += b"%x%s\r\n" % (len(part), b";x=y" if ext else b"") + part + b"\r\n"
        i += len(part)
    assert i == len(payload)
    return bytes(out + b"0\r\n" + trailer + b"\r\n")


@pytest.mark.parametrize("chunk", [1, 7, 4096, 65536, 3 << 20])
@pytest.mark.parametrize("read", [1, 1000, 1 << 21])
def test_payload_arrives_whole_whatever_the_chunking(chunk: int, read: int) -> None:
    rng = random.Random(chunk * 31 + read)
    payload = bytes(rng.getrandbits(8) for _ in range(50_000)) * 3
    body = ChunkedBody(io.BufferedReader(io.BytesIO(frame(payload, [chunk] * len(payload), ext=chunk == 7,
                                                          trailer=b"X-T: 1\r\n" if chunk == 1 else b"")),
                                         buffer_size=8192))
    got = bytearray()
    buf = bytearray(read)
    while True:
        n = body.readinto(memoryview(buf))
        if n == 0:
            break
        got += buf[:n]
    assert bytes(got) == payload and body.done and body.finish() is None


def test_an_early_end_and_bad_framing_are_errors() -> None:
    whole = frame(b"a" * 10000, [4096] * 3)
    with pytest.raises(EOFError):
        ChunkedBody(io.BufferedReader(io.BytesIO(whole[:5000]))).readinto(memoryview(bytearray(10000)))
    with pytest.raises(ValueError, match="chunk-size"):
        ChunkedBody(io.BufferedReader(io.BytesIO(b"zz\r\n"))).readinto(memoryview(bytearray(10)))
    with pytest.raises(ValueError, match="CRLF"):
        ChunkedBody(io.BufferedReader(io.BytesIO(b"2\r\nabXY3\r\n"))).readinto(memoryview(bytearray(10)))
