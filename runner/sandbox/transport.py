"""How the container reaches the turn's files and sockets (``--transport``): standard library only, so the
command line parses it without loading the engine."""

from __future__ import annotations

from enum import StrEnum


class Transport(StrEnum):
    AUTO = "auto"  # mount where the probe finds it reaches the container, else stream
    MOUNT = "mount"  # the turn dir bind-mounted: the engine must share runner's files
    STREAM = "stream"  # the engine API only: archive copies and an exec stream
