#!/usr/bin/env python3
"""A GRPO trainer for the engine's built-in model, in PyTorch, as its own process.

It joins the engine through one or more trainer gateways, trains one PPO-clip step per batch on the
batch's behaviour logprobs, writes each step's weights in the model server's format and publishes
them as the next version::

    PYTHONPATH=clients/python /usr/bin/python3 clients/python/examples/grpo_trainer.py \\
        --contact http://127.0.0.1:8470 --initial-weights runs/demo/weights/v0.rlm \\
        --weights-dir /shared/weights --steps 40

``--tensorboard DIR`` also logs the engine's statistics of each weight version (reward, group
metrics, staleness, accepted and rejected groups, tokens; evaluation passes under ``eval-rollout/``)
to TensorBoard, each version once, with the version as the step (docs/trainer.md, "Logging the
engine's statistics"); without the ``tensorboard`` package it says so and trains without.

``bin/rollout local --trainer python`` starts the engine and runs this. The token comes from
``$ROLLOUT_GATEWAY_TOKEN``. Exit status: 0 after ``--steps`` steps, 2 for bad arguments or an
engine that does not serve the initial weights' version, 1 when the run failed, 130 after Ctrl-C or
SIGTERM (a weight file being written is removed, never left half-written).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # rollout_client from the source tree
sys.path.insert(0, str(Path(__file__).resolve().parent))

from grpo import policy_loss  # noqa: E402
from rollout_client import Deduplicator, RolloutClient, RolloutError  # noqa: E402
from tinylm import TinyLm, TinyLmWeights  # noqa: E402


def scalars_of(line: Dict[str, Any]) -> Dict[str, float]:
    """The numbers of one statistics line, by tag ``<scope>/<key>`` (rejection reasons as
    ``<scope>/rejected_reasons/<reason>``); ``version``, ``scope`` and values that are None (not
    finite) are left out."""
    scope = line["scope"]
    out: Dict[str, float] = {}
    for key, value in line.items():
        if key in ("version", "scope") or value is None or isinstance(value, bool):
            continue
        if isinstance(value, dict):
            for sub, n in value.items():
                out[f"{scope}/{key}/{sub}"] = float(n)
        elif isinstance(value, (int, float)):
            out[f"{scope}/{key}"] = float(value)
    return out


class EngineStatsLog:
    """Logs the engine's statistics lines (``client.stats``), each (version, scope) once, to a
    TensorBoard ``SummaryWriter`` (or anything with ``add_scalar(tag, value, global_step)``), the
    weight version as the step."""

    def __init__(self, writer: Any) -> None:
        self.writer = writer
        self.since = 0
        self.logged: Set[Tuple[int, str]] = set()

    def log(self, lines: Iterable[Dict[str, Any]]) -> int:
        """Writes the lines not logged yet; returns how many."""
        n = 0
        for line in lines:
            key = (int(line["version"]), str(line["scope"]))
            if key in self.logged:
                continue
            self.logged.add(key)
            for tag, value in scalars_of(line).items():
                self.writer.add_scalar(tag, value, global_step=key[0])
            n += 1
        return n

    def poll(self, client: RolloutClient) -> int:
        """Asks for the lines from the first version that may still change, and logs the new ones."""
        page = client.stats(since_version=self.since)
        n = self.log(page["lines"])
        self.since = page["complete_below"]
        self.logged = {k for k in self.logged if k[0] >= self.since}  # older ones never come again
        if n:
            self.writer.flush()
        return n


def tensorboard_writer(directory: Optional[Path]) -> Optional[Any]:
    """A SummaryWriter into ``directory``, or None (no directory, or tensorboard not installed)."""
    if directory is None:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as e:
        print(f"trainer: --tensorboard {directory}: not logging, tensorboard is not importable ({e})", flush=True)
        return None
    return SummaryWriter(log_dir=str(directory))


def parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--contact", action="append", required=True, help="gateway base URL; repeat to fail over")
    p.add_argument("--initial-weights", type=Path, required=True, help="the .rlm file the servers start from")
    p.add_argument("--weights-dir", type=Path, required=True, help="where v{N}.rlm go (the servers read them)")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--lr", type=float, default=0.5, help="Adam's learning rate (default 0.5, as the Java demo)")
    p.add_argument("--warmup", type=int, default=20, help="steps of linear learning-rate warm-up")
    p.add_argument("--clip", type=float, default=0.2, help="PPO's clip epsilon")
    p.add_argument("--temperature", type=float, default=1.0, help="the engine's gconfig.temperature")
    p.add_argument("--prefetch", type=int, default=1)
    p.add_argument("--cafile", help="PEM of the gateways' CA, for https contact points")
    p.add_argument("--tensorboard", type=Path, metavar="DIR",
                   help="log the engine's per-version statistics to TensorBoard in DIR")
    a = p.parse_args(argv)
    if a.steps < 1 or a.lr <= 0 or a.warmup < 0 or a.clip <= 0 or a.temperature < 0:
        p.error("--steps >= 1, --lr > 0, --warmup >= 0, --clip > 0 and --temperature >= 0 are required")
    return a


def main(argv: Optional[Sequence[str]] = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="trainer: %(message)s")
    a = parse(argv)
    torch.set_num_threads(1)
    try:
        initial = TinyLmWeights.read(a.initial_weights)
    except (OSError, ValueError) as e:
        print(f"trainer: --initial-weights: {e}", file=sys.stderr)
        return 2
    model = TinyLm(initial)
    optimizer = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
    dedup = Deduplicator()
    rewards: List[float] = []
    started = time.perf_counter()
    training_s = 0.0
    writer = tensorboard_writer(a.tensorboard)
    stats_log = EngineStatsLog(writer) if writer is not None else None
    with RolloutClient(a.contact, cafile=a.cafile) as client, contextlib.ExitStack() as closing:
        if writer is not None:
            closing.callback(writer.close)
        version = client.status().version
        if version != initial.version:
            print(
                f"trainer: the engine serves version {version} but {a.initial_weights} is version "
                f"{initial.version}: pass the weights the servers serve",
                file=sys.stderr,
            )
            return 2
        print(f"trainer: {a.steps} steps against {a.contact} (engine at version {version}); weights in {a.weights_dir}",
              flush=True)
        with client.batches(prefetch=a.prefetch, deduplicator=dedup) as batches:
            for step, batch in enumerate(batches, start=1):
                t0 = time.perf_counter()
                optimizer.zero_grad(set_to_none=True)
                loss, stats, tokens = policy_loss(model, batch, a.temperature, a.clip)
                if tokens:
                    (loss / tokens).backward()
                grad_norm = float(torch.sqrt(sum((p.grad.double() ** 2).sum() for p in model.parameters()
                                                 if p.grad is not None)) if tokens else 0.0)
                for group in optimizer.param_groups:
                    group["lr"] = a.lr * min(1.0, step / a.warmup) if a.warmup else a.lr
                optimizer.step()
                model.round_to_float32()
                version += 1
                path = model.weights(version).write(a.weights_dir / f"v{version}.rlm")
                training_s += time.perf_counter() - t0
                dedup.mark_trained(batch)
                client.ack(batch)
                result = client.publish_weights(version, path)
                if stats_log is not None:
                    stats_log.poll(client)  # the lines of the versions the engine has left behind
                rewards.append(stats.reward)
                failures = f" failures {result.server_failures}" if result.server_failures else ""
                print(
                    f"step {step}/{a.steps}  batch {batch.batch_id}  {len(batch)} groups  v{version} "
                    f"reward {stats.reward:.3f} tokens {tokens} clip {stats.clip_fraction:.3f} |g| {grad_norm:.4f} "
                    f"stale {int(batch.staleness().max()) if len(batch) else 0} "
                    f"{(time.perf_counter() - t0) * 1e3:.0f} ms{failures}",
                    flush=True,
                )
                if step >= a.steps:
                    break
    first = sum(rewards[:5]) / len(rewards[:5])
    last = sum(rewards[-5:]) / len(rewards[-5:])
    print(
        f"done: {len(rewards)} steps; mean reward: first 5 steps {first:.3f}, last 5 steps {last:.3f}; "
        f"training time {training_s * 1e3:.0f} ms, wall {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    return 0


def _stop(signum, frame):
    # SIGTERM (rollout local stopping its trainer) ends the run like Ctrl-C: unwinding, so a weight
    # file being written is removed rather than left as a temporary file.
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _stop)
    try:
        sys.exit(main())
    except RolloutError as e:
        print(f"trainer: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("trainer: stopped", flush=True)
        sys.exit(130)
