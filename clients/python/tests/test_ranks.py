"""A trainer of two data-parallel ranks against a real engine node (rollout.train_data_parallel_size
= 2): each rank's client pulls batches of its own rank, of consumer_batch_size / 2 groups, and
acknowledges them; no task reaches both ranks."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import List, Set

import pytest

from engine import Processes, free_port, run_gloo_ranks
from rollout_client import RolloutClient

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

RANKED_ENGINE = [
    "rollout.batch_ack_timeout=60",
    "rollout.consumer_batch_size=4",
    "rollout.train_data_parallel_size=2",
    "rollout.max_head_offpolicyness=1000",
    "rollout.queue_size=16",
    "gconfig.n_samples=4",
]


@pytest.fixture(scope="module")
def ranked_node(processes: Processes, v0: Path) -> str:
    # A model server of its own: the example below publishes trained weights to it.
    server = processes.model_server("ranked-model-server", v0)
    node = processes.node("ranked-node", server, "coordinator,rollout,gateway", free_port(), overrides=RANKED_ENGINE)
    assert node.gateway is not None
    return node.gateway


def test_each_rank_pulls_and_acknowledges_batches_of_its_own_tasks(ranked_node: str) -> None:
    clients: List[RolloutClient] = [
        RolloutClient(ranked_node, token_from_env=False, rank=r, retry_deadline=30.0) for r in range(2)
    ]
    seen: Set[int] = set()
    try:
        for _ in range(2):
            for rank, client in enumerate(clients):
                batch = client.next_batch(wait=60)
                assert batch is not None, f"rank {rank}: no batch within 60 s"
                assert len(batch.groups) == 2
                for task in batch.task_ids:
                    assert task % 2 == rank, f"task {task} in rank {rank}'s batch"
                    assert task not in seen, f"task {task} delivered twice"
                    seen.add(task)
                assert (batch.batch_id >> 24) & 0xFF == rank
                client.ack(batch)
        for rank, client in enumerate(clients):
            assert client.status().unacknowledged_batches == 0, f"rank {rank}"
    finally:
        for c in clients:
            c.close()
    assert len(seen) == 8


def test_a_rank_outside_0_to_255_is_refused_before_any_call() -> None:
    for bad in (-1, 256, True, "1"):
        with pytest.raises(ValueError, match="rank"):
            RolloutClient("http://127.0.0.1:9", token_from_env=False, rank=bad)  # type: ignore[arg-type]


def test_two_gloo_ranks_each_pull_their_own_batches_and_rank_0_publishes(
    ranked_node: str, v0: Path, tmp_path: Path
) -> None:
    """examples/distributed_trainer.py --each-rank-pulls: every rank pulls and acknowledges batches of
    its own tasks, the ranks' parameters stay equal, and each step's publish moves the version."""
    pytest.importorskip("torch", reason="the example trains with torch (Debian: python3-torch)")
    sys.path.insert(0, str(EXAMPLES))
    from tinylm import TinyLmWeights

    with RolloutClient(ranked_node, token_from_env=False) as c:
        start = c.status().version
        w = TinyLmWeights.read(v0)
        w.version = start
        initial = w.write(tmp_path / f"v{start}.rlm")
        env = dict(os.environ, PYTHONPATH=str(EXAMPLES.parent))
        env.pop("ROLLOUT_GATEWAY_TOKEN", None)
        outputs = run_gloo_ranks(EXAMPLES / "distributed_trainer.py", [
            "--contact", ranked_node, "--each-rank-pulls", "--initial-weights", str(initial),
            "--weights-dir", str(tmp_path / "w"), "--steps", "2"], env)
        seen: Set[int] = set()
        trained: Set[int] = set()
        for rank, out in enumerate(outputs):
            steps = re.findall(rf"^rank {rank} step \d/2 +batch (\d+) +2 groups +tasks \[([\d, ]+)\]", out, re.M)
            assert len(steps) == 2, out
            for batch_id, tasks in steps:
                trained.add(int(batch_id))
                assert (int(batch_id) >> 24) & 0xFF == rank, out
                for task in (int(t) for t in tasks.split(",")):
                    assert task % 2 == rank, f"task {task} in rank {rank}'s batch:\n{out}"
                    assert task not in seen, f"task {task} delivered twice"
                    seen.add(task)
        digests = [re.search(r"parameters (\w+)", o).group(1) for o in outputs]  # type: ignore[union-attr]
        assert digests[0] == digests[1], "the ranks' parameters differ"
        assert c.status().version == start + 2
        assert (tmp_path / "w" / f"v{start + 2}.rlm").exists()
        for rank in range(2):
            with RolloutClient(ranked_node, token_from_env=False, rank=rank) as r:
                # Each rank acknowledged what it trained on; what it still holds is at most the batch
                # its iterator had prefetched when it stopped (returned when the lease runs out).
                held = {b.batch_id for b in r.status().held_batches}
                assert len(held) <= 1 and not held & trained, f"rank {rank} holds {held}"
