"""The broker process's garbage-collector settings (Kafka ships its JVM's: ``kafka-run-class.sh``
starts the broker with ``KAFKA_JVM_PERFORMANCE_OPTS``, G1 with a short pause goal).

CPython frees most objects by reference counting; its cyclic collector runs when allocations
outnumber deallocations by ``threshold0`` (700 by default) and promotes what is alive at that
moment into older generations. A broker hosting many partitions holds a large long-lived heap
(every partition's log, segments, indexes, producer state, replica state), and a request naming
thousands of partitions allocates tens of thousands of short-lived objects (the decoded
request, one read per partition, the response's tuples). With the default thresholds those
temporaries are still alive at the young collections that run in the middle of the request, so
they are promoted to the oldest generation; the promotions count towards the next full
collection, which then scans the whole long-lived heap: hundreds of milliseconds at 10,000
partitions, again and again while such requests flow (issue 19's scale benchmark).

A larger young generation lets a request's temporaries die before a collection sees them, so
full collections follow the real growth of the long-lived heap instead. Cyclic garbage is still
collected, only in larger rounds; nothing is frozen or disabled.

Thread-safety: :func:`configure` is called once, from the process's entry point, before the
broker starts its threads.
"""

from __future__ import annotations

import gc

#: allocations (minus deallocations) between young collections: more than one large request's
#: temporaries (CPython's default: 700)
YOUNG_THRESHOLD = 50_000
#: young collections between collections of the middle generation (default: 10)
MIDDLE_THRESHOLD = 20
#: middle collections between full ones; CPython also waits until the objects promoted since the
#: last full collection reach a quarter of the long-lived heap (default: 10)
OLD_THRESHOLD = 10


def configure() -> None:
    """Applies the thresholds to this process's collector."""
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)
