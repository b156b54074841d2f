#!/usr/bin/env python3
"""Benchmarks of the Python trainer client (not tests): figures for benchmarks/RESULTS.md.

1. Decode rate. A server process serves one RBATCH batch of --mb MB over HTTP/1.1 with chunked
   transfer encoding in 4 KiB chunks, as the trainer gateway (the JDK's HTTP server) writes it. In
   the same run, side by side and alternating, the client's ``next_batch()`` (HTTP parsing, chunk
   framing, RBATCH decoding into fresh numpy arrays) and a raw socket that sends the same request
   and ``recv_into``s the same response bytes into one fresh buffer, doing nothing else. Both
   allocate the memory the batch lands in within the timing. Ratio = client rate / raw rate.
2. Prefetch. A loop of --steps training steps (torch matmuls for --step-ms of wall time) on batches of
   --prefetch-mb MB: the time per step the loop waits for its next batch, with ``next_batch()``
   called inline and with ``client.batches(prefetch=2)``.

    PYTHONPATH=clients/python /usr/bin/python3 benchmarks/python/bench_client.py [--mb 256] [--rounds 5]

The server is a separate process (its own interpreter, no shared GIL), so it feeds both readers
the same way; it is not the Java gateway, whose own rate is in RESULTS.md §5.
"""

from __future__ import annotations

import argparse
import io
import multiprocessing as mp
import socket
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import List, Tuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "clients" / "python"))

from rollout_client import Batch, Group, RolloutClient, write_batch  # noqa: E402

CHUNK = 4096  # the JDK HTTP server behind the gateway writes chunks of 4 KiB (sun.net.httpserver.ChunkedOutputStream)


def make_batch(mb: int, groups: int = 16, rows: int = 16) -> bytes:
    """An RBATCH of about ``mb`` MB: the keys of a real batch (17 bytes a token)."""
    width = max(1, (mb << 20) // (groups * rows * 17))
    rng = np.random.default_rng(0)
    gs = []
    for i in range(groups):
        ids = rng.integers(0, 50000, (rows, width), dtype=np.int32)
        gs.append(Group(i, 0, tuple(range(rows)), (1,) * rows, 0, 0, 0, 0, {
            "input_ids": ids,
            "attention_mask": np.ones((rows, width), dtype=bool),
            "loss_mask": np.ones((rows, width), dtype=np.int32),
            "logprobs": rng.random((rows, width), dtype=np.float32),
            "versions": np.zeros((rows, width), dtype=np.int32),
            "rewards": rng.random(rows, dtype=np.float32),
        }))
    buf = io.BytesIO()
    write_batch(Batch(1, 0, gs), buf)
    return buf.getvalue()


def serve(port_out: "mp.Queue[int]", mb: int) -> None:
    # Framed once, sent with one sendall: the server is as cheap as a server gets, so that the
    # readers' own costs show.
    raw = memoryview(make_batch(mb))
    framed = bytearray()
    for off in range(0, len(raw), CHUNK):
        part = raw[off: off + CHUNK]
        framed += b"%x\r\n" % len(part)
        framed += part
        framed += b"\r\n"
    framed += b"0\r\n\r\n"
    body = memoryview(bytes(framed))
    del raw, framed
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    port_out.put(srv.getsockname()[1])
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/x-rollout-batch\r\nX-Rollout-Batch-Id: 1\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=answer, args=(conn, head, body), daemon=True).start()


def answer(conn: socket.socket, head: bytes, body: memoryview) -> None:
    """One connection: requests in a row (keep-alive), each answered with the batch (or a status)."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    f = conn.makefile("rb")
    try:
        while True:
            line = f.readline()
            if not line:
                break
            while f.readline() not in (b"\r\n", b"\n", b""):
                pass
            if line.startswith(b"GET /v1/status"):
                j = b'{"version": 0}'
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(j), j))
                continue
            conn.sendall(head)
            conn.sendall(body)
    except OSError:
        pass
    finally:
        f.close()
        conn.close()


def raw_read(port: int, total_hint: int, reuse: "bytearray | None" = None) -> Tuple[int, float]:
    """The same request on a raw socket; the whole response drained into one buffer: allocated (and
    zeroed, so its pages are touched once, as the client's arrays are when filled) inside the
    timing, or ``reuse``, already touched (the upper bound: no memory to set up at all)."""
    s = socket.create_connection(("127.0.0.1", port))
    t0 = time.perf_counter()
    buf = reuse if reuse is not None else bytearray(total_hint + (1 << 20))
    view = memoryview(buf)
    s.sendall(b"POST /v1/batches/next?wait=0 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    got = 0
    while True:
        n = s.recv_into(view[got:])
        if n == 0:
            break
        got += n
        if got >= 5 and bytes(view[got - 5: got]) == b"0\r\n\r\n" and got > total_hint:
            break
    elapsed = time.perf_counter() - t0
    s.close()
    return got, elapsed


def decode_rate(mb: int, rounds: int) -> None:
    q: "mp.Queue[int]" = mp.Queue()
    p = mp.Process(target=serve, args=(q, mb), daemon=True)
    p.start()
    port = q.get(timeout=300)
    client = RolloutClient(f"http://127.0.0.1:{port}", token_from_env=False, read_idle_timeout=60)
    b = client.next_batch(wait=0)  # warm-up, and the size
    assert b is not None
    nbytes = b.nbytes
    del b
    recycling = RolloutClient(f"http://127.0.0.1:{port}", token_from_env=False, read_idle_timeout=60,
                              recycle_bytes=2 * nbytes)
    warm_batch = recycling.next_batch(wait=0)
    assert warm_batch is not None
    recycling.recycle(warm_batch)
    del warm_batch
    raw_rates: List[float] = []
    warm_rates: List[float] = []
    client_rates: List[float] = []
    recycled_rates: List[float] = []
    warm = bytearray(nbytes + (1 << 20))
    for _ in range(rounds):
        got, t = raw_read(port, nbytes)
        raw_rates.append(got / t / 1e6)
        _, t = raw_read(port, nbytes, reuse=warm)
        warm_rates.append(got / t / 1e6)
        t0 = time.perf_counter()
        b = client.next_batch(wait=0)
        t = time.perf_counter() - t0
        assert b is not None
        client_rates.append(got / t / 1e6)
        del b
        t0 = time.perf_counter()
        b = recycling.next_batch(wait=0)
        t = time.perf_counter() - t0
        assert b is not None
        recycled_rates.append(got / t / 1e6)
        recycling.recycle(b)
        del b
    client.close()
    recycling.close()
    p.terminate()
    p.join(10)
    raw, hot, cli, rec = (statistics.median(x) for x in (raw_rates, warm_rates, client_rates, recycled_rates))
    print(f"decode: batch of {nbytes / 1e6:.0f} MB tensor data ({got / 1e6:.0f} MB on the wire), {rounds} rounds, medians")
    print(f"  raw socket, fresh buffer  {raw:8.0f} MB/s   (all: {', '.join(f'{r:.0f}' for r in raw_rates)})")
    print(f"  raw socket, reused buffer {hot:8.0f} MB/s   (all: {', '.join(f'{r:.0f}' for r in warm_rates)})")
    print(f"  RolloutClient.next_batch  {cli:8.0f} MB/s   (all: {', '.join(f'{r:.0f}' for r in client_rates)})")
    print(f"  ... with recycle()        {rec:8.0f} MB/s   (all: {', '.join(f'{r:.0f}' for r in recycled_rates)})")
    print(f"  ratio client / raw: {cli / raw:.2f} against a fresh buffer, {cli / hot:.2f} against a reused one; "
          f"recycling: {rec / hot:.2f} against a reused one")
    print(f"RESULT bench=python-decode mb={nbytes / 1e6:.0f} rounds={rounds} raw_fresh_mb_s={raw:.1f} "
          f"raw_reused_mb_s={hot:.1f} client_mb_s={cli:.1f} client_recycling_mb_s={rec:.1f} "
          f"client_to_raw_fresh={cli / raw:.3f} client_to_raw_reused={cli / hot:.3f} "
          f"recycling_to_raw_reused={rec / hot:.3f} chunk={CHUNK}")


def prefetch_share(mb: int, steps: int, step_ms: float) -> None:
    import torch

    torch.set_num_threads(1)
    q: "mp.Queue[int]" = mp.Queue()
    p = mp.Process(target=serve, args=(q, mb), daemon=True)
    p.start()
    port = q.get(timeout=300)
    a = torch.randn(256, 256)

    def train() -> None:
        """torch matmuls for step_ms of wall time (CPU work, so decoding competes with it)."""
        end = time.perf_counter() + step_ms / 1e3
        while time.perf_counter() < end:
            a @ a

    url = f"http://127.0.0.1:{port}"
    with RolloutClient(url, token_from_env=False) as c:
        blocked = 0.0
        t_all = time.perf_counter()
        for _ in range(steps):
            t0 = time.perf_counter()
            b = c.next_batch(wait=0)
            blocked += time.perf_counter() - t0
            train()
            del b
        inline_step = (time.perf_counter() - t_all) / steps
        inline_block = blocked / steps
    with RolloutClient(url, token_from_env=False) as c:
        it = c.batches(prefetch=2)
        t_all = time.perf_counter()
        n = 0
        for b in it:
            train()
            del b
            n += 1
            if n == steps:
                break
        pre_step = (time.perf_counter() - t_all) / steps
        pre_block = it.blocked_s / steps
        it.close()
    p.terminate()
    p.join(10)
    print(f"prefetch: {steps} steps, batches of {mb} MB, a training step of ~{step_ms:.0f} ms of torch matmuls")
    print(f"  inline next_batch(): waits {inline_block * 1e3:6.0f} ms per step of {inline_step * 1e3:6.0f} ms "
          f"({inline_block / inline_step:.0%})")
    print(f"  batches(prefetch=2): waits {pre_block * 1e3:6.0f} ms per step of {pre_step * 1e3:6.0f} ms "
          f"({pre_block / pre_step:.0%})")
    print(f"  share of the hand-off no longer blocking: {1 - pre_block / inline_block:.0%}")
    print(f"RESULT bench=python-prefetch mb={mb} steps={steps} step_ms={step_ms:.0f} "
          f"inline_wait_ms={inline_block * 1e3:.1f} inline_step_ms={inline_step * 1e3:.1f} "
          f"prefetch_wait_ms={pre_block * 1e3:.1f} prefetch_step_ms={pre_step * 1e3:.1f} "
          f"unblocked_share={1 - pre_block / inline_block:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--prefetch-mb", type=int, default=32)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--step-ms", type=float, default=300)
    a = ap.parse_args()
    decode_rate(a.mb, a.rounds)
    prefetch_share(a.prefetch_mb, a.steps, a.step_ms)


if __name__ == "__main__":
    main()
