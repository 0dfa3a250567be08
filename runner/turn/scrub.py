"""Keep secrets out of everything a run writes. Pure.

The scrubber knows the values of the host's credential variables (the profile's declared ones, and
any variable whose name says it is a secret) and replaces each occurrence with a marker naming the
variable. Every file the turn writes passes through it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.IGNORECASE)
MIN_SECRET_LENGTH = 8


class Scrubber:
    def __init__(self, environ: Mapping[str, str], declared: Iterable[str] = ()) -> None:
        names = set(declared) | {name for name in environ if SECRET_NAME.search(name)}
        pairs = [(environ[n], n) for n in names if len(environ.get(n, "")) >= MIN_SECRET_LENGTH]
        # longest first, so a secret that contains another is replaced whole
        self._pairs = sorted(pairs, key=lambda p: -len(p[0]))
        self._bytes = [(v.encode(), f"[scrubbed:{n}]".encode()) for v, n in self._pairs]

    @property
    def active(self) -> bool:
        return bool(self._pairs)

    def text(self, value: str) -> str:
        for secret, name in self._pairs:
            value = value.replace(secret, f"[scrubbed:{name}]")
        return value

    def raw(self, value: bytes) -> bytes:
        for secret, marker in self._bytes:
            value = value.replace(secret, marker)
        return value

    def mask(self, value: bytes) -> bytes:
        """Mask secrets without changing the length, for binary files (a SQLite session store, say)."""
        for secret, _ in self._bytes:
            value = value.replace(secret, b"*" * len(secret))
        return value

