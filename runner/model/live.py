"""Live mode: forward the CLI's model requests to the vendor API with the host's credential.

**URL rule** (:func:`upstream_url`). The CLI's base URL points at the loopback listener and its
request path is what the dialect appends (``/v1/responses``, ``/v1/chat/completions``,
``/v1/messages``, ``/v1beta/models/<m>:streamGenerateContent``). If ``LiveModel.base_url`` ends in a
version segment (``v1``, ``v1beta``, ``v4``: ``v`` + digits + optional letters/digits) and the
request path starts with one, the request's version segment is replaced by the base URL's (so
``https://api.openai.com/v1`` + ``/v1/responses`` -> ``https://api.openai.com/v1/responses`` and
``https://open.bigmodel.cn/api/paas/v4`` + ``/v1/chat/completions`` -> ``.../v4/chat/completions``);
otherwise the whole request path is appended to the base URL's path
(``https://api.anthropic.com`` + ``/v1/messages`` -> ``https://api.anthropic.com/v1/messages``).

What reaches this module has passed :mod:`runner.model.live_policy`: a model call of the column's dialect, with
only the query parameters and headers that call needs; the query is forwarded as the policy left it (a ``key``
parameter, Google's query-string API key, would be dropped here too: the credential travels only in the header
below).

**Headers.** The policy's headers are forwarded minus hop-by-hop headers, ``host``, ``content-length``
(recomputed), every credential header (``authorization``, ``x-api-key``, ``x-goog-api-key``, ``api-key``: the CLI
holds only the placeholder key) and ``accept-encoding`` (set to ``identity`` so the logged copy of the answer is
readable). The host credential (the first set variable of ``LiveModel.credentials``, read once at construction)
goes in the header ``LiveModel.auth`` names: ``bearer`` -> ``Authorization: Bearer <key>``, ``x-api-key``,
``x-goog-api-key``. The body is forwarded byte for byte.

**Answer.** Status, headers (minus hop-by-hop and ``content-length``) and body chunks are streamed
back unchanged as they arrive; an upstream that cannot be reached gives a 502.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx2

from runner.model.types import LiveModel, resolve_credential

VERSION_SEGMENT = re.compile(r"^v\d+[a-z0-9]*$")
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
     "transfer-encoding", "upgrade", "host", "content-length"}
)
CLIENT_CREDENTIAL_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key", "api-key"})
CONNECT_TIMEOUT = 30.0
READ_TIMEOUT = 600.0  # a model may think quietly for a long time between events


def upstream_url(base_url: str, path: str, query: str = "") -> str:
    """The vendor URL for a request the CLI sent to ``path?query`` (the rule in the module docstring)."""
    base = urlsplit(base_url)
    base_path = base.path.rstrip("/")
    request_path = "/" + path.lstrip("/")
    first, _, rest = request_path[1:].partition("/")
    last = base_path.rsplit("/", 1)[-1]
    if VERSION_SEGMENT.match(last) and VERSION_SEGMENT.match(first.split(":", 1)[0]):
        joined = base_path + ("/" + rest if rest else "")
    else:
        joined = base_path + request_path
    params = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "key"]
    return urlunsplit((base.scheme, base.netloc, joined, urlencode(params), ""))


def auth_header(auth: str, credential: str) -> tuple[str, str]:
    if auth == "bearer":
        return "authorization", f"Bearer {credential}"
    return auth, credential


def forward_request_headers(
    headers: Iterable[tuple[str, str]], credential_header: tuple[str, str]
) -> list[tuple[str, str]]:
    out = [
        (name, value)
        for name, value in headers
        if name.lower() not in HOP_BY_HOP | CLIENT_CREDENTIAL_HEADERS | {"accept-encoding"}
    ]
    return [*out, ("accept-encoding", "identity"), credential_header]


def forward_response_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(n, v) for n, v in headers if n.lower() not in HOP_BY_HOP]


class LiveForwarder:
    """Holds the host credential and one HTTP client for the endpoint's lifetime."""

    def __init__(self, live: LiveModel, environ: Mapping[str, str]) -> None:
        self.live = live
        self.credential_var, credential = resolve_credential(live, environ)
        self._credential = credential
        self._header = auth_header(live.auth, credential)
        self.client = httpx2.AsyncClient(
            timeout=httpx2.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT), follow_redirects=False
        )

    @property
    def secrets(self) -> dict[str, str]:
        """What the exchange log must never contain, by variable name."""
        return {self.credential_var: self._credential}

    def url_for(self, path: str, query: str) -> str:
        return upstream_url(self.live.base_url, path, query)

    async def open(
        self, method: str, path: str, query: str, headers: Iterable[tuple[str, str]], body: bytes
    ) -> httpx2.Response:
        """Send the request; the answer's body is left to stream (close it with ``aclose``)."""
        request = self.client.build_request(
            method, self.url_for(path, query), headers=forward_request_headers(headers, self._header), content=body
        )
        return await self.client.send(request, stream=True)

    async def aclose(self) -> None:
        await self.client.aclose()
