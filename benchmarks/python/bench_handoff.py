#!/usr/bin/env python3
"""The Python trainer's side of ``bin/rollout bench handoff`` (not a test): pulls batches from a
trainer gateway when told to on stdin, one line per command.

    pull   pull one batch (``next_batch``: HTTP, RBATCH decoding into numpy arrays), acknowledge it,
           hand its memory back (``recycle``, as a training loop does once a step is done with a
           batch), print "<tensor bytes> <seconds for the pull> <peak RSS bytes>"
    quit   exit

With ``--recycle-mb 0`` every batch lands in fresh memory instead, which on a virtual machine
costs page faults that can exceed the transfer itself. The Java side times a raw loopback socket moving the same bytes between pulls and computes the ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "clients" / "python"))

from rollout_client import RolloutClient  # noqa: E402


def _peak_rss() -> int:
    """This process's peak resident set (VmHWM), in bytes. Not ``getrusage``'s ``ru_maxrss``: that
    keeps the high-water mark of the process it was forked from (here the benchmark's JVM)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--recycle-mb", type=int, default=4096, help="recycle_bytes of the client, in MiB")
    args = ap.parse_args()
    client = RolloutClient(
        args.url, request_timeout=120.0, read_idle_timeout=120.0, recycle_bytes=args.recycle_mb << 20
    )
    try:
        for line in sys.stdin:
            cmd = line.strip()
            if cmd == "quit":
                break
            if cmd != "pull":
                raise SystemExit(f"bench_handoff.py: unknown command {cmd!r} (pull, quit)")
            start = time.perf_counter()
            batch = client.next_batch(wait=10.0)
            seconds = time.perf_counter() - start
            if batch is None:
                raise SystemExit("bench_handoff.py: no batch within 10 s")
            nbytes = batch.nbytes
            client.ack(batch)
            client.recycle(batch)
            del batch
            rss = _peak_rss()
            print(f"{nbytes} {seconds:.6f} {rss}", flush=True)
    finally:
        client.close()


if __name__ == "__main__":
    main()
