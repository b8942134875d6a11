"""Where the app's requests may go, and which of them carry the EHR's access token.

Two rules, each enforced in one place so that no call site can forget them:

- ``EhrBearerAuth`` attaches the access token only to a request whose URL lies under the launch's
  FHIR base (same scheme, host, port and path prefix). A reference, attachment or paging link
  that points anywhere else is never sent the token.
- ``GuardedTransport`` refuses to connect to a loopback, private, link-local or otherwise
  non-public address unless the destination's origin is one the operator configured (an EHR on
  the hospital's network, the sandbox on loopback). So no URL an EHR or a note hands us can turn
  the app into a tool for reaching the machine's own network.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import ssl
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from pathlib import Path
from urllib.parse import unquote, urlparse

import httpx

from smartapp.core.registrations import origin_of

TokenGetter = Callable[[bool], Awaitable[str | None]]
# A dot, slash or backslash written as a percent escape: no FHIR id or search path needs one, and
# a server that decodes it would resolve ``%2e%2e`` as ``..`` and leave the FHIR base.
ENCODED_SEPARATOR = re.compile(r"%(2e|2f|5c)", re.IGNORECASE)


class BlockedDestinationError(httpx.TransportError):
    """A request to a non-public address outside the configured origins; nothing was sent."""


def under_base(url: str, base: str) -> bool:
    """Whether ``url`` is ``base`` or below it: same origin, and the path within base's path."""
    if origin_of(url) != origin_of(base):
        return False
    path = urlparse(url).path
    if ENCODED_SEPARATOR.search(path) or "\\" in path:
        return False
    if any(segment in {".", ".."} for segment in unquote(path).split("/")):
        return False
    prefix = urlparse(base).path.rstrip("/")
    return path == prefix or path.startswith(f"{prefix}/")


def is_public_address(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


class EhrBearerAuth(httpx.Auth):
    """The EHR's bearer token, on requests under its FHIR base only; one refresh on a 401."""

    def __init__(self, base: str, token: TokenGetter) -> None:
        self.base = base
        self.token = token

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        if not under_base(str(request.url), self.base):
            yield request
            return
        token = await self.token(False)
        if token:
            request.headers["authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            fresh = await self.token(True)
            if fresh:
                request.headers["authorization"] = f"Bearer {fresh}"
                yield request


class GuardedTransport(httpx.AsyncBaseTransport):
    """An HTTP transport that connects to non-public addresses only for trusted origins."""

    def __init__(self, trusted_origins: Iterable[str], inner: httpx.AsyncBaseTransport) -> None:
        self.trusted = {origin_of(origin) for origin in trusted_origins}
        self.inner = inner

    async def _check(self, url: httpx.URL) -> None:
        if origin_of(str(url)) in self.trusted:
            return
        host = url.host
        try:
            addresses = [str(ipaddress.ip_address(host))]
        except ValueError:
            try:
                found = await asyncio.get_running_loop().getaddrinfo(
                    host, url.port or 443, type=socket.SOCK_STREAM
                )
            except OSError as error:
                raise BlockedDestinationError(f"cannot resolve {host}") from error
            addresses = [str(item[4][0]) for item in found]
        if not addresses or not all(is_public_address(address) for address in addresses):
            raise BlockedDestinationError(
                f"refused to connect to {url.scheme}://{host}: not a public address, and not "
                "a configured EHR"
            )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await self._check(request.url)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def guarded_client(
    trusted_origins: Iterable[str], timeout_s: float, ca_bundle: Path | None = None
) -> httpx.AsyncClient:
    """The app's one outgoing HTTP client: no redirects followed, non-public addresses guarded,
    certificates checked against the system's authorities (or the hospital's, ``ca_bundle``)."""
    verify: ssl.SSLContext | bool = (
        ssl.create_default_context(cafile=str(ca_bundle)) if ca_bundle is not None else True
    )
    transport = GuardedTransport(trusted_origins, httpx.AsyncHTTPTransport(verify=verify))
    return httpx.AsyncClient(timeout=timeout_s, transport=transport, follow_redirects=False)
