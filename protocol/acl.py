"""The codes of Kafka's ACL model on the wire: operations, resource types, pattern types and
permissions (``AclOperation``, ``ResourceType``, ``PatternType``, ``AclPermissionType`` in
Kafka's clients). CreateAcls, DescribeAcls and DeleteAcls carry them, and the
``*_authorized_operations`` bit fields of Metadata, DescribeGroups and DescribeCluster are sets
of operation codes (bit ``1 << code``)."""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


#: The name of the one CLUSTER resource (Kafka's ``Resource.CLUSTER_NAME``).
CLUSTER_NAME = "kafka-cluster"


def operations_bits(operations: Iterable[AclOperation]) -> int:
    """An ``*_authorized_operations`` field: one bit per operation code."""
    bits = 0
    for op in operations:
        bits |= 1 << op
    return bits
