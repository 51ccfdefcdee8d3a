"""SaslHandshake (key 17): pick a SASL mechanism; the broker lists those it enables.

After a v0 handshake the SASL tokens follow as raw size-prefixed frames; after v1 they travel in
SaslAuthenticate requests (KIP-152). Never flexible: Kafka cannot easily bump the version because
clients up to 2.4 negotiate it wrongly (KAFKA-9577).
"""

from protocol.api_keys import ApiKey
from protocol.schema import INT16, STRING, array, f, message

SaslHandshakeRequest = message(
    "SaslHandshakeRequest",
    api_key=ApiKey.SASL_HANDSHAKE,
    kind="request",
    valid="0-1",
    flexible="none",
    fields=[
        f("mechanism", STRING),
    ],
)

SaslHandshakeResponse = message(
    "SaslHandshakeResponse",
    api_key=ApiKey.SASL_HANDSHAKE,
    kind="response",
    valid="0-1",
    flexible="none",
    fields=[
        f("error_code", INT16),
        f("mechanisms", array(STRING)),
    ],
)
