"""Non-Python Kafka clients (KafkaJS, Go) and the tools the integration tests run them with."""
