"""Batches pulled ahead on a background thread while the trainer trains."""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import TYPE_CHECKING, Iterator, Optional, Union

from .batch import Batch
from .errors import BatchStreamBrokenError, ClientClosedError

if TYPE_CHECKING:  # pragma: no cover
    from .client import RolloutClient
    from .dedup import Deduplicator

log = logging.getLogger("rollout_client")

_STOP_CHECK_S = 1.0


class BatchIterator(Iterator[Batch]):
    """``for batch in client.batches(prefetch=2): ...``: a thread pulls the next batches while the
    loop trains on the current one.

    Contract:

    - At most ``prefetch`` batches are pulled and not yet handed to the loop (pulled batches are
      unacknowledged: keep ``prefetch`` small next to the engine's ``queue_size``).
    - The loop acknowledges (``client.ack(batch)``); the iterator never does, except with a
      ``deduplicator``: a batch with nothing new in it is then acknowledged right away and
      skipped, and a partly new one is handed over with only its new groups (its acknowledgement
      still covers every group). The loop calls ``deduplicator.mark_trained(batch)``.
    - A batch whose stream broke off is logged and skipped (the engine delivers it again); any
      other error stops the thread and is raised by the loop's next ``next()``.
    - ``wait``: seconds to wait for a batch before the iteration ends (None: forever).
    - :meth:`close` (or leaving the ``with`` block, or the loop's ``break`` followed by garbage
      collection) stops the thread within about a second; batches it had pulled ahead and not
      handed over are delivered again after the engine's ``batch_ack_timeout``.
    """

    def __init__(
        self,
        client: "RolloutClient",
        prefetch: int = 2,
        deduplicator: Optional["Deduplicator"] = None,
        wait: Optional[float] = None,
    ) -> None:
        if prefetch < 1:
            raise ValueError(f"prefetch must be >= 1, got {prefetch}")
        self._slots = threading.Semaphore(prefetch)
        self._queue: "queue.Queue[Union[Batch, BaseException, None]]" = queue.Queue()
        self._stop = threading.Event()
        self._done = False
        self.blocked_s = 0.0
        # The thread gets the shared pieces, not the iterator: an iterator dropped without close()
        # can then be collected, and collecting it stops the thread.
        self._thread = threading.Thread(
            target=_pull_ahead,
            args=(client, deduplicator, wait, self._slots, self._queue, self._stop),
            name="rollout-prefetch",
            daemon=True,
        )
        self._thread.start()

    def __iter__(self) -> "BatchIterator":
        return self

    def __next__(self) -> Batch:
        if self._done:
            raise StopIteration
        started = time.perf_counter()
        item = self._queue.get()
        self.blocked_s += time.perf_counter() - started
        if item is None:
            self._done = True
            raise StopIteration
        if isinstance(item, BaseException):
            self._done = True
            self.close()
            raise item
        self._slots.release()
        return item

    def close(self, timeout: float = 5.0) -> None:
        """Stops the background thread and waits for it (at most ``timeout`` seconds)."""
        self._done = True
        self._stop.set()
        self._slots.release()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def __enter__(self) -> "BatchIterator":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._stop.set()
        except Exception:
            pass


def _pull_ahead(
    client: "RolloutClient",
    dedup: Optional["Deduplicator"],
    wait: Optional[float],
    slots: threading.Semaphore,
    out: "queue.Queue[Union[Batch, BaseException, None]]",
    stop: threading.Event,
) -> None:
    """The background thread: pulls while a slot is free, hands batches (or the error) to ``out``."""
    try:
        deadline = None if wait is None else time.monotonic() + wait
        while not stop.is_set():
            if not slots.acquire(timeout=_STOP_CHECK_S):
                continue
            batch: Optional[Batch] = None
            while batch is None and not stop.is_set():
                if deadline is not None and time.monotonic() >= deadline:
                    out.put(None)
                    return
                step = _STOP_CHECK_S if deadline is None else min(_STOP_CHECK_S, max(0.0, deadline - time.monotonic()))
                try:
                    batch = client.next_batch(wait=step)
                except BatchStreamBrokenError as e:
                    log.warning("%s; pulling on", e)
                    continue
                if batch is not None and dedup is not None:
                    fresh = dedup.fresh(batch)
                    if fresh is None:
                        log.info("batch %d was trained already: acknowledged again, not trained", batch.batch_id)
                        client.ack(batch)
                        batch = None
                        continue
                    batch = fresh
            if batch is None:
                return
            if wait is not None:
                deadline = time.monotonic() + wait
            out.put(batch)
    except ClientClosedError as e:
        if not stop.is_set():
            out.put(e)
    except BaseException as e:  # handed to the loop
        out.put(e)
