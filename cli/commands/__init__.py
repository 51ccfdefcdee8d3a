"""The command groups of ``odradek``, one module each."""
