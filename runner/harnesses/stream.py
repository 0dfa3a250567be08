"""From a CLI's stdout to its own outcome (upstream §3.2, §8 item 8). Pure.

Bytes arrive in chunks; :class:`LineSplitter` cuts them into lines with a bound on line length;
each JSON object line is a frame handed to the profile's interpreter, which turns it into steps;
:class:`StreamReader` keeps the messages, the first terminal and the CLI's MCP startup report;
:func:`harness_outcome` maps terminal and exit code to the runtime outcome.

A frame is read through the intake (:func:`runner.intake.payload.loads`): nested deeper than
:data:`~runner.intake.payload.MAX_DEPTH`, or not JSON at all, a line that starts like a frame is the CLI's
**malformed output**, counted with the first one's cause; invalid UTF-8 and lone surrogates are read as U+FFFD.
A turn that printed malformed frames and no terminal one fails ``harness_malformed_output`` with that cause,
whatever its exit code: the frame that could not be read may have been the one that ended the turn. A line
over the frame bound is cut and not read, as before (Pi's ``agent_end`` repeats a whole transcript and may be
one; its ``message_end`` frames decide).

A CLI may print no frame at all but one JSON object pretty-printed over many lines once it is done (Nanocoder's
``--json`` report): until a line is a frame, the stdout lines are also kept, in order (:meth:`StreamReader.keep`, one
call per batch of lines; at most :data:`MAX_FRAME_BYTES` in all, and none cut), and :meth:`StreamReader.end`, after
the CLI exited, reads them as one frame through the same intake when no line was one and together they are exactly
one JSON object; its pieces (``{`` alone is a malformed frame) are then no longer malformed output. Anything else,
or more, is read line by line as before; when what started as a document could not be read as one (past the
bound, nested too deep, not JSON), the turn's malformed output names that as its cause rather than its first piece.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from runner.core.outcomes import Complete, Fail, JsonValue, ProtocolError, RuntimeOutcome
from runner.core.vocabulary import Code, message
from runner.intake.payload import Malformed, loads

MAX_FRAME_BYTES = 1024 * 1024
MALFORMED_OUTPUT = "harness_malformed_output"


@dataclass(frozen=True)
class Message:
    text: str


@dataclass(frozen=True)
class Completed:
    output: JsonValue = None  # None: the joined messages at this moment


@dataclass(frozen=True)
class Failed:
    error: ProtocolError


@dataclass(frozen=True)
class McpStartup:
    """What the CLI itself reported about its MCP server at start-up."""

    server: str
    connected: bool
    detail: str


Step = Message | Completed | Failed | McpStartup
Interpreter = Callable[[dict[str, JsonValue]], list[Step]]
# A CLI whose stdout carries no frames (dsh prints plain text) may keep its turn's events in a session log
# instead: after the CLI exits, its reader gets the session directory (HOME/<session_transcript>) and the exit
# code and returns the steps that log gives (runner.harnesses.interpreters.SESSION_READERS).
SessionReader = Callable[[Path, int | None], list[Step]]


class LineSplitter:
    """Cut a byte stream into lines; a line longer than ``limit`` is cut and marked oversized."""

    def __init__(self, limit: int = MAX_FRAME_BYTES) -> None:
        self.limit = limit
        self._buf = bytearray()
        self._dropping = False

    def feed(self, chunk: bytes) -> list[tuple[bytes, bool]]:
        """``(line, oversized)`` for every line completed by ``chunk`` (split in C, not byte by byte)."""
        parts = chunk.split(b"\n")
        rest = parts.pop()  # the unfinished tail of the chunk
        out: list[tuple[bytes, bool]] = []
        if parts:
            first = parts[0]
            if self._dropping:
                self._dropping = False
                out.append((b"", True))
            else:
                self._buf += first
                out.append((bytes(self._buf[: self.limit]), len(self._buf) > self.limit))
            self._buf.clear()
            limit = self.limit
            out += [(p, False) if len(p) <= limit else (p[:limit], True) for p in parts[1:]]
        if not self._dropping:
            self._buf += rest
            if len(self._buf) > self.limit:
                self._dropping = True
                self._buf.clear()
        return out

    def close(self) -> list[tuple[bytes, bool]]:
        if self._dropping:
            self._dropping = False
            return [(b"", True)]
        if self._buf:
            line = bytes(self._buf)
            self._buf.clear()
            return [(line, False)]
        return []


class Tail:
    """The last lines of a stream, bounded in lines and bytes, for the result and the summary."""

    def __init__(self, max_lines: int = 40, max_bytes: int = 16 * 1024, max_line: int = 2048) -> None:
        self.max_lines, self.max_bytes, self.max_line = max_lines, max_bytes, max_line
        self._lines: deque[str] = deque()
        self._bytes = 0
        self.dropped = 0

    def add(self, line: str) -> None:
        if len(line) > self.max_line:
            line = line[: self.max_line] + f"… [{len(line) - self.max_line} more characters]"
        self._lines.append(line)
        self._bytes += len(line)
        while self._lines and (len(self._lines) > self.max_lines or self._bytes > self.max_bytes):
            self._bytes -= len(self._lines.popleft())
            self.dropped += 1

    def lines(self) -> list[str]:
        return list(self._lines)


@dataclass
class StreamReader:
    """Reads one CLI's stdout lines through its interpreter; the first terminal wins."""

    interpret: Interpreter
    messages: list[str] = field(default_factory=list)
    terminal: RuntimeOutcome | None = None
    startup: list[McpStartup] = field(default_factory=list)
    frames: int = 0
    non_json_lines: int = 0
    malformed: int = 0  # lines that start like a frame and cannot be read as one
    malformed_cause: str | None = None  # why the first of them could not
    document: bytearray = field(default_factory=bytearray, repr=False)  # the lines that were no frame, in order
    document_overflow: bool = False  # they were more than MAX_FRAME_BYTES, or one was cut: never one document
    document_cause: str | None = None  # why a stdout that began as one JSON object could not be read as one

    def line(self, raw: bytes, oversized: bool = False) -> bool:
        """Read one stdout line; True when this line set the terminal."""
        text = raw.strip()
        if not text:
            return False
        if oversized or not text.startswith(b"{"):
            self.non_json_lines += 1
            return False
        try:
            frame = loads(text)
        except Malformed as err:
            self.non_json_lines += 1
            self.malformed += 1
            self.malformed_cause = self.malformed_cause or str(err)
            return False
        if not isinstance(frame, dict):
            return False
        self.frames += 1
        return self.steps(self.interpret(frame))

    def keep(self, batch: list[tuple[bytes, bool]]) -> None:
        """Keep a batch of stdout lines, in order, before they are read as frames, in case the whole stdout is one
        JSON document (:meth:`end`): nothing once a line was a frame or the document outgrew its bound (or a line
        was cut), so a flood costs one check per batch."""
        if self.frames or self.document_overflow or not batch:
            return
        chunk = b"\n".join(line for line, _ in batch) + b"\n"
        if any(cut for _, cut in batch) or len(self.document) + len(chunk) > MAX_FRAME_BYTES:
            self.document_overflow = True
            if (self.document or chunk).lstrip().startswith(b"{"):
                self.document_cause = f"one JSON document on stdout over the bound of {MAX_FRAME_BYTES} bytes"
            self.document.clear()
        else:
            self.document += chunk

    def end(self) -> bool:
        """After the CLI exited: the kept lines as one frame, when no line was one and together they are one JSON
        object (whose pieces then were no malformed output); True when that set the terminal."""
        if self.frames or self.document_overflow or not self.document.lstrip().startswith(b"{"):
            if self.malformed and not self.frames and self.document_cause:
                self.malformed_cause = self.document_cause
            return False
        try:
            frame = loads(bytes(self.document))
        except Malformed as err:
            self.document_cause = f"one JSON document on stdout: {err}"
            if self.malformed:
                self.malformed_cause = self.document_cause
            return False
        self.document.clear()
        if not isinstance(frame, dict):
            return False
        self.frames += 1
        self.malformed, self.malformed_cause = 0, None
        return self.steps(self.interpret(frame))

    def steps(self, steps: list[Step]) -> bool:
        """Take steps (from a frame, or from a session log read after the CLI exited); True when they set
        the terminal."""
        had_terminal = self.terminal is not None
        for step in steps:
            if isinstance(step, Message):
                self.messages.append(step.text)
            elif isinstance(step, McpStartup):
                self.startup.append(step)
            elif self.terminal is None and isinstance(step, Completed):
                output: JsonValue = step.output if step.output is not None else {"text": "\n".join(self.messages)}
                self.terminal = Complete(output)
            elif self.terminal is None and isinstance(step, Failed):
                self.terminal = Fail(step.error)
        return not had_terminal and self.terminal is not None


def harness_outcome(reader: StreamReader, exit_code: int | None, harness: str) -> RuntimeOutcome:
    """A terminal beats the exit code; malformed frames and no terminal fail with their cause; exit 0 completes
    with the joined prose; else it failed. A stdout that was one JSON document rather than lines of frames is read
    first (:meth:`StreamReader.end`)."""
    reader.end()
    if reader.terminal is not None:
        return reader.terminal
    if reader.malformed:
        text = (f"The {harness} CLI printed {reader.malformed} frame(s) runner could not read and none that ended "
                f"the turn (exit code {exit_code}); the first: {reader.malformed_cause}.")
        return Fail(ProtocolError.of(MALFORMED_OUTPUT, text, retryable=False))
    if exit_code == 0:
        return Complete({"text": "\n".join(reader.messages)})
    text = message(Code.HARNESS_EXITED_WITHOUT_OUTCOME, harness=harness, code=exit_code)
    return Fail(ProtocolError.of(Code.HARNESS_EXITED_WITHOUT_OUTCOME, text, retryable=False))
