"""A trainer of two data-parallel ranks against a real engine node (rollout.train_data_parallel_size
= 2): each rank's client pulls batches of its own rank, of consumer_batch_size / 2 groups, and
acknowledges them; no task reaches both ranks."""

from __future__ import annotations

from typing import List, Set

import pytest

from engine import Processes, free_port
from rollout_client import RolloutClient

RANKED_ENGINE = [
    "rollout.batch_ack_timeout=60",
    "rollout.consumer_batch_size=4",
    "rollout.train_data_parallel_size=2",
    "rollout.max_head_offpolicyness=1000",
    "rollout.queue_size=16",
    "gconfig.n_samples=4",
]


@pytest.fixture(scope="module")
def ranked_node(processes: Processes, model_server: str) -> str:
    node = processes.node("ranked-node", model_server, "coordinator,rollout,gateway", free_port(), overrides=RANKED_ENGINE)
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
