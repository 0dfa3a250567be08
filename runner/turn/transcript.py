"""The CLI's transcript as the turn sees it: bounded files on disk and a bounded tail in memory.

Called from the thread that pumps the container's output. Memory stays bounded whatever the CLI
prints: lines are cut at :data:`~runner.harnesses.stream.MAX_FRAME_BYTES`, each transcript file
stops growing at :data:`MAX_FILE_BYTES` (with a note saying so), and only the tail is kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from runner.harnesses.stream import LineSplitter, StreamReader, Tail
from runner.turn.scrub import Scrubber

MAX_FILE_BYTES = 64 * 1024 * 1024


class StreamSink:
    """One output stream (stdout or stderr): split into lines, scrubbed, written, tailed."""

    def __init__(self, path: Path, scrubber: Scrubber, tail: Tail, reader: StreamReader | None = None) -> None:
        self.path = path
        self.scrubber = scrubber
        self.tail = tail
        self.reader = reader
        self.splitter = LineSplitter()
        self.bytes_seen = 0
        self.bytes_written = 0
        self.truncated = False
        self._file: BinaryIO = path.open("wb")

    def feed(self, chunk: bytes) -> bool:
        """Take a chunk; True when a line in it carried the CLI's terminal frame."""
        self.bytes_seen += len(chunk)
        return any([self._line(line, oversized) for line, oversized in self.splitter.feed(chunk)])

    def close(self) -> bool:
        terminal = any([self._line(line, oversized) for line, oversized in self.splitter.close()])
        self._file.close()
        return terminal

    def _line(self, line: bytes, oversized: bool) -> bool:
        clean = self.scrubber.raw(line)
        text = clean.decode("utf-8", errors="replace")
        self.tail.add(text if not oversized else f"{text[:200]}… [line over the frame limit, cut]")
        self._write(clean + (b" [cut: line over the frame limit]\n" if oversized else b"\n"))
        return self.reader.line(line, oversized) if self.reader is not None else False

    def _write(self, data: bytes) -> None:
        if self.truncated:
            return
        if self.bytes_written + len(data) > MAX_FILE_BYTES:
            self._file.write(b"\n[runner: transcript file limit reached; the rest is not kept]\n")
            self.truncated = True
            return
        self._file.write(data)
        self.bytes_written += len(data)
