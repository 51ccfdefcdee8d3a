"""The acceptor's pause when accept() runs out of descriptors (issue 14, finding 5)."""

from __future__ import annotations

import asyncio
import errno
import time

import uvloop

from broker.net.acceptor import Acceptor
from broker.net.limits import ConnectionQuotas
from broker.net.processor import plaintext


def listening(quotas: ConnectionQuotas) -> Acceptor:
    """An acceptor on the running loop with one PLAINTEXT listener on a free port."""
    acceptor = Acceptor(asyncio.get_running_loop(), quotas=quotas)
    acceptor.bind(
        "PLAINTEXT", "127.0.0.1", 0, security_protocol="PLAINTEXT", make_transport=plaintext
    )
    return acceptor


def test_a_resume_that_comes_early_waits_for_the_pause_to_pass() -> None:
    """A pause's timer may fire before the pause has passed by the monotonic clock (the loop's
    clock is cached); accepting must still resume, not stay paused for good."""

    async def scenario() -> tuple[bool, bool]:
        acceptor = listening(ConnectionQuotas(max_connections=100, max_connections_per_ip=100))
        acceptor.start(())
        bound = acceptor.listeners[0]
        acceptor._exhausted(bound, OSError(errno.EMFILE, "Too many open files"))
        paused = not acceptor.watching
        # the timer fires "early": the pause has not passed yet
        acceptor._paused_until = time.monotonic() + 0.2
        acceptor._resume()
        early = acceptor.watching
        await asyncio.sleep(0.5)
        resumed = acceptor.watching
        acceptor.close()
        return paused and not early, resumed

    paused_not_early, resumed = uvloop.run(scenario())
    assert paused_not_early
    assert resumed


def test_a_connection_held_over_the_creation_rate_waits_for_a_slot_too() -> None:
    """A connection held for a connection creation rate is admitted once its wait is over and
    its listener has a slot (Kafka's acceptor waits for both): never over max.connections."""
    import socket

    from broker.net.acceptor import _Held

    adopted: list[object] = []

    class Processor:
        def adopt(self, *args: object) -> None: ...

        def call(self, fn: object, *args: object) -> None:
            adopted.append(args[0])

    async def scenario() -> tuple[bool, bool]:
        quotas = ConnectionQuotas(max_connections=1, max_connections_per_ip=100)
        acceptor = listening(quotas)
        acceptor.start([Processor()])  # type: ignore[list-item]
        bound = acceptor.listeners[0]
        assert quotas.try_open("10.0.0.1", "PLAINTEXT")  # the broker is at max.connections
        a, b = socket.socketpair()
        held = acceptor._held["PLAINTEXT"] = _Held(a, ("10.0.0.2", 1), bound)
        acceptor._wait_over(held)
        kept_while_full = "PLAINTEXT" in acceptor._held and not adopted
        quotas.closed("10.0.0.1", "PLAINTEXT")  # room: on_room resumes the acceptor
        await asyncio.sleep(0.05)
        admitted = adopted == [a] and not acceptor._held
        acceptor.close()
        a.close()
        b.close()
        return kept_while_full, admitted

    kept_while_full, admitted = uvloop.run(scenario())
    assert kept_while_full
    assert admitted
