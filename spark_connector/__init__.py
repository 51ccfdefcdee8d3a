"""Odradek spark_connector package."""
