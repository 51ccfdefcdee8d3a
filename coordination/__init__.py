"""Odradek coordination package."""
