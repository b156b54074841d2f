"""RBATCH v1, the batch stream of the trainer gateway (docs/protocol.md, "RBATCH v1").

:func:`read_batch` decodes a batch from any object with ``readinto`` (an HTTP response, a file, a
socket file) straight into the arrays it returns: each tensor's bytes are read into a freshly
allocated numpy array of its dtype, so the payload is never held twice. :func:`write_batch` is the
encoder, for tests and benchmarks.
"""

from __future__ import annotations

import json
import mmap
import struct
from typing import BinaryIO, Dict, List, Optional, Protocol

import numpy as np

from .batch import Batch, Group
from .errors import BatchFormatError

MAGIC = b"RBATCH"
TRAILER = b"REND"
FORMAT_VERSION = 1
HEADER = struct.Struct("<6sHqii")
MAX_METADATA_BYTES = 1 << 20
CONTENT_TYPE = "application/x-rollout-batch"
#: Groups with at least this many tensor bytes get one block of memory mapped with its pages
#: populated up front: on Linux one mmap(MAP_POPULATE) and then the socket's writes cost less than
#: a page fault per 4 KiB as the socket fills fresh arrays (measured on the development VM, 64 MiB
#: written into fresh memory: 0.68 GB/s populated against 0.36 GB/s faulting page by page).
POPULATE_AT_BYTES = 1 << 20
_ALIGN = 64
_MAP_POPULATE = getattr(mmap, "MAP_POPULATE", 0)

#: RBATCH dtype names and their little-endian numpy dtypes.
DTYPES: Dict[str, np.dtype] = {
    "int32": np.dtype("<i4"),
    "int64": np.dtype("<i8"),
    "float32": np.dtype("<f4"),
    "bool": np.dtype("?"),
}
_NAMES: Dict[str, str] = {np.dtype(v).str: k for k, v in DTYPES.items()}


class Readable(Protocol):
    """What :func:`read_batch` reads from."""

    def readinto(self, buffer: memoryview) -> Optional[int]:  # pragma: no cover - protocol
        ...


class StreamEnded(EOFError):
    """The stream ended before the batch did (raised by :func:`read_batch`, with the bytes read)."""

    def __init__(self, message: str, received: int) -> None:
        super().__init__(message)
        self.received = received


class _Counting:
    """Reads exactly; counts the bytes so that a broken stream can say how far it got."""

    def __init__(self, stream: Readable) -> None:
        self.stream = stream
        self.received = 0
        self.batch_id: Optional[int] = None

    def fill(self, view: memoryview, what: str) -> None:
        view = view.cast("B") if view.format != "B" or view.ndim != 1 else view
        n = len(view)
        got = 0
        while got < n:
            r = self.stream.readinto(view[got:])
            if not r:
                raise StreamEnded(
                    f"the stream ended {n - got} bytes short of the end of {what}", self.received + got
                )
            got += r
        self.received += n

    def exactly(self, n: int, what: str) -> bytes:
        buf = bytearray(n)
        self.fill(memoryview(buf), what)
        return bytes(buf)


class BlockPool:
    """Memory blocks of large groups handed back by the trainer (``RolloutClient.recycle``), reused
    for the next batches: writing into memory already in place is many times cheaper than into
    fresh memory. Holds at most ``max_bytes``; not thread-safe on its own (the client locks it)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._blocks: List[mmap.mmap] = []
        self._held = 0

    def take(self, nbytes: int) -> Optional[mmap.mmap]:
        """The smallest held block of at least ``nbytes`` and at most twice that, or None."""
        best = None
        for i, m in enumerate(self._blocks):
            if nbytes <= len(m) <= 2 * nbytes and (best is None or len(m) < len(self._blocks[best])):
                best = i
        if best is None:
            return None
        m = self._blocks.pop(best)
        self._held -= len(m)
        return m

    def give(self, m: mmap.mmap) -> None:
        """Keeps ``m`` for later, if there is room."""
        if self._held + len(m) <= self.max_bytes and all(m is not b for b in self._blocks):
            self._blocks.append(m)
            self._held += len(m)

    @property
    def held_bytes(self) -> int:
        return self._held


def read_batch(stream: Readable, pool: Optional[BlockPool] = None) -> Batch:
    """Decodes one RBATCH v1 batch from ``stream`` and stops right after its ``REND`` trailer.

    Raises :class:`BatchFormatError` (naming the batch, group, task and tensor) for bytes that are
    not valid RBATCH v1, and :class:`StreamEnded` when the stream ends early. Errors of the stream
    itself (``OSError``) propagate. Arrays are writable, C-contiguous and aligned.
    """
    r = _Counting(stream)
    magic, fmt, batch_id, version, n_groups = HEADER.unpack(r.exactly(HEADER.size, "the header"))
    if magic != MAGIC:
        raise BatchFormatError(f"not an RBATCH stream: magic {magic!r}")
    if fmt != FORMAT_VERSION:
        raise BatchFormatError(f"RBATCH format version {fmt} is not supported (this client reads {FORMAT_VERSION})")
    if n_groups < 0:
        raise BatchFormatError(f"batch {batch_id}: negative group count {n_groups}")
    r.batch_id = batch_id
    groups: List[Group] = []
    for g in range(n_groups):
        groups.append(_read_group(r, batch_id, g, pool))
    if r.exactly(4, f"batch {batch_id}'s trailer") != TRAILER:
        raise BatchFormatError(f"batch {batch_id}: missing the REND trailer after {n_groups} groups")
    return Batch(batch_id=batch_id, version=version, groups=groups)


def _read_group(r: _Counting, batch_id: int, index: int, pool: Optional[BlockPool] = None) -> Group:
    where = f"batch {batch_id} group {index}"
    (meta_len,) = struct.unpack("<I", r.exactly(4, f"{where}'s metadata length"))
    if meta_len > MAX_METADATA_BYTES:
        raise BatchFormatError(f"{where}: metadata of {meta_len} bytes (at most {MAX_METADATA_BYTES})")
    raw = r.exactly(meta_len, f"{where}'s metadata")
    try:
        meta = json.loads(raw.decode("utf-8"))
        task_id = int(meta["task_id"])
        specs = meta["tensors"]
        if not isinstance(specs, list):
            raise TypeError("'tensors' is not a list")
    except (ValueError, KeyError, TypeError) as e:
        raise BatchFormatError(f"{where}: malformed metadata: {e}") from e
    where = f"{where} (task {task_id})"
    layout = []
    total = 0
    for spec in specs:
        try:
            key = str(spec["key"])
            dtype = DTYPES[spec["dtype"]]
            shape = tuple(int(d) for d in spec["shape"])
            nbytes = int(spec["nbytes"])
        except (KeyError, TypeError, ValueError) as e:
            raise BatchFormatError(f"{where}: malformed tensor entry {spec!r}: {e!r}") from e
        if len(shape) > 2 or any(d < 0 for d in shape):
            raise BatchFormatError(f"{where} tensor '{key}': shape {list(shape)} (0 to 2 dimensions, each >= 0)")
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if nbytes != count * dtype.itemsize:
            raise BatchFormatError(
                f"{where} tensor '{key}': nbytes {nbytes} but shape {list(shape)} of {spec['dtype']} needs "
                f"{count * dtype.itemsize}"
            )
        if any(key == k for k, *_ in layout):
            raise BatchFormatError(f"{where}: tensor '{key}' appears twice")
        layout.append((key, dtype, shape, nbytes, total))
        total += -(-nbytes // _ALIGN) * _ALIGN
    mapping = _group_block(total, pool)
    block = None if mapping is None else np.frombuffer(mapping, dtype=np.uint8, count=total)
    tensors: Dict[str, np.ndarray] = {}
    for key, dtype, shape, nbytes, offset in layout:
        if block is not None:
            array = block[offset : offset + nbytes].view(dtype).reshape(shape)
        else:
            array = np.empty(shape, dtype=dtype)
        if nbytes:
            r.fill(memoryview(array.reshape(-1)).cast("B"), f"{where} tensor '{key}'")
        if dtype.kind == "b" and nbytes and array.view(np.uint8).max() > 1:
            raise BatchFormatError(f"{where} tensor '{key}': a bool byte other than 0 or 1")
        tensors[key] = array
    return Group(
        task_id=task_id,
        attempt=int(meta.get("attempt", 0)),
        slot_indices=tuple(int(x) for x in meta.get("slot_indices", ())),
        slot_row_counts=tuple(int(x) for x in meta.get("slot_row_counts", ())),
        dispatch_version=int(meta.get("dispatch_version", 0)),
        head_version=int(meta.get("head_version", 0)),
        tail_version=int(meta.get("tail_version", 0)),
        completion_version=int(meta.get("completion_version", 0)),
        tensors=tensors,
        block=mapping,
    )


def _group_block(nbytes: int, pool: Optional[BlockPool] = None) -> Optional[mmap.mmap]:
    """One writable block of at least ``nbytes`` for a large group's tensors: a recycled one from
    ``pool``, else a new populated mapping (None: allocate each tensor on its own, for small groups
    and where MAP_POPULATE does not exist)."""
    if nbytes < POPULATE_AT_BYTES or not _MAP_POPULATE:
        return None
    if pool is not None:
        m = pool.take(nbytes)
        if m is not None:
            return m
    try:
        return mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_POPULATE)
    except OSError:
        return None


def write_batch(batch: Batch, out: BinaryIO) -> int:
    """Encodes ``batch`` as RBATCH v1 into ``out``; returns the bytes written. For tests and
    benchmarks (the gateway is the encoder in production)."""
    n = out.write(HEADER.pack(MAGIC, FORMAT_VERSION, batch.batch_id, batch.version, len(batch.groups))) or 0
    for g in batch.groups:
        specs = []
        for key, a in g.tensors.items():
            name = _dtype_name(a.dtype, g.task_id, key)
            specs.append({"key": key, "dtype": name, "shape": list(a.shape), "nbytes": a.size * a.dtype.itemsize})
        meta = {
            "task_id": g.task_id,
            "attempt": g.attempt,
            "slot_indices": list(g.slot_indices),
            "slot_row_counts": list(g.slot_row_counts),
            "dispatch_version": g.dispatch_version,
            "head_version": g.head_version,
            "tail_version": g.tail_version,
            "completion_version": g.completion_version,
            "tensors": specs,
        }
        raw = json.dumps(meta, separators=(",", ":")).encode("utf-8")
        n += out.write(struct.pack("<I", len(raw))) or 0
        n += out.write(raw) or 0
        for key, a in g.tensors.items():
            data = np.ascontiguousarray(a, dtype=DTYPES[_dtype_name(a.dtype, g.task_id, key)])
            n += out.write(memoryview(data.reshape(-1)).cast("B")) or 0
    n += out.write(TRAILER) or 0
    return n


def _dtype_name(dtype: np.dtype, task_id: int, key: str) -> str:
    name = _NAMES.get(np.dtype(dtype).newbyteorder("<").str)
    if name is None:
        raise ValueError(f"task {task_id} tensor '{key}': dtype {dtype} has no RBATCH name")
    return name
