"""The Docker backend: a :class:`~runner.sandbox.backend.SandboxBackend` on a Docker Engine, or on anything that
speaks its API (Podman's Docker-compatible service included: see docs/engines.md).

It holds the engine client (:mod:`runner.engine`) and the wiring probe (:class:`~runner.sandbox.probe.WiringProbe`)
for the life of the command that connected it, and puts together the pieces of the container's lifecycle:
the image (:func:`runner.images.ensure_image`, its wiring learnt while the build's cost is paid anyway), the turn's
sandbox (:class:`~runner.sandbox.factory.DockerSandboxes`), the run's reaper (:mod:`runner.sandbox.reaper`), the
removal of a run's containers by label (:mod:`runner.sandbox.container`) and ``runner gc``
(:mod:`runner.sandbox.leftovers`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path

from runner.engine import EngineClient, EngineError, connect
from runner.images import ImageRecord, ImageSettings, Progress, ensure_image
from runner.sandbox.container import CELL_LABEL, RUN_LABEL, remove_labelled
from runner.sandbox.factory import DockerSandboxes
from runner.sandbox.interface import ContainerSpec, Runtime, TransportChoice
from runner.sandbox.leftovers import Collected, collect
from runner.sandbox.probe import WiringProbe
from runner.sandbox.reaper import Reaper


class DockerBackend:
    """The sandboxes of the engine ``client`` talks to, with what its wiring probe learns of it (a fresh probe unless
    one is handed in)."""

    def __init__(self, client: EngineClient, wiring: WiringProbe | None = None) -> None:
        self._client = client
        self.wiring = wiring if wiring is not None else WiringProbe()

    @classmethod
    def connect(cls, environ: Mapping[str, str]) -> DockerBackend:
        """The backend of the engine ``environ`` names (``DOCKER_HOST`` and docker-py's TLS variables), once it
        answers: :class:`~runner.engine.EngineUnavailable` with the fix when it does not."""
        return cls(connect(environ))

    @property
    def address(self) -> str:
        return self._client.address

    def check_runtime(self, runtime: Runtime) -> None:
        self.wiring.check_runtime(self._client, runtime)

    def prepare_image(self, image: str, settings: ImageSettings, progress: Progress | None = None) -> ImageRecord:
        """The pinned image ``image`` (built offline when its build key is new), its wiring probed if it was recorded
        anew, so that the image's first turn here starts one container, its own, not a probe before it."""
        return ensure_image(self._client, image, settings, progress,
                            recorded=lambda record: self._learn_wiring(record, settings))

    def _learn_wiring(self, record: ImageRecord, settings: ImageSettings) -> None:
        """Probe a newly recorded image's wiring now. A failure (or an engine that fails the probe's calls) is not the
        build's: the turn that needs the image probes again and names it."""
        labels = {CELL_LABEL: f"image.{record.harness}"}
        with suppress(EngineError):
            spec = ContainerSpec(record.image_id, ["true"], Path(tempfile.gettempdir()), labels)
            self.wiring.check(self._client, spec, cache=settings.cache_dir)

    def sandboxes(self, transport: TransportChoice, runtime: Runtime, probe_cache: Path | None) -> DockerSandboxes:
        return DockerSandboxes(self._client, transport, self.wiring, runtime=runtime, probe_cache=probe_cache)

    def guard_run(self, run_id: str, enabled: bool = True) -> Reaper:
        """The run's reaper, started: a process of its own that removes the run's containers if runner dies."""
        return Reaper(run_id, enabled=enabled).start()

    def reap(self, run_id: str) -> list[str]:
        return remove_labelled(self._client, f"{RUN_LABEL}={run_id}")

    def gc(self, runs: set[str] | None = None) -> Collected:
        return collect(self._client, runs)

    def close(self) -> None:
        self._client.close()
