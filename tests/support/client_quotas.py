"""Setting and reading client quotas in tests, with AlterClientQuotas and DescribeClientQuotas
made by our protocol codecs (the Python clients have no quota admin API; the property tests hold
the codecs to Kafka's own schemas)."""

from __future__ import annotations

from protocol.error_codes import ErrorCode
from protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    QuotaAlteration,
    QuotaAlterationOp,
    QuotaEntityComponent,
)
from protocol.messages.describe_client_quotas import (
    MATCH_EXACT,
    DescribeClientQuotasRequest,
    QuotaFilterComponent,
)
from tests.support.raw_client import call, connect


def set_quota(
    bootstrap: str, entity: list[tuple[str, str | None]], key: str, value: float | None
) -> None:
    """Sets the entity's quota ``key`` to ``value`` (None removes it)."""
    sock = connect(bootstrap)
    request = AlterClientQuotasRequest(
        entries=[
            QuotaAlteration(
                entity=[QuotaEntityComponent(entity_type=t, entity_name=n) for t, n in entity],
                ops=[
                    QuotaAlterationOp(
                        key=key, value=0.0 if value is None else value, remove=value is None
                    )
                ],
            )
        ],
        validate_only=False,
    )
    answer = call(sock, request, 1)
    sock.close()
    assert [e.error_code for e in answer.entries] == [ErrorCode.NONE], answer


def describe_quota(bootstrap: str, entity_type: str, name: str) -> list[tuple[str, str, float]]:
    """(entity name, key, value) of every quota of the entity, as DescribeClientQuotas says."""
    sock = connect(bootstrap)
    described = call(
        sock,
        DescribeClientQuotasRequest(
            components=[
                QuotaFilterComponent(entity_type=entity_type, match_type=MATCH_EXACT, match=name)
            ],
            strict=False,
        ),
        1,
    )
    sock.close()
    return [(e.entity[0].entity_name, v.key, v.value) for e in described.entries for v in e.values]
