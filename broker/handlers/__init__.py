"""One module per Kafka API; each registers its handler in broker.registry.REGISTRY."""
