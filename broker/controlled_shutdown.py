"""A broker's side of controlled shutdown (Kafka's ``KafkaServer.controlledShutdown``).

In cluster mode, with ``controlled.shutdown.enable``, a broker that is asked to stop first sends
ControlledShutdown (its id and broker epoch) to the controller, over a blocking inter-broker
connection (:mod:`broker.interbroker`), while it still serves requests: the controller moves the
leadership of its replicated partitions to other in-sync replicas and takes it out of the ISRs it
follows in, and answers the partitions it still leads. The broker asks again, up to
``controlled.shutdown.max.retries`` requests ``controlled.shutdown.retry.backoff.ms`` apart
(finding the controller again each time), until none remain; then it stops, and says so when it
stops without having moved everything.

Before asking, the broker stops its replica fetchers (what Kafka's controller does with
StopReplica): a broker on its way out must not be counted back into an ISR by a leader it still
fetches from.

Thread-safety: runs on one thread (the shutdown's), blocking.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from broker.interbroker import InterBrokerConnection, InterBrokerUnavailable, inter_broker_endpoint
from broker.security.inter_broker import InterBrokerSecurity
from coordination.metadata.store import MetadataStore
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.controlled_shutdown import ControlledShutdownRequest

log = logging.getLogger(__name__)

#: The newest ControlledShutdown version we send (v3: flexible, with the broker epoch).
CONTROLLED_SHUTDOWN_VERSION = 3


@dataclass(frozen=True, slots=True)
class ControlledShutdownConfig:
    broker_id: int
    max_retries: int = 3
    retry_backoff_ms: int = 5000
    socket_timeout_ms: int = 30000
    inter_broker_listener: str | None = None
    #: TLS and SASL of the inter-broker listener (None: plaintext)
    security: InterBrokerSecurity | None = None


def controlled_shutdown(
    config: ControlledShutdownConfig,
    metadata: MetadataStore,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Asks the controller to move this broker's leadership away; True once it answered that
    none remains, False when every attempt failed (the broker then stops anyway)."""
    log.info("starting controlled shutdown of broker %d", config.broker_id)
    conn: InterBrokerConnection | None = None
    remaining_retries = config.max_retries
    try:
        while remaining_retries > 0:
            remaining_retries -= 1
            view = metadata.view
            controller = view.brokers.get(view.controller_id)
            if controller is None:
                log.info("controlled shutdown: no controller is known")
            else:
                ep = inter_broker_endpoint(controller, config.inter_broker_listener)
                if conn is None or conn.node_id != controller.broker_id or not conn.connected:
                    if conn is not None:
                        conn.close()
                    conn = InterBrokerConnection(
                        controller.broker_id,
                        ep.host,
                        ep.port,
                        client_id=f"broker-{config.broker_id}-controlled-shutdown",
                        timeout_s=config.socket_timeout_ms / 1000,
                        max_response_bytes=100 * 1024 * 1024,
                        security=config.security,
                    )
                try:
                    conn.connect()
                    version = conn.version_for(
                        ApiKey.CONTROLLED_SHUTDOWN, CONTROLLED_SHUTDOWN_VERSION
                    )
                    response = conn.request(
                        ControlledShutdownRequest(
                            broker_id=config.broker_id, broker_epoch=metadata.broker_epoch
                        ),
                        version,
                    )
                except InterBrokerUnavailable as e:
                    log.warning(
                        "error during controlled shutdown (the controller may have taken longer "
                        "than controller.socket.timeout.ms): %s",
                        e,
                    )
                    conn.close()
                else:
                    if response.error_code != ErrorCode.NONE:
                        log.info(
                            "controlled shutdown request returned error %s",
                            ErrorCode.of(response.error_code).name,
                        )
                    elif not response.remaining_partitions:
                        log.info("controlled shutdown of broker %d succeeded", config.broker_id)
                        return True
                    else:
                        log.info(
                            "controlled shutdown request returned with %d partition(s) remaining "
                            "to move: %s",
                            len(response.remaining_partitions),
                            ", ".join(
                                f"{p.topic_name}-{p.partition_index}"
                                for p in response.remaining_partitions[:20]
                            ),
                        )
            if remaining_retries > 0:
                sleep(config.retry_backoff_ms / 1000)
                log.info("retrying controlled shutdown (%d retries remaining)", remaining_retries)
    finally:
        if conn is not None:
            conn.close()
    log.warning(
        "proceeding to do an unclean shutdown as all the controlled shutdown attempts failed"
    )
    return False
