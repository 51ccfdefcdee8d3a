"""No request blocks a processor loop (issue 19): in cluster mode a Metadata request that
auto-creates a topic, and a FindCoordinator that creates ``__consumer_offsets``, wait for
ZooKeeper; with ZooKeeper stalled (a proxy that stops forwarding), a broker with one processor
thread still answers another connection's ApiVersions and Metadata while those requests wait,
and answers them once ZooKeeper is back."""

from __future__ import annotations

import select
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.headers import decode_response, encode_request
from protocol.messages.find_coordinator import FindCoordinatorRequest
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.integration.broker_process import BrokerProcess
from tests.support.gated_proxy import GatedProxy
from tests.support.raw_client import api_versions, call, connect, read_frame
from tests.support.waiting import wait_for
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def slow_zookeeper(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> Iterator[tuple[BrokerProcess, GatedProxy]]:
    proxy = GatedProxy(zookeeper.host, zookeeper.port)
    chroot = zookeeper.chroot_connect().split("/", 1)[1]
    proc = BrokerProcess(
        tmp_path / "data",
        {
            "zookeeper.connect": f"127.0.0.1:{proxy.port}/{chroot}",
            # a stall shorter than the session: the broker keeps its session and registration
            "zookeeper.session.timeout.ms": "60000",
            "num.network.threads": "1",
            "offsets.topic.replication.factor": "1",
        },
    )
    try:
        proc.start()
        yield proc, proxy
    finally:
        proxy.release()
        proc.stop()
        proxy.stop()


def send(sock: socket.socket, body: object, version: int, correlation_id: int) -> None:
    sock.sendall(encode_request(body, version, correlation_id))  # type: ignore[arg-type]


def answered(sock: socket.socket) -> bool:
    """Whether an answer is waiting on ``sock`` now."""
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


def test_a_stalled_zookeeper_stalls_only_the_requests_that_need_it(
    slow_zookeeper: tuple[BrokerProcess, GatedProxy],
) -> None:
    proc, proxy = slow_zookeeper
    topic = f"slow-{uuid.uuid4().hex[:6]}"
    creating = connect(proc.bootstrap, timeout=120)
    finding = connect(proc.bootstrap, timeout=120)
    bystander = connect(proc.bootstrap, timeout=120)
    try:
        # every connection is on the broker's one processor thread
        assert call(bystander, api_versions(), 3).error_code == 0
        proxy.hold()
        send(
            creating,
            MetadataRequest(
                topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=True
            ),
            9,
            1,
        )
        send(finding, FindCoordinatorRequest(key="a-group", key_type=0), 3, 1)
        # ZooKeeper is stalled: the bystander is answered on the same processor, every time,
        # while both requests that need ZooKeeper wait
        for i in range(5):
            response = call(bystander, api_versions(), 3, correlation_id=10 + i)
            assert response.error_code == 0
            assert call(bystander, MetadataRequest(topics=[]), 9, 20 + i).topics == []
        assert not answered(creating), "the auto-creation was answered with ZooKeeper stalled"
        assert not answered(finding), "FindCoordinator was answered with ZooKeeper stalled"
    finally:
        proxy.release()
    _, metadata = decode_response(3, 9, read_frame(creating))
    assert [(t.name, t.error_code) for t in metadata.topics] == [(topic, 0)]
    _, found = decode_response(10, 3, read_frame(finding))
    assert found.error_code in (0, 15)  # the coordinator, or COORDINATOR_NOT_AVAILABLE (retry)
    wait_for(
        lambda: (
            call(finding, FindCoordinatorRequest(key="a-group", key_type=0), 3, 2).error_code == 0
        ),
        "the group coordinator",
    )
    for sock in (creating, finding, bystander):
        sock.close()
