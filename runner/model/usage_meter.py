"""Reading an answer's usage from its bytes as they pass through the endpoint, bounded, and counting it.

Every mode sends an answer through one of these (:class:`UsageMeter`): scripted (what runner itself renders),
live (what the vendor streams back, chunk by chunk, never held whole) and replay (what the recording says). The
meter reads the bytes *as sent*, so the usage runner counts is the usage the CLI was told, exactly.

Bounds. An SSE answer is cut into events on the fly; only an event whose data mentions ``usage`` (every dialect's
usage-bearing event does: ``usage``, ``usageMetadata``) is parsed, and an event is held only until its blank line,
at most :data:`MAX_USAGE_PAYLOAD_BYTES` of it (a longer one is dropped, and said in :attr:`UsageMeter.unread`). A
JSON answer is held up to the same bound and parsed once it has ended. ``gzip`` and ``deflate`` answers are
inflated on the way; any other ``content-encoding`` is not read (live mode asks the vendor for ``identity``). Lines
end in ``\\n`` (a ``\\r`` before it is dropped), which is what every vendor sends.

:func:`runner.model.handlers.base.count_answer` puts what a meter read where the turn reads it (the exchange-log
record and the endpoint's handle).
"""

from __future__ import annotations

import zlib

from runner.core.outcomes import JsonValue
from runner.core.usage import Usage
from runner.intake.payload import Malformed, loads
from runner.model.dialects import Dialect

# one event or body held: a Responses `response.completed` repeats the whole answer before its usage
MAX_USAGE_PAYLOAD_BYTES = 8 * 1024 * 1024
USAGE_MARK = b"usage"
INFLATE_PIECE = 1024 * 1024


class UsageMeter:
    """One answer's usage, read from its bytes as they are sent (see the module docstring)."""

    def __init__(
        self, dialect: Dialect, *, sse: bool, encoding: str = "", limit: int = MAX_USAGE_PAYLOAD_BYTES
    ) -> None:
        self.reader = dialect.usage_reader()
        self.sse = sse
        self.limit = limit
        self.unread: str | None = None  # why (part of) the answer was not read for usage
        self._line = bytearray()
        self._line_over = False  # the line being cut is past the bound: dropped up to its end
        self._data = bytearray()
        self._data_over = False
        self._body = bytearray()
        self._ended = False
        self._unreadable = False
        self._inflater: zlib._Decompress | None = None  # typeshed names the type only privately
        encoding = encoding.strip().lower()
        if encoding == "gzip":
            self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._inflater = zlib.decompressobj()
        elif encoding not in ("", "identity"):
            self.unread = f"the answer's content-encoding {encoding!r} is not read for usage"
            self._unreadable = True

    def add(self, chunk: bytes) -> None:
        """The next bytes of the answer, as sent."""
        if self._ended or self._unreadable:
            return
        if self._inflater is None:
            self._take(chunk)
            return
        try:  # inflated a piece at a time: a small answer that inflates to a great deal is never held whole
            piece = self._inflater.decompress(chunk, INFLATE_PIECE)
            while piece:
                self._take(piece)
                tail = self._inflater.unconsumed_tail
                piece = self._inflater.decompress(tail, INFLATE_PIECE) if tail and not self._ended else b""
        except zlib.error as err:
            self.unread = f"the answer could not be inflated: {err}"
            self._unreadable = True

    def _take(self, chunk: bytes) -> None:
        if self._ended:
            return
        if self.sse:
            self._cut(chunk)
        elif len(self._body) + len(chunk) > self.limit:
            self.unread = f"the answer is over {self.limit} bytes: not read for usage"
            self._ended = True
            self._body.clear()
        else:
            self._body += chunk

    def _cut(self, chunk: bytes) -> None:
        lines = chunk.split(b"\n")
        rest = lines.pop()
        for index, piece in enumerate(lines):
            if index == 0:
                if not self._line_over:
                    self._line += piece
                    self._line_done(bytes(self._line))
                self._line.clear()
                self._line_over = False
            else:
                self._line_done(piece)
        if not self._line_over:
            self._line += rest
            if len(self._line) > self.limit:
                self._line.clear()
                self._line_over = True
                self._data_over = True  # this event lost a line: it is not read
                self.unread = f"an event over {self.limit} bytes was not read for usage"

    def _line_done(self, line: bytes) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line:
            self._event_done()
            return
        if line.startswith(b"data:"):
            value = line[5:]
            value = value[1:] if value.startswith(b" ") else value
            if self._data_over:
                return
            if len(self._data) + len(value) + 1 > self.limit:
                self._data.clear()
                self._data_over = True
                self.unread = f"an event over {self.limit} bytes was not read for usage"
                return
            if self._data:
                self._data += b"\n"
            self._data += value

    def _event_done(self) -> None:
        data = bytes(self._data)
        self._data.clear()
        self._data_over = False
        if USAGE_MARK in data:
            self._feed(data)

    def _feed(self, data: bytes) -> None:
        try:
            payload = loads(data)
        except Malformed:
            return
        self.reader.feed(payload)

    def finish(self) -> Usage | None:
        """The answer has ended (or was cut): the usage it reported, or None."""
        if not self._ended:
            self._ended = True
            if self.sse:
                if self._line and not self._line_over:
                    self._line_done(bytes(self._line))
                self._line.clear()
                self._event_done()  # an event whose blank line never came is still read
            elif self._body:
                try:
                    payload: JsonValue = loads(bytes(self._body))
                except Malformed:
                    payload = None
                self._body.clear()
                for each in payload if isinstance(payload, list) else [payload]:  # Gemini: an array of chunks
                    self.reader.feed(each)
        return self.reader.usage

    @property
    def usage(self) -> Usage | None:
        """What has been read so far (:meth:`finish` reads what is still held)."""
        return self.reader.usage
