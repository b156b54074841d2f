"""Reading a chunked HTTP/1.1 body straight into the caller's buffers.

``http.client`` decodes chunked bodies chunk by chunk, two or three system calls per chunk; the
JDK's HTTP server, which the gateway runs on, writes chunks of 4 KiB. :class:`ChunkedBody` instead
reads up to 1 MiB at a time: chunk payload lands directly in the destination when a chunk is at
least as big as what is still wanted, and is otherwise copied out of a 1 MiB staging buffer (a
memcpy, far cheaper than the system calls it saves). The payload is never held twice.
"""

from __future__ import annotations

from typing import BinaryIO, Optional

_STAGING = 1 << 20
_MAX_LINE = 4096


class ChunkedBody:
    """The payload of a chunked body read from ``fp`` (a buffered reader over the socket, positioned
    after the headers). ``readinto`` fills as much of the buffer as the body still has; 0 means the
    body has ended (its terminating chunk and trailer consumed). A malformed framing raises
    ``ValueError``; the stream's errors propagate; an early end raises ``EOFError``."""

    def __init__(self, fp: BinaryIO) -> None:
        self._fp = fp
        self._buf = bytearray(_STAGING)
        self._view = memoryview(self._buf)
        self._pos = 0
        self._end = 0
        self._left = 0  # payload bytes left in the current chunk
        self._need_crlf = False
        self.done = False

    def _fill(self) -> None:
        """Moves what is unread to the front of the staging buffer and reads more behind it."""
        if self._pos:
            n = self._end - self._pos
            self._view[:n] = self._view[self._pos : self._end]
            self._pos, self._end = 0, n
        got = self._fp.readinto1(self._view[self._end :])  # type: ignore[attr-defined]
        if not got:
            raise EOFError("the connection closed in the middle of a chunked body")
        self._end += got

    def _line(self) -> bytes:
        while True:
            i = self._buf.find(b"\r\n", self._pos, self._end)
            if i >= 0:
                line = bytes(self._view[self._pos : i])
                self._pos = i + 2
                return line
            if self._end - self._pos > _MAX_LINE:
                raise ValueError("a chunk-size line longer than 4 KiB")
            self._fill()

    def _next_chunk(self) -> None:
        if self._need_crlf:
            if self._line() != b"":
                raise ValueError("chunk data not followed by CRLF")
            self._need_crlf = False
        line = self._line()
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise ValueError(f"a malformed chunk-size line {line[:40]!r}") from None
        if size < 0:
            raise ValueError(f"a negative chunk size {size}")
        if size == 0:
            while self._line() != b"":  # trailer fields, then the empty line
                pass
            self.done = True
        self._left = size
        self._need_crlf = size > 0

    def readinto(self, dest: memoryview) -> int:
        dest = dest.cast("B") if dest.format != "B" else dest
        want = len(dest)
        filled = 0
        buf, view = self._buf, self._view
        while filled < want and not self.done:
            if self._left == 0:
                # The common case inline: CRLF, a chunk-size line and data all staged already.
                pos, end = self._pos, self._end
                start = pos + 2 if self._need_crlf else pos
                i = buf.find(b"\r\n", start, end) if end - pos > 2 else -1
                if i > start and (not self._need_crlf or view[pos:start] == b"\r\n"):
                    try:
                        size = int(buf[start:i], 16)
                    except ValueError:
                        size = 0
                    if size > 0:
                        self._pos, self._left, self._need_crlf = i + 2, size, True
                        continue
                self._next_chunk()
                continue
            n = min(self._left, want - filled)
            staged = self._end - self._pos
            if staged:
                n = min(n, staged)
                dest[filled : filled + n] = view[self._pos : self._pos + n]
                self._pos += n
            else:
                n = self._fp.readinto1(dest[filled : filled + n])  # type: ignore[attr-defined]
                if not n:
                    raise EOFError("the connection closed in the middle of a chunk")
            filled += n
            self._left -= n
        return filled

    def finish(self) -> Optional[bytes]:
        """Reads to the end of the body; returns the first payload byte found beyond what was read
        (None when the body ended where expected)."""
        one = bytearray(1)
        n = self.readinto(memoryview(one))
        if n:
            return bytes(one)
        return None
