"""Trainer leases against a real engine node: a trainer that dies holding batches gives them back
within its lease, not after batch_ack_timeout; the status names who holds what until when."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Dict, List

import pytest

from engine import Processes, free_port
from rollout_client import HeldBatch, RolloutClient
from rollout_client.lease import describe_wait

LEASE_S = 3.0
# Long enough that only the lease can bring a batch back within this test.
LEASED_ENGINE = [
    "rollout.batch_ack_timeout=600",
    "rollout.consumer_batch_size=2",
    "rollout.max_head_offpolicyness=1000",
    "rollout.queue_size=16",
    "gconfig.n_samples=4",
]

TRAINER = textwrap.dedent(
    """
    import json, sys, time
    from rollout_client import RolloutClient
    c = RolloutClient(sys.argv[1], token_from_env=False, lease=float(sys.argv[2]), holder="doomed-trainer")
    held = []
    while len(held) < 2:
        b = c.next_batch(wait=60)
        if b is None:
            sys.exit("no batch within 60 s")
        held.append({"batch_id": b.batch_id, "task_ids": sorted(b.task_ids)})
    print(json.dumps(held), flush=True)
    time.sleep(600)  # a training step that never ends: the test kills this process
    """
)


@pytest.fixture(scope="module")
def leased_node(processes: Processes, model_server: str) -> str:
    node = processes.node("lease-node", model_server, "coordinator,rollout,gateway", free_port(), overrides=LEASED_ENGINE)
    assert node.gateway is not None
    return node.gateway


def _python() -> str:
    return sys.executable


def test_a_killed_trainers_batches_go_to_the_next_trainer_within_its_lease(
    leased_node: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    script = tmp_path / "doomed_trainer.py"
    script.write_text(TRAINER)
    src = str(Path(__file__).resolve().parents[1])
    doomed = subprocess.Popen(
        [_python(), str(script), leased_node, str(LEASE_S)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
    )
    try:
        line = doomed.stdout.readline() if doomed.stdout else ""
        assert line, f"the first trainer printed nothing: {doomed.stderr.read() if doomed.stderr else ''}"
        held: List[Dict[str, object]] = json.loads(line)
        held_ids = {int(h["batch_id"]) for h in held}  # type: ignore[arg-type]

        with RolloutClient(leased_node, token_from_env=False, lease=LEASE_S, holder="second-trainer") as c:
            # Alive and renewing: well past its lease, its batches are still its own.
            time.sleep(2 * LEASE_S)
            st = c.status()
            theirs = [h for h in st.held_batches if h.holder == "doomed-trainer"]
            assert {h.batch_id for h in theirs} == held_ids, st.held_batches
            assert all(h.leased and 0 <= h.returns_in_s <= LEASE_S for h in theirs), theirs

            doomed.kill()
            doomed.wait(15)
            killed = time.monotonic()
            got: Dict[int, float] = {}
            end = killed + LEASE_S + 20.0
            while not held_ids <= set(got) and time.monotonic() < end:
                b = c.next_batch(wait=1.0)
                if b is not None:
                    got.setdefault(b.batch_id, time.monotonic() - killed)
                    c.ack(b)
            assert held_ids <= set(got), f"batches {held_ids - set(got)} did not come back within {end - killed:.0f} s"
            # The lease, plus the collector's 200 ms check and a pull's round trip; far below the
            # 600 s batch_ack_timeout that would bring them back without a lease.
            slowest = max(got[i] for i in held_ids)
            print(f"the killed trainer's batches {sorted(held_ids)} came back after {slowest:.1f} s (lease {LEASE_S} s)")
            assert slowest <= LEASE_S + 3.0, f"the killed trainer's batches came back after {slowest:.1f} s"
            assert not c.leased_batches, "acknowledged batches are no longer renewed"
    finally:
        if doomed.poll() is None:
            doomed.kill()
            doomed.wait(15)


def test_a_waiting_trainer_is_told_who_holds_the_batches_and_until_when() -> None:
    held = [
        HeldBatch(batch_id=7, groups=4, holder="host-a:12:ab", leased=True, returns_in_s=8.2),
        HeldBatch(batch_id=8, groups=4, holder="/127.0.0.1:5000", leased=False, returns_in_s=590.0),
        HeldBatch(batch_id=9, groups=4, holder="me", leased=True, returns_in_s=14.0),
    ]
    line = describe_wait(31.0, held, own_holder="me")
    assert line == (
        "no batch for 31 s; 2 batch(es) held by other trainers: batch 7 (4 groups) held by host-a:12:ab,"
        " leased, back in 8 s unless renewed; batch 8 (4 groups) held by /127.0.0.1:5000, back in 590 s"
    )
    assert "no batch is held by another trainer" in describe_wait(31.0, held[2:], own_holder="me")


def test_a_lease_out_of_bounds_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="lease"):
        RolloutClient("http://127.0.0.1:1", token_from_env=False, lease=0.5)
    with pytest.raises(ValueError, match="holder"):
        RolloutClient("http://127.0.0.1:1", token_from_env=False, holder=" ")
