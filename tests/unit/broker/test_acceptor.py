"""The acceptor's pause when accept() runs out of descriptors (issue 14, finding 5)."""

from __future__ import annotations

import asyncio
import errno
import time

import uvloop

from broker.net.acceptor import Acceptor
from broker.net.limits import ConnectionQuotas
from broker.net.processor import plaintext


def test_a_resume_that_comes_early_waits_for_the_pause_to_pass() -> None:
    """A pause's timer may fire before the pause has passed by the monotonic clock (the loop's
    clock is cached); accepting must still resume, not stay paused for good."""

    async def scenario() -> tuple[bool, bool]:
        loop = asyncio.get_running_loop()
        quotas = ConnectionQuotas(max_connections=100, max_connections_per_ip=100)
        acceptor = Acceptor(loop, quotas=quotas)
        acceptor.bind(
            "PLAINTEXT", "127.0.0.1", 0, security_protocol="PLAINTEXT", make_transport=plaintext
        )
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
