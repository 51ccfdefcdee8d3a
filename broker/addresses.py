"""Client addresses as the acceptor sees a peer's: ``ipaddress``'s compressed form. Settings
that name clients by address or host name (``max.connections.per.ip.overrides``, ip quota
entities) resolve names here, as Kafka resolves them with ``InetAddress.getByName``."""

from __future__ import annotations

import ipaddress
import socket


def addresses_of(host: str) -> list[str]:
    """The addresses ``host`` names, compressed: itself if it is an address, else those it
    resolves to now, in the resolver's order. OSError if it does not resolve."""
    try:
        return [ipaddress.ip_address(host).compressed]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except UnicodeError as e:
        raise OSError(f"{host!r} is not a host name: {e}") from None
    out: list[str] = []
    for info in infos:
        try:
            address = ipaddress.ip_address(info[4][0]).compressed
        except ValueError:  # an IPv6 address with a scope id: not a peer's form
            continue
        if address not in out:
            out.append(address)
    if not out:
        raise OSError(f"{host!r} resolves to no address")
    return out
