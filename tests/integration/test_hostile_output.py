"""A CLI that prints terminal escape sequences, through the real box: runner shows them, never hands them on.

The CLI is tests/hostile/output-escapes.yaml, a profile on the reference image whose wrapper puts a screen clear, a
colour, an OSC 8 link, a BEL, backspaces, a carriage return, an 8-bit CSI and a right-to-left override into its
reason for asking, its messages and a raw stdout line, then plays the escalation case as the reference does. Run
through ``runner exec`` on both transports (mount, stream) and read back with ``runner show``, to a pipe (not one
ESC byte on stdout or stderr) and to a pseudo-terminal (rich's own colours, but none of the CLI's sequences), and
with ``--json`` (the same values for a parser, no raw control character). The turn is graded as the reference's:
the hostile text is the CLI's data.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import termios
from pathlib import Path

import pytest

from runner.images import ImageRecord
from tests.support import RUNNER

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

PROFILE = Path(__file__).resolve().parents[1] / "hostile" / "output-escapes.yaml"
# what the wrapper's HOSTILE holds, as runner must show it
SHOWN = "\\x1b[2J\\x1b[31mred\\x1b[0m \\x1b]8;;https://evil.invalid/\\x07click me\\x1b]8;;\\x07 bell\\x07 "
# the CLI's own sequences, which must never reach a terminal (the colours rich writes itself are not among them)
OBEYED = [b"\x1b[2J", b"\x1b[31mred", b"\x1b]8;;https://evil", b"\x07", b"\x08", b"\roverwritten", b"\xc2\x9b",
          "\u202e".encode()]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run([RUNNER, *args], capture_output=True, timeout=300, env={**env, "TMPDIR": str(cwd)})


def in_a_terminal(*args: str, cwd: Path) -> bytes:
    """What ``runner ARGS`` writes to a pseudo-terminal (stdout and stderr are the terminal), all of it."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 400, 0, 0))  # wide: no line folded
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([RUNNER, *args], stdin=follower, stdout=follower, stderr=follower, close_fds=True,
                            env={**env, "TERM": "xterm-256color", "TMPDIR": str(cwd)})
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 300)
        if not ready:
            break
        try:
            data = os.read(leader, 65536)
        except OSError:  # the follower side closed: the process is done
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    return b"".join(chunks)


@pytest.mark.parametrize("transport", ["mount", "stream"])
def test_escape_sequences_a_cli_prints_reach_no_terminal(tmp_path: Path, reference_image: ImageRecord,
                                                         transport: str) -> None:
    out = tmp_path / "cell"
    turn = ["exec", "--profile", str(PROFILE), "--case", "escalation", "--transport", transport]
    done = run(*turn, "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    recorded = json.loads((out / "result.json").read_text(encoding="utf-8"))
    # the hostile text got through as the CLI's data: it is the turn's reason, and the turn is graded as usual
    assert recorded["turn"]["status"] == "escalated" and "\x1b]8;;https://evil.invalid/" in recorded["turn"]["reason"]
    assert recorded["grade"]["status"] == "pass"

    # to a pipe: not one ESC (or any other control byte the CLI sent), and the text shown as escapes
    for name, stream in (("exec stdout", done.stdout), ("exec stderr", done.stderr)):
        assert b"\x1b" not in stream and not [s for s in OBEYED if s in stream], name
    summary = done.stdout.decode("utf-8")  # strict: nothing unencodable either
    assert SHOWN in summary and "\\u202eevil\\u202c" in summary and "all good\\x0doverwritten" in summary
    assert f"raw {SHOWN}" in summary  # the raw stdout line, in the transcript tail
    shown = run("show", str(out), cwd=tmp_path)
    assert shown.returncode == 0 and b"\x1b" not in shown.stdout + shown.stderr
    (reason,) = [line for line in shown.stdout.decode("utf-8").splitlines() if line.startswith("reason ")]
    assert SHOWN in reason

    # --json: the same values for a parser, no raw control character for a reader
    as_json = run("show", str(out), "--json", cwd=tmp_path)
    assert as_json.returncode == 0 and not [s for s in OBEYED if s in as_json.stdout] and b"\x1b" not in as_json.stdout
    assert json.loads(as_json.stdout)["verdict"]["reason"] == recorded["turn"]["reason"]

    # to a terminal: rich's own colours, none of the CLI's sequences
    for args in (["show", str(out)], [*turn, "--out", str(tmp_path / "again")]):
        screen = in_a_terminal(*args, cwd=tmp_path)
        assert b"\\x1b]8;;https://evil.invalid/\\x07click me" in screen, screen[-3000:]
        assert not [s for s in OBEYED if s in screen], (args[0], [s for s in OBEYED if s in screen])
