"""No network within a block: a socket connecting anywhere but this machine (loopback, a Unix socket)
fails the test, so a framework's telemetry or update check cannot go out unseen."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Iterator


def _local(address: object) -> bool:
    if not isinstance(address, tuple):  # a Unix socket's path
        return True
    host = str(address[0])
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: resolving it is already a request
        return False


@contextlib.contextmanager
def no_network() -> Iterator[list[object]]:
    """Within the block, `connect` to another machine raises `ConnectionRefusedError`; the
    addresses tried are listed in the yielded list (a test asserts it stays empty)."""
    tried: list[object] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: object) -> None:
        if not _local(address):
            tried.append(address)
            raise ConnectionRefusedError(f"no network in this test: {address!r}")
        return real_connect(self, address)  # type: ignore[arg-type]

    def connect_ex(self: socket.socket, address: object) -> int:
        if not _local(address):
            tried.append(address)
            return 111
        return real_connect_ex(self, address)  # type: ignore[arg-type]

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> list:
        if host not in (None, "localhost") and not _local((host, 0)):
            tried.append(host)
            raise socket.gaierror(f"no network in this test: {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
    try:
        yield tried
    finally:
        socket.socket.connect, socket.socket.connect_ex = real_connect, real_connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = real_getaddrinfo  # type: ignore[assignment]
