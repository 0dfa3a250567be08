"""The sandbox interface keeps the same promises over both transports, on the real engine: output on its two
streams, the exit code, a signal to the process group, the tree the CLI left read back, and nothing left behind.

Only :class:`~runner.sandbox.interface.Sandbox` is used, as the turn uses it; the factory picks the class.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import docker
import docker.errors
import pytest

from runner.images import ImageRecord
from runner.intake.files import copy_tree
from runner.sandbox.container import CELL_LABEL, RUN_LABEL, TURN_MOUNT
from runner.sandbox.docker_backend import DockerBackend
from runner.sandbox.interface import STDERR, STDOUT, ContainerSpec, Runtime, Sandbox, Transport, TransportChoice
from tests.support import gone

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

LEAVES = (
    f"mkdir -p {TURN_MOUNT}/home/session/deep && printf one > {TURN_MOUNT}/home/session/a.txt && "
    f"printf two > {TURN_MOUNT}/home/session/deep/b.txt && echo out && echo err >&2; exit 7"
)


def made(backend: DockerBackend, image: ImageRecord, tmp_path: Path, transport: Transport,
         argv: list[str]) -> Sandbox:
    turn_dir = tmp_path / "turn"
    (turn_dir / "home").mkdir(parents=True)
    os.chmod(turn_dir, 0o755)
    os.chown(turn_dir / "home", 1000, 1000)  # HOME in the turn dir is the CLI's (uid 1000), as prepare makes it
    labels = {RUN_LABEL: f"pytest-sandbox-{uuid.uuid4().hex[:12]}", CELL_LABEL: f"sandbox.{transport}"}
    factory = backend.sandboxes(TransportChoice(transport.value), Runtime.RUNC, probe_cache=None)
    return factory(ContainerSpec(image.image_id, argv, turn_dir, labels))


@pytest.mark.parametrize("transport", list(Transport))
def test_a_sandbox_runs_the_cli_and_hands_back_its_output_exit_and_tree(
    tmp_path: Path, engine: docker.DockerClient, backend: DockerBackend, reference_image: ImageRecord,
    transport: Transport,
) -> None:
    box = made(backend, reference_image, tmp_path, transport, ["sh", "-c", LEAVES])
    output: dict[int, bytearray] = {STDOUT: bytearray(), STDERR: bytearray()}
    try:
        assert box.transport is transport and box.id is None
        box.start()
        box.pump(lambda stream, data: output[stream].extend(data))
        assert box.wait() == 7
        assert (bytes(output[STDOUT]), bytes(output[STDERR])) == (b"out\n", b"err\n")
        with box.read_tree("home/session") as tree:
            assert tree is not None
            copied = copy_tree(tree, tmp_path / "copy")
        found = {name: (tmp_path / "copy" / name).read_text() for name in copied.files}
        assert found == {"a.txt": "one", "deep/b.txt": "two"}
        with box.read_tree("home/nothing-here") as nothing:
            assert nothing is None or copy_tree(nothing, tmp_path / "none").files == []
    finally:
        box.remove()
    assert box.id is not None and gone(engine, box)


@pytest.mark.parametrize("transport", list(Transport))
def test_a_signal_ends_the_cli(
    tmp_path: Path, engine: docker.DockerClient, backend: DockerBackend, reference_image: ImageRecord,
    transport: Transport,
) -> None:
    box = made(backend, reference_image, tmp_path, transport, ["sh", "-c", "echo up; sleep 300 & wait"])
    output = bytearray()

    def on_output(_stream: int, data: bytes) -> None:
        if not output:  # it is up: the deadline's first signal, once
            box.signal("SIGTERM")
        output.extend(data)

    try:
        box.start()
        box.pump(on_output)  # the output ends only when the CLI does: within the test's timeout, not 300 s
        assert box.wait() == 143, "ended by SIGTERM (128 + 15)"
        assert bytes(output) == b"up\n"
    finally:
        box.remove()
    assert gone(engine, box)
