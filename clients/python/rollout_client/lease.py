"""Trainer leases: the batches a client holds go back to other trainers soon after it dies.

A client pulls under a lease (``lease`` seconds, 15 by default) and names itself as the holder. While
it holds batches it has not acknowledged, a daemon thread renews the lease every third of it, also
while a long training step runs (the thread needs no help from the training loop). When the process
dies, the renewals stop and the engine hands its batches to the next pull once the lease lapses,
instead of after ``rollout.batch_ack_timeout`` (10 minutes by default).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from dataclasses import dataclass
from typing import Callable, Iterable, List, Optional, Set

log = logging.getLogger("rollout_client")


@dataclass(frozen=True)
class HeldBatch:
    """A batch handed out and not yet acknowledged, as ``GET /v1/status`` shows it: its holder (a
    lease's holder name, or the puller's address without a lease) and the seconds until it goes back
    to the next pull unless acknowledged (or, leased, renewed)."""

    batch_id: int
    groups: int
    holder: str
    leased: bool
    returns_in_s: float


def holder_name() -> str:
    """This client's name as a batch holder: host, process id and a nonce."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def held_batches(raw: Iterable[dict]) -> List[HeldBatch]:
    return [
        HeldBatch(
            batch_id=int(h["batch_id"]),
            groups=int(h.get("groups") or 0),
            holder=str(h.get("holder") or ""),
            leased=bool(h.get("leased")),
            returns_in_s=float(h.get("returns_in_s") or 0.0),
        )
        for h in raw
    ]


def describe_wait(waited_s: float, held: List[HeldBatch], own_holder: Optional[str]) -> str:
    """One line for a trainer that has had no batch for ``waited_s`` seconds: which batches others
    hold, who holds them and when they come back."""
    others = [h for h in held if h.holder != own_holder]
    if not others:
        return f"no batch for {waited_s:.0f} s; no batch is held by another trainer (the engine is still producing)"
    parts = [
        f"batch {h.batch_id} ({h.groups} groups) held by {h.holder}"
        + (f", leased, back in {h.returns_in_s:.0f} s unless renewed" if h.leased else f", back in {h.returns_in_s:.0f} s")
        for h in others[:5]
    ]
    more = f" and {len(others) - 5} more" if len(others) > 5 else ""
    return f"no batch for {waited_s:.0f} s; {len(others)} batch(es) held by other trainers: " + "; ".join(parts) + more


class LeaseKeeper:
    """Renews ``holder``'s lease of ``seconds`` every third of it while a batch is held, from a daemon
    thread; ``renew`` sends one renewal and returns the ids the engine now holds for this holder."""

    def __init__(self, holder: str, seconds: float, renew: Callable[[str, float], List[int]]) -> None:
        self.holder = holder
        self.seconds = seconds
        self._renew = renew
        self._held: Set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._failures = 0
        self._thread = threading.Thread(target=self._run, name="rollout-client-lease", daemon=True)
        self._thread.start()

    def holding(self, batch_id: int) -> None:
        with self._lock:
            self._held.add(batch_id)

    def done(self, batch_id: int) -> None:
        with self._lock:
            self._held.discard(batch_id)

    @property
    def held(self) -> Set[int]:
        with self._lock:
            return set(self._held)

    def close(self) -> None:
        self._stop.set()

    def renew_now(self) -> None:
        before = self.held
        if not before:
            return
        try:
            kept = set(self._renew(self.holder, self.seconds))
        except Exception as e:  # noqa: BLE001 - a renewal failure must never reach the training loop
            self._failures += 1
            if self._failures == 1 or self._failures % 10 == 0:
                log.warning(
                    "renewing the lease of %s on batches %s failed (%d in a row): %s; they go back to other"
                    " trainers %g s after the last renewal",
                    self.holder, sorted(before), self._failures, e, self.seconds,
                )
            return
        self._failures = 0
        for lost in sorted(before - kept):
            with self._lock:
                was_held = lost in self._held
                self._held.discard(lost)
            if was_held:
                log.warning(
                    "batch %d is no longer held for %s (its lease lapsed, or the engine's collector moved and"
                    " does not know it): it may be delivered to another trainer; its acknowledgement still"
                    " retires its tasks",
                    lost, self.holder,
                )

    def _run(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            self.renew_now()
