"""Odradek protocol package."""
