"""What live mode forwards to the vendor with the host's key: the model calls of the column's dialect, nothing else.

The host's key opens more than a model (files, batches, fine-tunes, an organisation's admin keys, another
organisation or project than the key's default), and the CLI in the box is the party the box exists to contain.
So live mode is not a proxy: each request the CLI sends is held against the allowlist of its column's dialect
(:data:`POLICIES`, the one place it is written; what it was measured from is in ``docs/live-mode.md``) and is

- **forwarded** when its method and path are one of the dialect's model calls, with only the query parameters
  that route names (with the values it names) and only the headers a model call needs (:data:`COMMON_HEADERS`
  and the dialect's own; an ``anthropic-beta`` header keeps only the betas of :data:`ANTHROPIC_BETAS`). What is
  left out is named in the exchange log (``upstream.dropped``), never its value;
- **answered by runner** (``local``) when it is a side request the CLI may need answered but the vendor need not
  see: Claude Code's preconnect (``HEAD``/``GET /api/hello``, which the endpoint answers 200 in every mode before
  any handler, :func:`runner.model.replay.is_preconnect`) and OpenAI's model list (``GET /v1/models``, answered
  with the column's live model alone: the vendor's list would name the account's fine-tunes);
- **refused** otherwise: answered ``403`` by runner in the dialect's error shape, logged ``ended: refused`` with
  the reason, and never sent upstream.

A path is matched whole, after the server decoded it (so ``..``, ``%2F`` and a second ``/`` match nothing), and
the dialect is the column's (``model.dialect``), never the one the path looks like: a Claude Code column cannot
reach ``/v1/chat/completions`` through the Anthropic key. :func:`check_base_url` holds the other half: a live
base URL that is not loopback must be ``https``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit

from runner.core.outcomes import JsonValue
from runner.model.settings import Dialect
from runner.model.types import ModelEndpointError

ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES, GEMINI = (
    Dialect.ANTHROPIC_MESSAGES.value, Dialect.OPENAI_CHAT.value, Dialect.OPENAI_RESPONSES.value, Dialect.GEMINI.value
)

# what every model call may carry: the body's type and encoding, what the client accepts, who the client is
COMMON_HEADERS = frozenset({"content-type", "content-encoding", "accept", "user-agent"})
# what the forwarder sets itself (runner.model.live): the connection's own headers, the encoding it accepts, and the
# credential, which is the host's; neither forwarded from the CLI nor worth naming as dropped
SET_BY_THE_FORWARDER = frozenset({
    "host", "content-length", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
    "upgrade", "accept-encoding", "authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key",
})
# The Anthropic betas the measured columns' model calls turn on, as their anthropic-beta header names them; a beta
# passes when its feature (the name before its date) is one of these, so a new date of the same feature still
# passes. Left out on purpose: whatever reaches the account's resources from a model call (``files-api``,
# ``skills``, ``mcp-client``, ``code-execution``, containers, batches).
MEASURED_BETAS = (
    "claude-code-20250219", "interleaved-thinking-2025-05-14", "context-management-2025-06-27",
    "per-turn-control-2026-07-01", "mid-conversation-tool-changes-2026-07-01", "thinking-token-count-2026-05-13",
    "effort-2025-11-24", "thinking-display-updates-2026-08-18",
)
BETA_DATE = re.compile(r"^(?P<feature>.+?)-?\d{4}-?\d{2}-?\d{2}$")
MODEL_ID = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"  # a model id in a path: no '/', never '.' or '..'
REFUSED_STATUS = 403


class LiveBaseUrlError(ModelEndpointError):
    """A live base URL that would carry the host's key in the clear (or is no URL at all)."""


@dataclass(frozen=True)
class Route:
    """One request a dialect's columns send: ``methods`` on ``path`` (``{model}``: a model id), matched whole;
    ``query``: the parameters forwarded, each with the values it may take; ``local``: answered by runner, never
    forwarded; ``what``: what it is, in a word."""

    what: str
    methods: frozenset[str]
    path: str
    query: Mapping[str, frozenset[str]] = field(default_factory=dict)
    local: bool = False
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        literal = [re.escape(piece) for piece in self.path.split("{model}")]
        object.__setattr__(self, "pattern", re.compile(MODEL_ID.join(literal)))

    def matches(self, method: str, path: str) -> bool:
        return method in self.methods and self.pattern.fullmatch(path) is not None

    @property
    def shown(self) -> str:
        query = "&".join(f"{k}={'|'.join(sorted(v))}" for k, v in sorted(self.query.items()))
        return f"{'/'.join(sorted(self.methods))} {self.path}" + (f"?{query}" if query else "")


@dataclass(frozen=True)
class DialectPolicy:
    """What live mode forwards for one dialect: its routes (first match decides) and the headers beyond
    :data:`COMMON_HEADERS` its model calls carry."""

    dialect: str
    routes: tuple[Route, ...]
    headers: frozenset[str] = frozenset()

    @property
    def forwarded_headers(self) -> frozenset[str]:
        return COMMON_HEADERS | self.headers


def _route(what: str, methods: Iterable[str], path: str, *, local: bool = False, **query: Iterable[str]) -> Route:
    return Route(what, frozenset(methods), path, {k: frozenset(v) for k, v in query.items()}, local)


MODEL_CALL = "model call"
TOKEN_COUNT = "token count"
MODEL_LIST = "model list"
PRECONNECT = "preconnect"

POLICIES: Mapping[str, DialectPolicy] = {
    ANTHROPIC: DialectPolicy(ANTHROPIC, (
        _route(MODEL_CALL, ("POST",), "/v1/messages", beta=("true",)),
        _route(TOKEN_COUNT, ("POST",), "/v1/messages/count_tokens", beta=("true",)),
        _route(PRECONNECT, ("HEAD", "GET"), "/api/hello", local=True),
    ), frozenset({"anthropic-version", "anthropic-beta"})),
    OPENAI_CHAT: DialectPolicy(OPENAI_CHAT, (
        _route(MODEL_CALL, ("POST",), "/v1/chat/completions"),
        _route(MODEL_LIST, ("GET",), "/v1/models", local=True),
    )),
    OPENAI_RESPONSES: DialectPolicy(OPENAI_RESPONSES, (
        _route(MODEL_CALL, ("POST",), "/v1/responses"),
    )),
    GEMINI: DialectPolicy(GEMINI, (
        _route(MODEL_CALL, ("POST",), "/v1beta/models/{model}:streamGenerateContent", alt=("sse",)),
        _route(MODEL_CALL, ("POST",), "/v1beta/models/{model}:generateContent"),
        _route(TOKEN_COUNT, ("POST",), "/v1beta/models/{model}:countTokens"),
    )),
}


@dataclass(frozen=True)
class Decision:
    """What live mode does with one request: ``route`` None means refused (``reason`` says why); otherwise the
    query string and headers to forward, and the names of what was left out."""

    route: Route | None
    reason: str = ""
    query: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    dropped_headers: tuple[str, ...] = ()
    dropped_query: tuple[str, ...] = ()

    @property
    def refused(self) -> bool:
        return self.route is None

    @property
    def local(self) -> bool:
        return self.route is not None and self.route.local

    def dropped(self) -> dict[str, JsonValue]:
        """The names left out, for the exchange log (never a value: a dropped header may be a cookie)."""
        out: dict[str, JsonValue] = {}
        if self.dropped_headers:
            out["headers"] = list(self.dropped_headers)
        if self.dropped_query:
            out["query"] = list(self.dropped_query)
        return out


def policy_for(dialect: str) -> DialectPolicy:
    try:
        return POLICIES[dialect]
    except KeyError:
        raise ModelEndpointError(f"live mode has no allowlist for the dialect {dialect!r}") from None


def decide(dialect: str, method: str, path: str, query: str, headers: Iterable[tuple[str, str]]) -> Decision:
    """What live mode does with ``method path?query`` carrying ``headers``, for a column speaking ``dialect``."""
    policy = policy_for(dialect)
    route = next((r for r in policy.routes if r.matches(method, path)), None)
    if route is None:
        forwarded = ", ".join(r.shown for r in policy.routes if not r.local)
        return Decision(None, f"{method} {path} is not a model call of the {dialect} dialect; live mode forwards "
                              f"only {forwarded}")
    kept_query, dropped_query = _filter_query(route, query)
    kept, dropped = _filter_headers(policy, headers)
    return Decision(route, query=kept_query, headers=kept, dropped_headers=dropped, dropped_query=dropped_query)


def _filter_query(route: Route, query: str) -> tuple[str, tuple[str, ...]]:
    kept: list[tuple[str, str]] = []
    dropped: list[tuple[str, str]] = []
    for name, value in parse_qsl(query, keep_blank_values=True):
        (kept if value in route.query.get(name, frozenset()) else dropped).append((name, value))
    return urlencode(kept), tuple(dict.fromkeys(name for name, _ in dropped))


def _filter_headers(
    policy: DialectPolicy, headers: Iterable[tuple[str, str]]
) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    allowed = policy.forwarded_headers
    kept: list[tuple[str, str]] = []
    dropped: list[str] = []
    for name, value in headers:
        key = name.lower()
        if key == "anthropic-beta" and key in allowed:
            betas = [b.strip() for b in value.split(",") if b.strip()]
            passed = [b for b in betas if beta_feature(b) in ANTHROPIC_BETAS]
            dropped += [f"anthropic-beta: {b}" for b in betas if b not in passed]
            if passed:
                kept.append((name, ",".join(passed)))
        elif key in allowed:
            kept.append((name, value))
        elif key not in SET_BY_THE_FORWARDER:
            dropped.append(key)
    return tuple(kept), tuple(dict.fromkeys(dropped))


def beta_feature(beta: str) -> str:
    """An Anthropic beta's feature: its name without the trailing date (``effort-2025-11-24`` -> ``effort``,
    ``claude-code-20250219`` -> ``claude-code``)."""
    match = BETA_DATE.match(beta.strip().lower())
    return match["feature"] if match else beta.strip().lower()


ANTHROPIC_BETAS = frozenset(beta_feature(beta) for beta in MEASURED_BETAS)


def is_loopback(host: str) -> bool:
    """``localhost``, or an address of the loopback network (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_base_url(url: str, setting: str) -> None:
    """:class:`LiveBaseUrlError` naming ``setting`` unless ``url`` is ``https``, or ``http`` to loopback."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError as error:
        raise LiveBaseUrlError(f"{setting} {url!r} is not a URL: {error}") from None
    if parts.scheme not in ("http", "https") or not host:
        raise LiveBaseUrlError(f"{setting} {url!r} is not an http(s) URL with a host")
    if parts.username is not None or parts.password is not None:
        raise LiveBaseUrlError(f"{setting} {url!r} carries a user or password; the host's key is the only credential")
    if parts.scheme == "http" and not is_loopback(host):
        raise LiveBaseUrlError(
            f"{setting} {url!r} is plain http to {host}, which would carry the host's key in the clear; live mode "
            "needs https (plain http only to a loopback address)"
        )
