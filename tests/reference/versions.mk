# The Apache Kafka releases the reference tests, tools and benchmarks run (issue 15). Read by the
# Makefile and by tests/support/kafka_reference.py. KAFKA_ZK: the 3.9 line, the last with ZooKeeper
# mode (3.9.2 is the newest 3.9.x Maven Central serves); KAFKA_KRAFT: the newest 4.x it serves.
KAFKA_ZK_VERSION := 3.9.2
KAFKA_KRAFT_VERSION := 4.4.0
