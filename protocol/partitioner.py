"""Kafka's default partitioner for keyed records: murmur2 of the key, made positive, modulo the
partition count (the Java producer's ``BuiltInPartitioner.partitionForKey``). Clients that put
records where Kafka's own producer would (the Spark sink, the ``odradek topic produce`` command)
share it."""

from __future__ import annotations

import struct


def murmur2(data: bytes) -> int:
    """The 32-bit murmur2 hash Kafka's default partitioner uses (seed 0x9747b28c), as a signed
    int like Java's."""
    m = 0x5BD1E995
    mask = 0xFFFFFFFF
    length = len(data)
    h = (0x9747B28C ^ length) & mask
    n4 = length & ~3
    for (k,) in struct.iter_unpack("<I", data[:n4]):
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = (h * m) & mask
        h ^= k
    rest = length & 3
    if rest == 3:
        h ^= data[n4 + 2] << 16
    if rest >= 2:
        h ^= data[n4 + 1] << 8
    if rest >= 1:
        h ^= data[n4]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def default_partition(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's producer picks for a record with ``key``."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions
