"""The default :data:`~runner.sandbox.interface.SandboxFactory`: one hardened container per turn, over the
transport the command asked for, once the wiring probe says the engine and the image can carry it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from runner.engine import EngineClient
from runner.sandbox.container import SandboxedProcess
from runner.sandbox.interface import ContainerSpec, Runtime, Sandbox, Transport, TransportChoice
from runner.sandbox.probe import MountsNotVisible, WiringProbe
from runner.sandbox.stream_transport import StreamSandboxedProcess

KINDS: dict[Transport, type[SandboxedProcess]] = {
    Transport.MOUNT: SandboxedProcess,
    Transport.STREAM: StreamSandboxedProcess,
}


class DockerSandboxes:
    """Makes one turn's :class:`~runner.sandbox.interface.Sandbox` on ``client``, over ``transport``.

    ``mount`` (the turn dir bind-mounted) runs once the engine and the image are known to carry a turn
    (the wiring probe, :mod:`runner.sandbox.probe`: it raises a named
    :class:`~runner.sandbox.probe.WiringError` with the fix, so a turn that could not work is never graded).
    ``stream`` needs only the engine API (:mod:`runner.sandbox.stream_transport`). ``auto`` is ``mount`` where the
    probe finds the mount reaching the container, else ``stream``; once ``probe`` found it does not, ``auto``
    goes straight to ``stream`` for that engine and image. The sandbox's ``transport`` says which ran.
    ``probe`` is the backend's (:class:`~runner.sandbox.docker_backend.DockerBackend` hands down its own, so that
    every turn of a command shares what it learnt; a fresh one when None); its passes are kept in ``probe_cache``'s
    ``probes/`` too (runner's cache directory, from the edge), when one is handed in.
    ``runtime`` is the OCI runtime every container it makes runs under (the probe's included): an engine
    without it is a :class:`~runner.sandbox.probe.RuntimeMissing` before any container.

    Calling it blocks (it may run the probe): call it from a worker thread.
    """

    def __init__(self, client: EngineClient, transport: TransportChoice = TransportChoice.AUTO,
                 probe: WiringProbe | None = None, runtime: Runtime = Runtime.RUNC,
                 probe_cache: Path | None = None) -> None:
        self.client = client
        self.choice = transport  # parsed at the edge (runner.turn.settings.parse_transport)
        self.probe = probe if probe is not None else WiringProbe()
        self.runtime = runtime
        self.probe_cache = probe_cache

    def __call__(self, spec: ContainerSpec) -> Sandbox:
        spec = dataclasses.replace(spec, runtime=self.runtime)
        return KINDS[self.transport_for(spec)](self.client, spec)

    def transport_for(self, spec: ContainerSpec) -> Transport:
        """The transport ``spec``'s turn runs over, probed; a :class:`~runner.sandbox.probe.WiringError` when
        none that was asked for can carry it."""
        if self.choice is TransportChoice.STREAM or (
            self.choice is TransportChoice.AUTO
            and self.probe.mount_not_visible(self.client.address, spec.image_id, spec.runtime)
        ):
            self.probe.check(self.client, spec, Transport.STREAM, cache=self.probe_cache)
            return Transport.STREAM
        try:
            self.probe.check(self.client, spec, Transport.MOUNT, cache=self.probe_cache)
        except MountsNotVisible:
            if self.choice is TransportChoice.MOUNT:
                raise
            self.probe.check(self.client, spec, Transport.STREAM, cache=self.probe_cache)
            return Transport.STREAM
        return Transport.MOUNT
