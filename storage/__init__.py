"""Odradek storage package."""
