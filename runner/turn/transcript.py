"""The CLI's transcript as the turn sees it: bounded files on disk and a bounded tail in memory.

Called from the thread that pumps the container's output. Memory stays bounded whatever the CLI
prints: lines are cut at :data:`~runner.harnesses.stream.MAX_FRAME_BYTES`, each transcript file
stops growing at :data:`MAX_FILE_BYTES` (with a note saying so), and only the tail is kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from runner.core.scrub import Scrubber
from runner.harnesses.stream import LineSplitter, StreamReader, Tail

MAX_FILE_BYTES = 64 * 1024 * 1024
CUT_NOTE = b" [cut: line over the frame limit]"


class StreamSink:
    """One output stream (stdout or stderr): split into lines, scrubbed, written, tailed.

    Scrubbing works on whole lines, so a secret split across two chunks of the container's output
    is joined before it is looked for; a line cut at the frame limit loses a dangling start of a
    secret too (the rest of that line is dropped, so there is no other half to find)."""

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
        return self._lines(self.splitter.feed(chunk))

    def close(self) -> bool:
        terminal = self._lines(self.splitter.close())
        self._file.close()
        return terminal

    def _lines(self, batch: list[tuple[bytes, bool]]) -> bool:
        """Whole-chunk work where possible: a flood of short lines must not cost a Python call per line."""
        if not batch:
            return False
        if self.scrubber.active:
            batch = [(self.scrubber.cut_raw(line) if cut else self.scrubber.raw(line), cut) for line, cut in batch]
        clean = [line + CUT_NOTE if cut else line for line, cut in batch]
        self._write(b"\n".join(clean) + b"\n")
        for line in clean[-self.tail.max_lines :]:
            self.tail.add(line.decode("utf-8", errors="replace"))
        terminal = False
        if self.reader is not None:
            # the interpreter reads the scrubbed frames too: the CLI's outcome (its final text, say)
            # ends up in the result and in runner's own stdout, which no scrubber sees afterwards
            self.reader.keep(batch)  # in case the whole stdout is one JSON document (Nanocoder's report)
            frames = [(line, cut) for line, cut in batch if line.lstrip()[:1] == b"{"]
            self.reader.non_json_lines += len(batch) - len(frames)
            for line, cut in frames:
                terminal = self.reader.line(line, cut) or terminal
        return terminal

    def _write(self, data: bytes) -> None:
        if self.truncated:
            return
        if self.bytes_written + len(data) > MAX_FILE_BYTES:
            self._file.write(data[: MAX_FILE_BYTES - self.bytes_written])
            self.bytes_written = MAX_FILE_BYTES
            self._file.write(b"\n[runner: transcript file limit reached; the rest is not kept]\n")
            self.truncated = True
            return
        self._file.write(data)
        self.bytes_written += len(data)
