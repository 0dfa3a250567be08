"""The stream transport's bridge takes every frame as hostile: a channel reaches only a fixed socket, by name.

Any process of the container's uid can write frames into the relay's stdout, so the bridge here is fed the relay's
exec stream (Docker's multiplexed framing, frames inside) from the test's end of a socket pair, forged frames
included: names that climb out of the turn dir or are absolute, unknown kinds, a live channel opened again, more
channels than allowed, and a frame longer than any relay sends. And what goes the other way, the turn dir's archive,
is read as the CLI's files are. The same through the real box, forged by a CLI
writing into /proc/<relay>/fd/1: tests/integration/test_hostile_files.py.
"""

from __future__ import annotations

import io
import socket
import struct
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.sandbox.ownership import ContainerUser
from runner.sandbox.stream_transport import (
    CLOSE,
    DATA,
    EOF,
    HEADER,
    MAX_CHANNELS,
    MAX_FRAME,
    OPEN,
    Bridge,
    turn_archive,
)

pytestmark = pytest.mark.timeout(30)


class Ends:
    """The test's end of the relay's stream, the bridge on the other, and the sockets it may and may not reach."""

    def __init__(self, root: Path) -> None:
        self.turn_dir = root / "turn"
        self.turn_dir.mkdir()
        (root / "outside").mkdir()
        self.mcp = self._listen(self.turn_dir / "mcp.sock")
        self.outside = self._listen(root / "outside" / "evil.sock")
        self.relay, theirs = socket.socketpair()
        self.relay.settimeout(5)
        self.bridge = Bridge(theirs, self.turn_dir)
        self._got = b""

    @staticmethod
    def _listen(path: Path) -> socket.socket:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        listener.listen(8)
        listener.settimeout(5)
        return listener

    def frame(self, kind: int, channel: int, payload: bytes = b"", *, length: int | None = None) -> None:
        """One frame on the relay's stdout, in Docker's multiplexed stream (stream 1, its length)."""
        body = HEADER.pack(kind, channel, len(payload) if length is None else length) + payload
        self.relay.sendall(struct.pack(">BxxxL", 1, len(body)) + body)

    def answer(self) -> tuple[int, int, bytes]:
        """The next frame the bridge sends back to the relay."""
        while len(self._got) < HEADER.size:
            self._got += self.relay.recv(65536)
        kind, channel, length = HEADER.unpack_from(self._got)
        while len(self._got) < HEADER.size + length:
            self._got += self.relay.recv(65536)
        payload = self._got[HEADER.size:HEADER.size + length]
        self._got = self._got[HEADER.size + length:]
        return kind, channel, payload

    def nobody_outside(self) -> None:
        self.outside.setblocking(False)
        with pytest.raises(BlockingIOError):
            self.outside.accept()

    def close(self) -> None:
        self.bridge.close()
        for sock in (self.relay, self.mcp, self.outside):
            sock.close()


@pytest.fixture
def ends() -> Iterator[Ends]:
    with tempfile.TemporaryDirectory(prefix="rb-", dir="/tmp") as root:  # short: a unix socket path has 107 bytes
        made = Ends(Path(root))
        try:
            yield made
        finally:
            made.close()


def test_the_mcp_channel_reaches_the_turns_socket_and_carries_bytes_both_ways(ends: Ends) -> None:
    ends.frame(OPEN, 1, b"mcp")
    server, _ = ends.mcp.accept()
    ends.frame(DATA, 1, b"hello")
    assert server.recv(100) == b"hello"
    server.sendall(b"back")
    assert ends.answer() == (DATA, 1, b"back")
    ends.frame(EOF, 1)
    assert server.recv(100) == b""
    server.close()
    assert ends.answer() == (EOF, 1, b"")


@pytest.mark.parametrize("name", ["../outside/evil", "{root}/outside/evil", "mcp/../../outside/evil", "",
                                  "mcp\x00", "MCP", "model/../mcp"])
def test_a_channel_named_anything_but_a_fixed_name_is_closed_and_reaches_nothing(ends: Ends, name: str) -> None:
    forged = name.replace("{root}", str(ends.turn_dir.parent)).encode()
    ends.frame(OPEN, 7, forged)
    ends.frame(DATA, 7, b"PWNED")
    assert ends.answer() == (CLOSE, 7, b"")
    ends.nobody_outside()
    assert any("not one of mcp, model: refused" in r for r in ends.bridge.refused)
    # the bridge goes on: a fixed name still connects
    ends.frame(OPEN, 8, b"mcp")
    server, _ = ends.mcp.accept()
    server.close()


def test_unknown_kinds_are_dropped_and_a_live_channel_is_not_opened_again(ends: Ends) -> None:
    ends.frame(OPEN, 1, b"mcp")
    server, _ = ends.mcp.accept()
    ends.frame(9, 1, b"what")
    ends.frame(OPEN, 1, b"model")  # would take channel 1 over
    ends.frame(DATA, 1, b"still mine")
    assert server.recv(100) == b"still mine"
    assert [r.split(":")[0] for r in ends.bridge.refused] == [
        "a frame of unknown kind 9 on channel 1", "a second OPEN of live channel 1 ('model')"]
    server.close()


def test_no_more_than_the_allowed_channels_are_open_at_once(ends: Ends) -> None:
    servers = []
    for channel in range(1, MAX_CHANNELS + 1):
        ends.frame(OPEN, channel, b"mcp")
        servers.append(ends.mcp.accept()[0])
    ends.frame(OPEN, MAX_CHANNELS + 1, b"mcp")
    assert ends.answer() == (CLOSE, MAX_CHANNELS + 1, b"")
    for server in servers:
        server.close()


def test_a_frame_longer_than_any_relay_sends_closes_the_bridge_without_waiting_for_it(ends: Ends) -> None:
    ends.frame(OPEN, 1, b"mcp")
    server, _ = ends.mcp.accept()
    ends.frame(DATA, 1, b"", length=MAX_FRAME + 1)  # claims more than a megabyte and sends none of it
    server.settimeout(5)
    assert server.recv(100) == b"", "the bridge dropped its connections"
    assert "the stream is not the relay's" in ends.bridge.refused[-1]
    server.close()


def test_the_turn_archive_carries_runners_files_and_follows_no_link(tmp_path: Path) -> None:
    """What goes into the container's volume is read like the CLI's files are: a link in the turn dir (runner's
    own, but in a directory the host shares) is left out, never followed, and so are the sockets."""
    turn_dir = tmp_path / "turn"
    (turn_dir / "home" / ".config").mkdir(parents=True)
    (turn_dir / "script.json").write_text("{}")
    (turn_dir / "home" / ".config" / "cli.json").write_text('{"mcp": true}')
    (tmp_path / "secret").write_bytes(b"host-secret")
    (turn_dir / "home" / "planted").symlink_to(tmp_path / "secret")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(turn_dir / "mcp.sock"))
    try:
        archive = turn_archive(turn_dir, ContainerUser(1003, 1004))
    finally:
        listener.close()
    assert b"host-secret" not in archive
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert tar.extractfile(members["home/.config/cli.json"]).read() == b'{"mcp": true}'  # type: ignore[union-attr]
    assert sorted(members) == [".relay/relay.js", ".relay/relay.py", "home", "home/.config", "home/.config/cli.json",
                               "mcp.sock", "model.sock", "script.json"]
    assert members["mcp.sock"].issym() and members["mcp.sock"].linkname == "/tmp/.runner-relay/mcp.sock"
    assert {(m.uid, m.gid) for m in members.values()} == {(1003, 1004)}, "made for the container's user"
