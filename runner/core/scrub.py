"""Keep secrets out of everything a run writes. Pure.

The scrubber knows the values of the host's credential variables (the profile's declared ones, and
any variable whose name says it is a secret) and replaces each occurrence with a marker naming the
variable. Every file the turn writes passes through it.

Besides the value itself it replaces the value's JSON-escaped spellings (a secret holding ``"``,
``\\`` or non-ASCII characters is written differently inside a JSON string, and several files are
JSON text scrubbed after encoding). A text that was cut (a line over the frame limit, a bounded
copy) may end in the first characters of a secret whose rest was dropped; :meth:`Scrubber.cut_text`
and :meth:`Scrubber.cut_raw` replace such a dangling start too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import AnyStr, overload

from runner.core.outcomes import JsonValue

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.IGNORECASE)
MIN_SECRET_LENGTH = 8
MIN_DANGLING = 4


def spellings(secret: str) -> list[str]:
    """The secret and its distinct JSON-escaped forms (UTF-8 kept, and ``\\uXXXX``), longest first."""
    forms = {secret, json.dumps(secret, ensure_ascii=False)[1:-1], json.dumps(secret)[1:-1]}
    return sorted(forms, key=lambda s: (-len(s), s))


class Scrubber:
    def __init__(self, environ: Mapping[str, str], declared: Iterable[str] = ()) -> None:
        names = set(declared) | {name for name in environ if SECRET_NAME.search(name)}
        self._secrets = {environ[n]: n for n in names if len(environ.get(n, "")) >= MIN_SECRET_LENGTH}
        self._build()

    def with_secrets(self, secrets: Mapping[str, str], min_length: int = 1) -> Scrubber:
        """A scrubber that also knows ``secrets`` (name -> value), e.g. the live credential whatever
        its variable is called; values shorter than ``min_length`` are ignored."""
        other = Scrubber({})
        other._secrets = {**self._secrets, **{v: n for n, v in secrets.items() if len(v) >= max(min_length, 1)}}
        other._build()
        return other

    def _build(self) -> None:
        pairs = [(form, name) for value, name in self._secrets.items() for form in spellings(value)]
        # longest first, so a secret that contains another is replaced whole
        self._pairs = sorted(pairs, key=lambda p: -len(p[0]))
        self._bytes = [(v.encode(), f"[scrubbed:{n}]".encode()) for v, n in self._pairs]

    @property
    def active(self) -> bool:
        return bool(self._pairs)

    def markers(self) -> list[tuple[str, str]]:
        """Every spelling of every secret with its marker, longest first."""
        return [(secret, f"[scrubbed:{name}]") for secret, name in self._pairs]

    def text(self, value: str) -> str:
        for secret, name in self._pairs:
            value = value.replace(secret, f"[scrubbed:{name}]")
        return value

    @overload
    def value(self, value: None) -> None: ...
    @overload
    def value(self, value: str) -> str: ...
    @overload
    def value(self, value: dict[str, JsonValue]) -> dict[str, JsonValue]: ...
    @overload
    def value(self, value: list[dict[str, JsonValue]]) -> list[dict[str, JsonValue]]: ...
    @overload
    def value(self, value: JsonValue) -> JsonValue: ...
    def value(self, value: JsonValue | list[dict[str, JsonValue]]) -> JsonValue | list[dict[str, JsonValue]]:
        """A JSON value of the same shape with every string in it (keys too) scrubbed: for what is built in memory
        from what the CLI or the model said (a result, a record) before it is printed or written."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
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

    def cut_text(self, value: str) -> str:
        """:meth:`text` for a text that was cut short: a dangling start of a secret at its end goes too."""
        return _drop_dangling(self.text(value), [(s, f"[scrubbed:{n}]") for s, n in self._pairs])

    def cut_raw(self, value: bytes) -> bytes:
        """:meth:`raw` for bytes that were cut short (see :meth:`cut_text`)."""
        return _drop_dangling(self.raw(value), self._bytes)


def _drop_dangling(value: AnyStr, pairs: list[tuple[AnyStr, AnyStr]]) -> AnyStr:
    """``value`` with the longest start of a secret (of :data:`MIN_DANGLING` or more characters, short
    of the whole) that ends it replaced by that secret's marker. Shorter starts give nothing away and
    are left, so a cut line that merely ends the way a secret begins is not marked."""
    best: tuple[int, AnyStr] | None = None
    for secret, marker in pairs:
        for size in range(min(len(secret) - 1, len(value)), MIN_DANGLING - 1, -1):
            if value.endswith(secret[:size]):
                if best is None or size > len(value) - best[0]:
                    best = (len(value) - size, marker)
                break
    return value if best is None else value[: best[0]] + best[1]
