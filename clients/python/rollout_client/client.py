"""``RolloutClient``: a trainer's connection to the engine through its trainer gateways.

The Python twin of the Java ``HttpRolloutClient`` (modules/trainer-client)::

    next_batch(wait)          POST /v1/batches/next?wait=S   repeated until a batch comes or ``wait`` passes
                              (a 307 to the gateway of the node that holds the batches is followed)
    ack(batch)                POST /v1/batches/{id}/ack {"task_ids": [...]}
    publish_weights(v, path)  POST /v1/weights {"version", "path"}
    status()                  GET  /v1/status
    stats(since_version)      GET  /v1/stats?since_version=N

Fail-over: a contact point that refuses or drops the connection, times out, or answers 503 is left
for the next one, in the configured order (starting from the last one that answered); rounds over
all of them back off (``retry_initial_backoff`` doubling up to ``retry_max_backoff``) until
``retry_deadline`` has passed since the first failure, then :class:`EngineUnreachableError` names
every contact point's last failure. Answers retrying cannot change are :class:`GatewayError`
subclasses. Every call is safe to repeat: acknowledging is idempotent and publishing is fenced by
the version.

Thread safety: one client may be used from several threads (the prefetching iterator pulls on its
own thread while the trainer acknowledges); each call uses its own pooled connection.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import socket
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple, TypeVar, Union

from .batch import Batch
from .chunked import ChunkedBody
from .errors import (
    BatchFormatError,
    BatchStreamBrokenError,
    ClientClosedError,
    EngineUnreachableError,
    GatewayError,
    VersionRefusedError,
    error_for,
)
from .lease import HeldBatch, LeaseKeeper, describe_wait, held_batches, holder_name
from .rbatch import BlockPool, StreamEnded, read_batch

log = logging.getLogger("rollout_client")

# A pull loop that has had no batch for this long says in the log who holds the batches, then again
# every _WAIT_REPORT_EVERY_S.
_WAIT_REPORT_AFTER_S = 30.0
_WAIT_REPORT_EVERY_S = 60.0

T = TypeVar("T")
_MAX_SMALL_BODY = 1 << 20
_MAX_STATS_BODY = 256 << 20  # every version's statistics lines: about 1 kB each
_USER_AGENT = "rollout-client-python/1"
# A pull's request header: this client follows a 307 to the gateway of the node that holds the batches.
_FOLLOW_HEADER = "X-Rollout-Follow-Redirect"
#: After a redirect that could not be followed, pulls ask for none for this many seconds.
REDIRECT_COOL_DOWN_S = 60.0


@dataclass(frozen=True)
class PublishResult:
    """What a weight publish did: the version now served, how long the servers took to load it, how
    many loaded it, and each server that failed (address -> error). Failed servers are out of
    rotation until a later update loads on them."""

    version: int
    update_time_ms: float
    servers_updated: int
    server_failures: Dict[str, str]


@dataclass(frozen=True)
class Status:
    """``GET /v1/status``: the engine's weight version and what is in flight and buffered. Statistics
    that are not finite are None; ``raw`` is the whole answer."""

    version: int
    running: int
    accepted: int
    rejected: int
    capacity: int
    buffered_groups: int
    unacknowledged_batches: int
    eval_running: int
    tokens_generated: int
    rejected_by_reason: Dict[str, int]
    last_stats: Dict[str, Any]
    raw: Dict[str, Any] = field(repr=False)
    #: Outcomes held after a fail-over until a trainer's late acknowledgement of a batch the lost
    #: collector handed out, or ``batch_ack_timeout``: neither running nor buffered.
    held_outcomes: int = 0
    #: The batches handed out and not yet acknowledged: who holds each and when it goes back.
    held_batches: List[HeldBatch] = field(default_factory=list)


@dataclass(frozen=True)
class _ContactPoint:
    url: str
    scheme: str
    host: str
    port: int
    prefix: str


class _Redirect(Exception):
    """A pull's 307: the batches are held on another node, whose gateway is at ``location``."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


class _Failure(Exception):
    """A failure that moves the call on to the next contact point."""

    def __init__(self, message: str, ambiguous: bool) -> None:
        super().__init__(message)
        self.ambiguous = ambiguous


class RolloutClient:
    """A trainer's client of the engine, over one or more trainer gateways.

    ``contact_points``: gateway base URLs (``http://`` or ``https://``, optional path prefix), tried
    in order. ``token``: sent as ``Authorization: Bearer``; default ``$ROLLOUT_GATEWAY_TOKEN`` when
    ``token_from_env`` (the default) and the variable is set. ``cafile``: PEM file of the CA (or the
    self-signed certificate) that signed the gateways' certificates; ``ssl_context`` overrides it.

    Timeouts, in seconds: ``connect_timeout`` opening a connection; ``request_timeout`` an ack or
    status call, and a pull's first byte beyond its wait; ``publish_timeout`` a publish (the servers
    load the weights before it answers); ``poll_wait`` one long-poll; ``read_idle_timeout`` a batch
    body from which nothing arrives for this long is abandoned; ``retry_initial_backoff``,
    ``retry_max_backoff``, ``retry_deadline`` bound the retries when no contact point answers.
    ``recycle_bytes``: how much memory :meth:`recycle` may keep for later batches (0: none).
    ``lease``: seconds a pulled batch stays held for this client without a renewal; the client
    renews it from a daemon thread every third of that until the batch is acknowledged, so a trainer
    that dies gives its batches back within about ``lease`` seconds. ``None`` pulls without a lease
    (batches then come back only after the engine's ``batch_ack_timeout``). ``holder``: the name the
    engine's status shows for this client (default ``host:pid:nonce``). ``follow_redirects``: a pull
    through a gateway on another node than the one that holds the batches follows that gateway's
    ``307`` to the holder's gateway (sending the token along), so the batch crosses no node on its
    way, and later pulls go there first; a holder's gateway that cannot be reached or refuses sends
    the pull back to its contact point (which relays the batch) and no redirect is followed for
    ``REDIRECT_COOL_DOWN_S`` seconds. ``False``: pulls are always served (relayed) where they are sent.
    ``rank``: with ``rollout.train_data_parallel_size`` above 1, the data-parallel rank this client
    pulls for (``RANK`` of ``torch.distributed``): its pulls get that rank's batches, of
    ``consumer_batch_size / train_data_parallel_size`` groups, and :meth:`status` is that rank's; an
    acknowledgement finds its rank by the batch id. ``None`` (the default) is rank 0.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        contact_points: Union[str, Sequence[str]],
        token: Optional[str] = None,
        cafile: Optional[str] = None,
        *,
        ssl_context: Optional[ssl.SSLContext] = None,
        token_from_env: bool = True,
        connect_timeout: float = 5.0,
        request_timeout: float = 30.0,
        publish_timeout: float = 600.0,
        poll_wait: float = 20.0,
        read_idle_timeout: float = 60.0,
        retry_initial_backoff: float = 0.1,
        retry_max_backoff: float = 5.0,
        retry_deadline: float = 60.0,
        recycle_bytes: int = 0,
        lease: Optional[float] = 15.0,
        holder: Optional[str] = None,
        follow_redirects: bool = True,
        rank: Optional[int] = None,
    ) -> None:
        if isinstance(contact_points, str):
            contact_points = [contact_points]
        if not contact_points:
            raise ValueError("contact_points: at least one gateway URL is needed")
        self._contacts = [self._parse(cp) for cp in contact_points]
        if token is None and token_from_env:
            token = os.environ.get("ROLLOUT_GATEWAY_TOKEN") or None
        if token is not None and (not token or any(c < "!" or c > "~" for c in token)):
            raise ValueError(f"token: printable ASCII without spaces ({len(token)} characters given)")
        self._token = token
        for name, value in (
            ("connect_timeout", connect_timeout),
            ("request_timeout", request_timeout),
            ("publish_timeout", publish_timeout),
            ("poll_wait", poll_wait),
            ("read_idle_timeout", read_idle_timeout),
            ("retry_initial_backoff", retry_initial_backoff),
            ("retry_max_backoff", retry_max_backoff),
            ("retry_deadline", retry_deadline),
        ):
            if not (value > 0) or value == float("inf"):
                raise ValueError(f"{name}: a finite number of seconds > 0, got {value!r}")
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.publish_timeout = publish_timeout
        self.poll_wait = poll_wait
        self.read_idle_timeout = read_idle_timeout
        self.retry_initial_backoff = retry_initial_backoff
        self.retry_max_backoff = retry_max_backoff
        self.retry_deadline = retry_deadline
        if ssl_context is None and any(c.scheme == "https" for c in self._contacts):
            ssl_context = ssl.create_default_context(cafile=cafile)
        self._ssl = ssl_context
        if recycle_bytes < 0:
            raise ValueError(f"recycle_bytes: >= 0, got {recycle_bytes}")
        self._pool = BlockPool(recycle_bytes) if recycle_bytes else None
        self._lock = threading.Lock()
        self._idle: Dict[str, List[http.client.HTTPConnection]] = {c.url: [] for c in self._contacts}
        self._active: Set[http.client.HTTPConnection] = set()
        self._preferred = 0
        self._closed = threading.Event()
        if lease is not None and not (1.0 <= lease <= 3600.0):
            raise ValueError(f"lease: seconds between 1 and 3600, or None, got {lease!r}")
        if holder is not None and not (0 < len(holder.strip()) and len(holder) <= 200):
            raise ValueError(f"holder: 1 to 200 characters, not blank, got {holder!r}")
        self.holder = holder or holder_name()
        self._leases = LeaseKeeper(self.holder, lease, self._renew_lease) if lease is not None else None
        self.follow_redirects = bool(follow_redirects)
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank <= 255):
            raise ValueError(f"rank: a data-parallel rank from 0 to 255, or None, got {rank!r}")
        #: The data-parallel rank this client pulls for, or None (rank 0).
        self.rank = rank
        # The gateway of the node that holds the batches, once a pull was redirected there; pulls
        # go there first. After a redirect that could not be followed, none is followed until
        # _no_follow_until (monotonic seconds).
        self._holder_gateway: Optional[_ContactPoint] = None
        self._no_follow_until = 0.0
        #: Pulls answered by the gateway of the node that holds the batches after a redirect.
        self.pulls_from_holder = 0
        #: Redirects that could not be followed: the pull went back to its contact point (relayed).
        self.redirects_fell_back = 0

    # ------------------------------------------------------------------ public calls

    @property
    def contact_points(self) -> List[str]:
        """The gateway base URLs, in the order they are tried."""
        return [c.url for c in self._contacts]

    def next_batch(self, wait: Optional[float] = None) -> Optional[Batch]:
        """The next batch, or None when none became ready within ``wait`` seconds.

        ``wait=None`` waits as long as it takes (long-polls of ``poll_wait`` repeated); ``0`` asks
        once without waiting. A batch that was handed out before and not acknowledged comes again
        with the same id (see :class:`~rollout_client.Deduplicator`).

        Raises :class:`BatchStreamBrokenError` when the batch's stream breaks off (the engine
        delivers it again later), :class:`BatchFormatError` for a malformed batch,
        :class:`EngineUnreachableError`, :class:`GatewayError`, :class:`ClientClosedError`.
        """
        if wait is not None and not (wait >= 0):
            raise ValueError(f"wait: seconds >= 0 or None, got {wait!r}")
        started = time.monotonic()
        deadline = None if wait is None else started + wait
        next_report = started + _WAIT_REPORT_AFTER_S
        while True:
            remaining = self.poll_wait if deadline is None else max(0.0, deadline - time.monotonic())
            batch = self._pull(min(remaining, self.poll_wait))
            if batch is not None or (deadline is not None and time.monotonic() >= deadline):
                return batch
            if time.monotonic() >= next_report:
                next_report = time.monotonic() + _WAIT_REPORT_EVERY_S
                self._report_wait(time.monotonic() - started)

    def _report_wait(self, waited: float) -> None:
        """Says in the log why no batch comes: who holds the batches handed out, and until when."""
        try:
            st = self.status()
        except Exception as e:  # noqa: BLE001 - the report is best effort; the pull goes on
            log.info("no batch for %.0f s (the status could not be read: %s)", waited, e)
            return
        log.info(
            "%s; %d group(s) buffered, capacity %d", describe_wait(waited, st.held_batches, self.holder),
            st.buffered_groups, st.capacity,
        )

    @property
    def leased_batches(self) -> Set[int]:
        """The batches this client holds under its lease and renews (empty without a lease)."""
        return self._leases.held if self._leases is not None else set()

    def renew_lease(self) -> List[int]:
        """Renews this client's lease now (the client does it itself every third of the lease while
        it holds batches); returns the ids of the batches the engine holds for it."""
        if self._leases is None:
            raise ValueError("this client pulls without a lease (lease=None)")
        return self._renew_lease(self.holder, self._leases.seconds)

    def _renew_lease(self, holder: str, seconds: float) -> List[int]:
        what = "renew the lease of " + holder
        body = json.dumps({"holder": holder, "lease": seconds}).encode()

        def read(cp: _ContactPoint, resp: http.client.HTTPResponse, ambiguous: Optional[str]) -> List[int]:
            payload = self._json(cp, what, resp)
            return [int(i) for i in payload.get("batch_ids") or []]

        return self._call(what, "POST", "/v1/leases/renew", body, self.request_timeout, read)

    def ack(self, batch: Union[Batch, int], task_ids: Optional[Iterable[int]] = None) -> bool:
        """Acknowledges a batch: the engine may forget it and will not deliver it again.

        With a :class:`Batch`, its :attr:`~Batch.ack_task_ids` (every group it was handed out with)
        travel along, so a gateway that did not hand the batch out (the trainer failed over) still
        retires its tasks. With a bare id, pass ``task_ids`` for the same effect. Idempotent.
        Returns whether this gateway knew the batch as outstanding (False after a fail-over or for
        a second acknowledgement; both harmless).
        """
        if isinstance(batch, Batch):
            batch_id = batch.batch_id
            ids = list(batch.ack_task_ids) if task_ids is None else [int(t) for t in task_ids]
        else:
            batch_id = int(batch)
            ids = [] if task_ids is None else [int(t) for t in task_ids]
        body = json.dumps({"task_ids": ids}).encode() if ids else b""
        what = f"acknowledge batch {batch_id}"

        def read(cp: _ContactPoint, resp: http.client.HTTPResponse, ambiguous: Optional[str]) -> bool:
            payload = self._json(cp, what, resp)
            return bool(payload.get("known", False))

        known = self._call(what, "POST", f"/v1/batches/{batch_id}/ack", body, self.request_timeout, read)
        if self._leases is not None:
            self._leases.done(batch_id)
        return known

    def publish_weights(self, version: int, path: Union[str, "os.PathLike[str]"]) -> PublishResult:
        """Makes the engine's inference servers load the weight file at ``path`` as ``version``, and
        returns once they have (or failed to).

        ``path`` is sent absolute (resolved against this process's working directory); the servers
        read it, so it must be on a file system they see. Raises :class:`VersionRefusedError` (409)
        when ``version`` is not greater than the engine's (its ``maybe_applied_earlier`` says
        whether an earlier attempt of this very call broke off after reaching a gateway),
        :class:`WeightsNotLoadedError` (502) when no server loaded the file.
        """
        version = int(version)
        body = json.dumps({"version": version, "path": os.path.abspath(os.fspath(path))}).encode()
        what = f"publish weights version {version}"

        def read(cp: _ContactPoint, resp: http.client.HTTPResponse, ambiguous: Optional[str]) -> PublishResult:
            if resp.status == 409 and ambiguous is not None:
                err = self._error(cp, what, resp)
                if isinstance(err, VersionRefusedError):
                    err = VersionRefusedError(
                        what,
                        cp.url,
                        err.status,
                        err.code,
                        f"{err.message} (an earlier attempt of this publish broke off with '{ambiguous}' "
                        f"and may have been applied)",
                    )
                    err.maybe_applied_earlier = True
                raise err
            p = self._json(cp, what, resp)
            return PublishResult(
                version=int(p["version"]),
                update_time_ms=float(p.get("update_time_ms") or 0.0),
                servers_updated=int(p.get("servers_updated", 0)),
                server_failures={str(k): str(v) for k, v in (p.get("server_failures") or {}).items()},
            )

        return self._call(what, "POST", "/v1/weights", body, self.publish_timeout, read)

    def status(self) -> Status:
        """The engine's status (``GET /v1/status``)."""
        what = "read status"

        def read(cp: _ContactPoint, resp: http.client.HTTPResponse, ambiguous: Optional[str]) -> Status:
            p = self._json(cp, what, resp)
            return Status(
                version=int(p["version"]),
                running=int(p.get("running") or 0),
                accepted=int(p.get("accepted") or 0),
                rejected=int(p.get("rejected") or 0),
                capacity=int(p.get("capacity") or 0),
                buffered_groups=int(p.get("buffered_groups") or 0),
                unacknowledged_batches=int(p.get("unacknowledged_batches") or 0),
                eval_running=int(p.get("eval_running") or 0),
                tokens_generated=int(p.get("tokens_generated") or 0),
                rejected_by_reason={str(k): int(v) for k, v in (p.get("rejected_by_reason") or {}).items()},
                last_stats=dict(p.get("last_stats") or {}),
                raw=p,
                held_outcomes=int(p.get("held_outcomes") or 0),
                held_batches=held_batches(p.get("held_batches") or []),
            )

        path = "/v1/status" if self.rank is None else f"/v1/status?rank={self.rank}"
        return self._call(what, "GET", path, None, self.request_timeout, read)

    def stats(self, since_version: int = 0) -> Dict[str, Any]:
        """The engine's statistics per weight version and scope (``GET /v1/stats``): the lines of
        its ``stats.jsonl`` for versions >= ``since_version``, as the engine's collector node wrote
        them, as plain dicts::

            {"lines": [{"version": 3, "scope": "rollout", "groups": 16, "accepted": 14, "rejected": 2,
                        "rejected_reasons": {"returned_none": 2}, "tokens": 1820,
                        "staleness_mean": 0.4, "staleness_max": 1, "reward": 0.61, "reward__count": 56.0, ...},
                       ...],
             "complete_below": 4}

        ``lines`` are in version order. Every line of a version below ``complete_below`` has been
        written: asking again with ``since_version=complete_below`` misses nothing, though lines at
        or above it may come again (keep the (version, scope) pairs already logged). A value that
        is not finite is None.
        """
        if isinstance(since_version, bool) or not isinstance(since_version, int) or since_version < 0:
            raise ValueError(f"since_version: an integer version >= 0, got {since_version!r}")
        what = "read statistics"

        def read(cp: _ContactPoint, resp: http.client.HTTPResponse, ambiguous: Optional[str]) -> Dict[str, Any]:
            p = self._json(cp, what, resp, _MAX_STATS_BODY)
            lines = p.get("lines")
            if not isinstance(lines, list) or not isinstance(p.get("complete_below"), int):
                raise GatewayError(
                    what, cp.url, resp.status, "malformed_answer", "no 'lines' list or 'complete_below' integer"
                )
            return {"lines": [dict(line) for line in lines], "complete_below": int(p["complete_below"])}

        path = f"/v1/stats?since_version={since_version}" + ("" if self.rank is None else f"&rank={self.rank}")
        return self._call(what, "GET", path, None, self.request_timeout, read)

    def recycle(self, batch: Batch) -> None:
        """Hands the memory of ``batch``'s large groups back for the next batches to be decoded into
        (kept up to ``recycle_bytes``). Writing into memory already in place is much cheaper than
        into fresh memory. Contract: nothing may use the batch's arrays afterwards, nor anything
        sharing their memory (``to_torch()`` on the CPU shares it; ``collate()`` of several groups
        copies). A no-op with ``recycle_bytes=0``."""
        if self._pool is None:
            return
        with self._lock:
            for g in batch.groups:
                if g.block is not None:
                    self._pool.give(g.block)

    def batches(
        self,
        prefetch: int = 2,
        deduplicator: Optional["Deduplicator"] = None,
        wait: Optional[float] = None,
    ) -> "BatchIterator":
        """An iterator over batches, pulled ahead on a background thread (at most ``prefetch``
        batches pulled and not yet handed to the loop). See :class:`~rollout_client.BatchIterator`.
        """
        from .iteration import BatchIterator

        return BatchIterator(self, prefetch=prefetch, deduplicator=deduplicator, wait=wait)

    def close(self) -> None:
        """Closes every connection, also those of calls in flight (they raise
        :class:`ClientClosedError`). Idempotent; never raises."""
        self._closed.set()
        if self._leases is not None:
            self._leases.close()
        with self._lock:
            conns = [c for idle in self._idle.values() for c in idle] + list(self._active)
            for idle in self._idle.values():
                idle.clear()
        for c in conns:
            _abort(c)

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def __enter__(self) -> "RolloutClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RolloutClient({self.contact_points!r}, token={'(set)' if self._token else None})"

    # ------------------------------------------------------------------ the pull

    def _pull(self, wait: float) -> Optional[Batch]:
        what = "pull a batch"

        def read(cp: _ContactPoint, resp: http.client.HTTPResponse, ambiguous: Optional[str]) -> Optional[Batch]:
            if resp.status == 204:
                resp.read()
                return None
            if resp.status != 200:
                raise self._error(cp, what, resp)
            header_id = resp.getheader("X-Rollout-Batch-Id")
            stream = _BodyReader(resp, self.read_idle_timeout)
            try:
                batch = read_batch(stream, _LockedPool(self._pool, self._lock) if self._pool is not None else None)
                if stream.finish() is not None:
                    raise BatchFormatError(f"batch {batch.batch_id}: bytes follow the trailer; the body must end there")
            except StreamEnded as e:
                raise BatchStreamBrokenError(cp.url, _int_or_none(header_id), e.received, str(e)) from e
            except socket.timeout as e:
                raise BatchStreamBrokenError(
                    cp.url,
                    _int_or_none(header_id),
                    stream.received,
                    f"no data for {self.read_idle_timeout:g} s (read_idle_timeout)",
                ) from e
            except (OSError, EOFError, ValueError, http.client.HTTPException) as e:
                if self._closed.is_set():
                    raise ClientClosedError(f"could not {what}: the client was closed") from e
                raise BatchStreamBrokenError(cp.url, _int_or_none(header_id), stream.received, _describe(e)) from e
            if self._leases is not None:
                self._leases.holding(batch.batch_id)
            return batch

        query = f"wait={wait:.3f}"
        if self.rank is not None:
            query += f"&rank={self.rank}"
        if self._leases is not None:
            query += f"&lease={self._leases.seconds:.3f}&holder={urllib.parse.quote(self.holder, safe='')}"
        return self._call(
            what, "POST", f"/v1/batches/next?{query}", b"", wait + self.request_timeout, read, self._pull_attempt
        )

    def _pull_attempt(
        self,
        cp: _ContactPoint,
        index: int,
        what: str,
        method: str,
        path: str,
        body: Optional[bytes],
        timeout: float,
        reader: Callable[[_ContactPoint, http.client.HTTPResponse, Optional[str]], T],
        ambiguous: Optional[str],
    ) -> T:
        """One pull: at the holder's gateway first when one answered before, else at ``cp``; a 307 to
        the holder's gateway is followed, and one that cannot be followed goes back to ``cp``."""
        follow = self.follow_redirects and time.monotonic() >= self._no_follow_until
        holder = self._holder_gateway if follow else None
        if holder is not None:
            try:
                result = self._attempt(holder, None, what, method, path, body, timeout, reader, ambiguous, follow=True)
                self.pulls_from_holder += 1
                return result
            except _Redirect as r:  # the batches moved on to another node
                return self._follow(cp, index, holder, r.location, what, method, path, body, timeout, reader, ambiguous)
            except (_Failure, GatewayError) as f:
                if self._holder_gateway is holder:
                    self._holder_gateway = None
                log.debug("pull at %s, the gateway of the node that held the batches, failed (%s); back to %s",
                          holder.url, f, cp.url)
        try:
            return self._attempt(cp, index, what, method, path, body, timeout, reader, ambiguous, follow=follow)
        except _Redirect as r:
            return self._follow(cp, index, cp, r.location, what, method, path, body, timeout, reader, ambiguous)

    def _follow(
        self,
        cp: _ContactPoint,
        index: int,
        origin: _ContactPoint,
        location: str,
        what: str,
        method: str,
        path: str,
        body: Optional[bytes],
        timeout: float,
        reader: Callable[[_ContactPoint, http.client.HTTPResponse, Optional[str]], T],
        ambiguous: Optional[str],
    ) -> T:
        """Pulls at ``location`` (a 307's, from ``origin``) without asking to be redirected again; on
        any answer but a batch or none, pulls at ``cp`` again without following (relayed)."""
        url = urllib.parse.urljoin(origin.url + "/", location)
        u = urllib.parse.urlsplit(url)
        why: str
        try:
            target = self._parse(f"{u.scheme}://{u.netloc}")
        except ValueError as e:
            target, why = None, str(e)
        if target is not None:
            target_path = (u.path or "/") + (f"?{u.query}" if u.query else "")
            try:
                result = self._attempt(target, None, what, method, target_path, body, timeout, reader, ambiguous)
                self._holder_gateway = target
                self.pulls_from_holder += 1
                return result
            except (_Failure, GatewayError) as f:
                why = str(f)
        self.redirects_fell_back += 1
        self._no_follow_until = time.monotonic() + REDIRECT_COOL_DOWN_S
        if target is not None and self._holder_gateway == target:
            self._holder_gateway = None
        log.info(
            "could not pull from %s, the gateway of the node that holds the batches (%s); pulling through %s "
            "(relayed) and following no redirect for %.0f s", url, why, cp.url, REDIRECT_COOL_DOWN_S,
        )
        return self._attempt(cp, index, what, method, path, body, timeout, reader, ambiguous)

    # ------------------------------------------------------------------ transport

    def _call(
        self,
        what: str,
        method: str,
        path: str,
        body: Optional[bytes],
        timeout: float,
        reader: Callable[[_ContactPoint, http.client.HTTPResponse, Optional[str]], T],
        attempt: Optional[Callable[..., T]] = None,
    ) -> T:
        attempt = attempt or self._attempt
        if self._closed.is_set():
            raise ClientClosedError(f"could not {what}: the client is closed")
        last: Dict[str, str] = {}
        ambiguous: Optional[str] = None
        first_failure: Optional[float] = None
        backoff = self.retry_initial_backoff
        n = len(self._contacts)
        while True:
            start = self._preferred
            for i in range(n):
                index = (start + i) % n
                cp = self._contacts[index]
                try:
                    return attempt(cp, index, what, method, path, body, timeout, reader, ambiguous)
                except _Failure as f:
                    if self._closed.is_set():
                        raise ClientClosedError(f"could not {what}: the client was closed") from None
                    last[cp.url] = str(f)
                    if f.ambiguous:
                        ambiguous = str(f)
                    log.debug("could not %s at %s: %s", what, cp.url, f)
            now = time.monotonic()
            if first_failure is None:
                first_failure = now
            if now - first_failure + backoff > self.retry_deadline:
                raise EngineUnreachableError(
                    what, now - first_failure, {c.url: last.get(c.url, "not tried") for c in self._contacts}
                )
            log.info("could not %s: no trainer gateway answered (%s); trying again in %.0f ms", what, last, backoff * 1e3)
            if self._closed.wait(backoff):
                raise ClientClosedError(f"could not {what}: the client was closed")
            backoff = min(backoff * 2, self.retry_max_backoff)

    def _attempt(
        self,
        cp: _ContactPoint,
        index: Optional[int],
        what: str,
        method: str,
        path: str,
        body: Optional[bytes],
        timeout: float,
        reader: Callable[[_ContactPoint, http.client.HTTPResponse, Optional[str]], T],
        ambiguous: Optional[str],
        follow: bool = False,
    ) -> T:
        """One request to ``cp`` (a contact point, or with ``index`` None the gateway of the node
        that holds the batches). With ``follow``, the request says the client follows a redirect
        there, and a 307 with a Location raises :class:`_Redirect`."""
        headers = {"User-Agent": _USER_AGENT, "Accept": "*/*"}
        if self._token is not None:
            headers["Authorization"] = f"Bearer {self._token}"
        if follow:
            headers[_FOLLOW_HEADER] = "1"
        if body is not None:
            headers["Content-Type"] = "application/json"
            headers["Content-Length"] = str(len(body))
        for reused in (True, False):
            conn, was_idle = self._take(cp, fresh=not reused)
            sent = False
            try:
                conn.request(method, cp.prefix + path, body=body, headers=headers)
                sent = True
                conn.sock.settimeout(timeout)
                resp = conn.getresponse()
            except ssl.SSLCertVerificationError as e:
                self._drop(conn)
                raise _Failure(f"TLS: {e.verify_message or e}", ambiguous=False) from e
            except (OSError, http.client.HTTPException) as e:
                self._drop(conn)
                if was_idle and isinstance(e, (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)):
                    continue  # a pooled connection the gateway had closed: once more on a new one
                connect_failure = not sent or isinstance(e, ConnectionRefusedError)
                raise _Failure(_describe(e), ambiguous=not connect_failure) from e
            if resp.status == 503:
                try:
                    err = self._error(cp, what, resp)
                    message = f"HTTP 503 {err.code}: {err.message}"
                except (OSError, http.client.HTTPException) as e:
                    message = f"HTTP 503 ({_describe(e)})"
                self._drop(conn)
                raise _Failure(message, ambiguous=False)
            if index is not None:
                self._preferred = index
            if follow and resp.status == 307 and resp.getheader("Location"):
                location = resp.getheader("Location") or ""
                try:
                    resp.read(_MAX_SMALL_BODY)
                except (OSError, http.client.HTTPException):
                    self._drop(conn)
                    raise _Redirect(location) from None
                if not resp.will_close and resp.isclosed():
                    self._give_back(cp, conn)
                else:
                    self._drop(conn)
                raise _Redirect(location)
            ok = False
            try:
                result = reader(cp, resp, ambiguous)
                ok = True
                return result
            except (GatewayError, BatchFormatError, BatchStreamBrokenError, ClientClosedError):
                raise
            except (OSError, http.client.HTTPException) as e:
                raise _Failure(_describe(e), ambiguous=True) from e
            finally:
                if ok and not resp.will_close and resp.isclosed():
                    self._give_back(cp, conn)
                else:
                    self._drop(conn)
        raise _Failure("the connection was closed before an answer", ambiguous=True)  # pragma: no cover

    def _take(self, cp: _ContactPoint, fresh: bool) -> Tuple[http.client.HTTPConnection, bool]:
        if self._closed.is_set():
            raise ClientClosedError("the client is closed")
        conn: Optional[http.client.HTTPConnection] = None
        with self._lock:
            idle = self._idle.setdefault(cp.url, [])
            if idle and not fresh:
                conn = idle.pop()
        was_idle = conn is not None
        if conn is None:
            if cp.scheme == "https":
                conn = http.client.HTTPSConnection(cp.host, cp.port, timeout=self.connect_timeout, context=self._ssl)
            else:
                conn = http.client.HTTPConnection(cp.host, cp.port, timeout=self.connect_timeout)
        with self._lock:
            self._active.add(conn)
        if not was_idle:
            try:
                conn.connect()
            except ssl.SSLCertVerificationError as e:
                self._drop(conn)
                raise _Failure(f"TLS: {e.verify_message or e}", ambiguous=False) from e
            except (OSError, http.client.HTTPException) as e:
                self._drop(conn)
                raise _Failure(_describe(e), ambiguous=False) from e
        if self._closed.is_set():
            self._drop(conn)
            raise ClientClosedError("the client is closed")
        return conn, was_idle

    def _give_back(self, cp: _ContactPoint, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            self._active.discard(conn)
            if not self._closed.is_set():
                self._idle.setdefault(cp.url, []).append(conn)
                return
        _abort(conn)

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            self._active.discard(conn)
        _abort(conn)

    def _json(
        self, cp: _ContactPoint, what: str, resp: http.client.HTTPResponse, limit: int = _MAX_SMALL_BODY
    ) -> Dict[str, Any]:
        if resp.status != 200:
            raise self._error(cp, what, resp)
        raw = resp.read(limit)
        try:
            payload = json.loads(raw.decode("utf-8"))
            if not isinstance(payload, dict):
                raise ValueError("not a JSON object")
            return payload
        except ValueError as e:
            raise GatewayError(what, cp.url, resp.status, "malformed_answer", f"a body that is not the expected JSON: {e}") from e

    @staticmethod
    def _error(cp: _ContactPoint, what: str, resp: http.client.HTTPResponse) -> GatewayError:
        raw = resp.read(_MAX_SMALL_BODY)
        code, message = f"http_{resp.status}", raw.decode("utf-8", "replace")[:500]
        try:
            e = json.loads(raw.decode("utf-8"))["error"]
            code, message = str(e.get("code", code)), str(e.get("message", message))
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        return error_for(what, cp.url, resp.status, code, message)

    @staticmethod
    def _parse(url: str) -> _ContactPoint:
        u = urllib.parse.urlsplit(url.strip())
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"contact point {url!r}: an http:// or https:// URL with a host")
        port = u.port or (443 if u.scheme == "https" else 80)
        return _ContactPoint(url.strip().rstrip("/"), u.scheme, u.hostname, port, u.path.rstrip("/"))


class _LockedPool(BlockPool):
    """The client's pool, taken from under the client's lock (recycle() may run on another thread)."""

    def __init__(self, pool: BlockPool, lock: threading.Lock) -> None:
        self._pool = pool
        self._lock = lock

    def take(self, nbytes: int) -> Optional[Any]:  # type: ignore[override]
        with self._lock:
            return self._pool.take(nbytes)

    def give(self, m: Any) -> None:  # type: ignore[override]
        with self._lock:
            self._pool.give(m)


class _BodyReader:
    """A batch response's body: chunked bodies through :class:`ChunkedBody` (large reads, payload
    straight into the arrays), others through ``http.client``; the socket timeout becomes the idle
    timeout; counts the payload bytes that arrived."""

    def __init__(self, resp: http.client.HTTPResponse, idle_timeout: float) -> None:
        self.resp = resp
        self.received = 0
        sock = getattr(getattr(getattr(resp, "fp", None), "raw", None), "_sock", None)
        if sock is not None:
            sock.settimeout(idle_timeout)
        self._chunked = ChunkedBody(resp.fp) if getattr(resp, "chunked", False) and resp.fp is not None else None

    def readinto(self, buffer: memoryview) -> int:
        n = self._chunked.readinto(buffer) if self._chunked is not None else self.resp.readinto(buffer)
        self.received += n
        return n

    def finish(self) -> Optional[bytes]:
        """Reads to the end of the body (so the connection can be reused); returns a byte found
        beyond the expected end, or None."""
        if self._chunked is None:
            extra = self.resp.read(1)
            return extra or None
        extra = self._chunked.finish()
        if extra is None:
            self.resp.close()  # the body is consumed: the connection goes back to the pool
        return extra


def _abort(conn: http.client.HTTPConnection) -> None:
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    try:
        conn.close()
    except OSError:
        pass


def _describe(e: BaseException) -> str:
    if isinstance(e, ConnectionRefusedError):
        return "connection refused"
    if isinstance(e, socket.timeout):
        return "timed out"
    if isinstance(e, http.client.IncompleteRead):
        return "the connection closed in the middle of the body"
    text = str(e)
    return type(e).__name__ + (f": {text}" if text else "")


def _int_or_none(s: Optional[str]) -> Optional[int]:
    try:
        return None if s is None else int(s)
    except ValueError:
        return None


from .dedup import Deduplicator  # noqa: E402,F401  (for annotations)
from .iteration import BatchIterator  # noqa: E402,F401
