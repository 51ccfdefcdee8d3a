"""A network thread's life as /health sees it."""

from __future__ import annotations

from broker.net.limits import ConnectionQuotas, RequestMemoryPool
from broker.net.processor import Processor


def test_a_processor_counts_as_stopped_only_once_it_ran_and_ended() -> None:
    """Before it is started a processor is not "stopped" (a broker between building its
    processors and starting them is alive: /health said 503 in that window); after its loop
    ran and the thread ended, it is."""
    proc = Processor(
        0,
        channel=None,  # type: ignore[arg-type]  # no connection ever arrives
        max_request_bytes=1 << 20,
        queued_max_requests=10,
        idle_timeout_ms=0,
        receive_timeout_ms=0,
        memory_pool=RequestMemoryPool(-1),
        quotas=ConnectionQuotas(max_connections=10, max_connections_per_ip=10),
    )
    assert not proc.stopped
    proc.start_and_wait()
    assert proc.is_alive() and not proc.stopped
    proc.stop()
    assert not proc.is_alive() and proc.stopped
