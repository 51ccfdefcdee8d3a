"""Benchmarks: ``python -m bench`` runs them all and prints figures with their commands."""
