"""The broker process's C allocator settings (glibc's ``mallopt``), as :mod:`broker.gc_tuning`
holds its collector's (Kafka's JVM has a heap of fixed size, ``-Xms`` equal to ``-Xmx``, and
keeps it).

A fetch over thousands of partitions holds each partition's few kilobytes in memory until its
response is sent (storage's ``FetchRegion``: the header scan read them), tens of megabytes
allocated in a few hundred milliseconds and freed at once. With glibc's defaults, that memory
sits at the top of the heap when freed and is given back to the kernel (the heap is trimmed
above 128 KiB of free space at its top), so the next such fetch page-faults it all in again:
about 13,000 faults and a third of the fetch's system time for 50 MiB on the development VM
(issue 19's scale benchmark).

:data:`TRIM_THRESHOLD` keeps up to that much free memory at the top of the heap for the next
request instead. Setting it turns off glibc's sliding threshold for ``mmap`` (which otherwise
rises to the size of the largest block freed, up to 32 MiB), so :data:`MMAP_THRESHOLD` sets that
to its ceiling: blocks below it come from the heap instead of an ``mmap`` and ``munmap`` of
their own each, as glibc's sliding threshold would have them once it had seen them.

The environment wins: with ``MALLOC_TRIM_THRESHOLD_`` or ``MALLOC_MMAP_THRESHOLD_`` set (glibc's
own tunables), nothing is changed. Elsewhere than glibc (musl, macOS) nothing is changed either.

Thread-safety: :func:`configure` is called once, from the process's entry point, before the
broker starts its threads.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys

log = logging.getLogger(__name__)

#: mallopt's parameter numbers (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

#: free bytes kept at the top of the heap: more than one fetch's in-memory regions (the broker's
#: ``fetch.max.bytes`` is 55 MiB by default)
TRIM_THRESHOLD = 128 * 1024 * 1024
#: blocks at least this big get an ``mmap`` of their own: glibc's ceiling on 64-bit systems
MMAP_THRESHOLD = 32 * 1024 * 1024

_ENVIRONMENT = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")


def configure() -> bool:
    """Applies the thresholds; returns whether they were applied (glibc, no tunables set)."""
    if not sys.platform.startswith("linux") or any(name in os.environ for name in _ENVIRONMENT):
        return False
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"; None or an error elsewhere
    except (ValueError, OSError):
        libc = None
    if not libc or not libc.startswith("glibc"):
        return False
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    applied = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
    if not applied:
        log.warning("mallopt refused the allocator's thresholds; glibc's defaults stay")
    return applied
