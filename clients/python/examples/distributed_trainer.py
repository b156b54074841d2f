#!/usr/bin/env python3
"""Multi-rank training with torch.distributed, in one of two ways.

Rank 0 pulls for all (the engine's rollout.train_data_parallel_size = 1, the default)::

    rank 0: pull a batch ─► batch.split(world_size) ─► scatter the shards
    every rank: loss over its shard / tokens of the whole batch ─► backward ─► all_reduce(grads)
                ─► the same optimizer step everywhere (same start, same summed gradient)
    rank 0: write the weights ─► ack the batch ─► publish the new version

Shards hold whole groups (GRPO normalises rewards within a group), balanced by token count. Only
rank 0 holds a client, so only rank 0 needs the gateway's address, token and CA.

Each rank pulls its own batches (``--each-rank-pulls``; the engine runs with
rollout.train_data_parallel_size = WORLD_SIZE, one coordinator and collector per rank)::

    every rank: pull a batch of its own rank (RolloutClient(rank=RANK)): consumer_batch_size / WORLD_SIZE
                groups of its own tasks ─► loss / tokens of all ranks' batches ─► backward
                ─► all_reduce(grads) ─► the same optimizer step ─► ack its own batch
    rank 0: once every rank has acknowledged, write the weights ─► publish the new version

No batch crosses rank 0, and every rank needs the gateway's address, token and CA. One process per
rank, with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set (by hand or by torchrun)::

    for r in 0 1; do
      RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 PYTHONPATH=clients/python \\
        python3 clients/python/examples/distributed_trainer.py --contact http://127.0.0.1:8470 \\
        --initial-weights v0.rlm --weights-dir /shared/weights --steps 40 &
    done; wait
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path
from typing import List, Optional, Sequence

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from grpo import policy_loss  # noqa: E402
from rollout_client import Batch, Deduplicator, RolloutClient  # noqa: E402
from tinylm import TinyLm, TinyLmWeights  # noqa: E402


def parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="GRPO on several ranks; rank 0 pulls, acknowledges and publishes, or each rank pulls its own."
    )
    p.add_argument("--contact", action="append", required=True)
    p.add_argument("--initial-weights", type=Path, required=True)
    p.add_argument("--weights-dir", type=Path, required=True)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--clip", type=float, default=0.2)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--cafile")
    p.add_argument(
        "--each-rank-pulls",
        action="store_true",
        help="every rank pulls and acknowledges its own batches (the engine's "
        "rollout.train_data_parallel_size must equal WORLD_SIZE)",
    )
    return p.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    a = parse(argv)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    initial = TinyLmWeights.read(a.initial_weights)
    model = TinyLm(initial)
    optimizer = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
    if a.each_rank_pulls:
        client: Optional[RolloutClient] = RolloutClient(a.contact, cafile=a.cafile, rank=rank)
    else:
        client = RolloutClient(a.contact, cafile=a.cafile) if rank == 0 else None
    try:
        version = initial.version
        if rank == 0 and client is not None:
            engine = client.status().version
            if engine != version:
                print(f"rank 0: the engine serves version {engine}, the initial weights are {version}", file=sys.stderr)
                version = -1
        box: List[object] = [version]
        dist.broadcast_object_list(box, src=0)
        if box[0] == -1:
            return 2
        dedup = Deduplicator()
        batches = client.batches(prefetch=1, deduplicator=dedup) if client is not None else None
        for step in range(1, a.steps + 1):
            t0 = time.perf_counter()
            shards: List[Optional[Batch]] = [None] * world
            batch: Optional[Batch] = None
            if a.each_rank_pulls:
                assert batches is not None
                batch = next(batches)
                shard: Optional[Batch] = batch
            else:
                if batches is not None:
                    batch = next(batches)
                    shards = list(batch.split(world))
                mine: List[Optional[Batch]] = [None]
                dist.scatter_object_list(mine, shards if rank == 0 else None, src=0)
                shard = mine[0]
            assert shard is not None
            optimizer.zero_grad(set_to_none=False)
            loss, stats, tokens = policy_loss(model, shard, a.temperature, a.clip)
            total = torch.tensor([tokens], dtype=torch.int64)
            dist.all_reduce(total)
            if int(total) > 0:
                (loss / int(total)).backward()
            for p in model.parameters():
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                dist.all_reduce(p.grad)
            for group in optimizer.param_groups:
                group["lr"] = a.lr * min(1.0, step / a.warmup) if a.warmup else a.lr
            optimizer.step()
            model.round_to_float32()
            version += 1
            if a.each_rank_pulls:
                assert client is not None and batch is not None
                dedup.mark_trained(batch)
                client.ack(batch)
                # Every rank has trained on and acknowledged its batch before the version moves on.
                dist.barrier()
                if rank == 0:
                    client.publish_weights(version, model.weights(version).write(a.weights_dir / f"v{version}.rlm"))
                reward = float(batch.collate()["rewards"].mean()) if len(batch) else 0.0
                print(f"rank {rank} step {step}/{a.steps}  batch {batch.batch_id}  {len(batch)} groups  "
                      f"tasks {sorted(batch.task_ids)}  v{version} reward {reward:.3f} tokens {int(total)} "
                      f"{(time.perf_counter() - t0) * 1e3:.0f} ms", flush=True)
            elif client is not None and batch is not None:
                path = model.weights(version).write(a.weights_dir / f"v{version}.rlm")
                dedup.mark_trained(batch)
                client.ack(batch)
                client.publish_weights(version, path)
                reward = float(batch.collate()["rewards"].mean()) if len(batch) else 0.0
                print(f"step {step}/{a.steps}  batch {batch.batch_id}  {len(batch)} groups  v{version} "
                      f"reward {reward:.3f} shards {[len(s) for s in shards]} tokens {int(total)} "
                      f"{(time.perf_counter() - t0) * 1e3:.0f} ms", flush=True)
            dist.barrier()
        digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()[:16]
        print(f"rank {rank}: done at v{version}, parameters {digest}", flush=True)
        if batches is not None:
            batches.close()
        return 0
    finally:
        if client is not None:
            client.close()
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
