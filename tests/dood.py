"""Docker-out-of-Docker for the tests: an image of runner itself, built from the project's offline base, that
talks to the host's engine through the socket mounted in and shares no directory with the host."""

from __future__ import annotations

import io
import site
import tarfile
from pathlib import Path

import docker

from runner.images.bootstrap import ensure_base
from runner.images.shared import ImageSettings

REPO = Path(__file__).resolve().parent.parent
SKIP = {".venv", ".git", "runs", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", "node_modules"}
DOCKERFILE = b"""ARG BASE
FROM ${BASE}
COPY site/ /opt/runner/site/
COPY src/ /opt/runner/src/
COPY cache/ /root/.cache/runner/
COPY certs/ /usr/local/share/ca-certificates/
ENV PYTHONPATH=/opt/runner/src:/opt/runner/site RUNNER_REPO_ROOT=/opt/runner/src
ENTRYPOINT ["python3", "-c", "import sys; from runner.cli import app; sys.argv[0] = 'runner'; app()"]
"""


def _skip(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return None if set(Path(info.name).parts) & SKIP else info


def build_dood_image(client: docker.DockerClient, settings: ImageSettings) -> str:
    """The image id (cached by the engine's layer cache: the same inputs build nothing new)."""
    base = ensure_base(client, settings)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(DOCKERFILE)
        tar.addfile(info, io.BytesIO(DOCKERFILE))
        [packages] = [p for p in site.getsitepackages() if Path(p, "docker").is_dir()]
        tar.add(packages, arcname="site")
        for child in sorted(REPO.iterdir()):
            if child.name not in SKIP:
                tar.add(child, arcname=f"src/{child.name}", filter=_skip)
        # the host's extra CA certificates are an input of every vendor image's recipe (base-cli)
        tar.add("/usr/local/share/ca-certificates", arcname="certs")
        # what finds the host's images by recipe hash without staging again (no network in there): the wheels
        # and each npm stage's digest file, not its tree
        cache = settings.cache_dir
        tar.add(cache / "wheels", arcname="cache/wheels")
        for stage in sorted((cache / "npm").glob("*/.complete")):
            for name in (".complete", "installed.json"):
                if (stage.parent / name).is_file():
                    tar.add(stage.parent / name, arcname=f"cache/npm/{stage.parent.name}/{name}")
            tree = tarfile.TarInfo(f"cache/npm/{stage.parent.name}/npm-global")
            tree.type, tree.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(tree)
    buf.seek(0)
    image, _ = client.images.build(fileobj=buf, custom_context=True, buildargs={"BASE": base}, network_mode="none",
                                   rm=True, labels={"runner.test": "dood"}, tag="runner-test/dood:latest")
    return str(image.id)
