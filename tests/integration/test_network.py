"""The network layer against raw sockets: pipelining, bad frames, ApiVersions fallbacks."""

from __future__ import annotations

import socket
import struct
import time

import pytest
from confluent_kafka.admin import AdminClient

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.headers import RequestHeader, decode_response, encode_request, encode_request_header
from protocol.messages.metadata import MetadataRequest
from tests.support import raw_client
from tests.support.raw_client import api_versions, is_closed, read_frame


def connect(broker) -> socket.socket:
    return raw_client.connect(broker.bootstrap)


def test_pipelined_requests_get_in_order_responses(broker):
    sock = connect(broker)
    requests = []
    for cid in range(200):
        if cid % 2:
            requests.append(encode_request(api_versions(), 3, cid))
        else:
            requests.append(encode_request(MetadataRequest(topics=None), 12, cid))
    sock.sendall(b"".join(requests))
    for cid in range(200):
        frame = read_frame(sock)
        if cid % 2:
            got, body = decode_response(ApiKey.API_VERSIONS, 3, frame)
            assert body.error_code == 0
        else:
            got, body = decode_response(ApiKey.METADATA, 12, frame)
            assert body.brokers[0].node_id == 0
        assert got == cid
    sock.close()


def test_api_versions_unknown_version_answers_v0_error_35(broker):
    sock = connect(broker)
    header = encode_request_header(RequestHeader(ApiKey.API_VERSIONS, 127, 9, "future"), 2)
    sock.sendall(struct.pack(">i", len(header) + 1) + header + b"\x00")
    frame = read_frame(sock)
    correlation, body = decode_response(ApiKey.API_VERSIONS, 0, frame)
    assert correlation == 9 and body.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version) for k in body.api_keys] == [(18, 0)]
    # the connection is still usable: the client retries with a version we know
    sock.sendall(encode_request(api_versions(), 0, 10))
    assert decode_response(ApiKey.API_VERSIONS, 0, read_frame(sock))[1].error_code == 0
    sock.close()


def test_malformed_frame_closes_only_its_connection(broker):
    good = connect(broker)
    bad = connect(broker)
    header = encode_request_header(RequestHeader(ApiKey.METADATA, 12, 1, "x"), 2)
    garbage = header + b"\xff\xff\xff\xff\x7f"  # a compact array claiming ~2**35 entries
    bad.sendall(struct.pack(">i", len(garbage)) + garbage)
    assert is_closed(bad)
    good.sendall(encode_request(api_versions(), 3, 5))
    assert decode_response(ApiKey.API_VERSIONS, 3, read_frame(good))[0] == 5
    good.close()


def test_oversize_frame_closes_only_its_connection(broker):
    good = connect(broker)
    bad = connect(broker)
    bad.sendall(struct.pack(">i", 2**31 - 1) + b"x" * 100)
    assert is_closed(bad)
    good.sendall(encode_request(api_versions(), 3, 6))
    assert decode_response(ApiKey.API_VERSIONS, 3, read_frame(good))[0] == 6
    good.close()


def test_unknown_api_and_garbage_header_close_the_connection(broker):
    for payload in (struct.pack(">hhih", 999, 0, 1, -1), b"\x00\x01"):
        sock = connect(broker)
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        assert is_closed(sock)
    # and the broker is fine
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert admin.list_topics(timeout=10).brokers


def test_idle_connections_are_closed(fresh_broker):
    proc = fresh_broker(**{"connections.max.idle.ms": "300"})
    sock = connect(proc)
    sock.sendall(encode_request(api_versions(), 3, 1))
    read_frame(sock)
    time.sleep(1.5)
    assert is_closed(sock, timeout=5)


def test_busy_port_is_a_clear_startup_error(tmp_path):
    import subprocess
    import sys

    from tests.integration.broker_process import ROOT

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "broker",
                "serve",
                "--override",
                f"listeners=PLAINTEXT://127.0.0.1:{port}",
                "--override",
                f"log.dir={tmp_path}",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        holder.close()
    assert out.returncode == 1
    assert f"cannot listen on PLAINTEXT://127.0.0.1:{port}" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize(
    ("protocol", "reason"),
    [
        ("SSL", "uses TLS but has no key"),
        ("SASL_PLAINTEXT", "GSSAPI are not supported"),
        ("SASL_SSL", "GSSAPI are not supported"),
        ("KERBEROS_PLAINTEXT", "expected one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
    ],
)
def test_a_listener_we_cannot_secure_stops_the_start_up(tmp_path, protocol, reason):
    """Never served as plaintext: a TLS listener without a key, a SASL listener whose mechanisms
    are not available (Kafka's default is GSSAPI), an unknown protocol."""
    import subprocess
    import sys

    from tests.integration.broker_process import ROOT

    out = subprocess.run(
        [
            sys.executable, "-m", "broker", "serve",
            "--override", "listeners=PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0",
            "--override", f"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SECURE:{protocol}",
            "--override", f"log.dir={tmp_path}",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode != 0
    assert reason in out.stderr
    assert "Traceback" not in out.stderr
    assert not list(tmp_path.glob("*/"))  # no log was opened
