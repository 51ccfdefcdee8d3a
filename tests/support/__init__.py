"""Test helpers: a capture broker for real producers, and real codec implementations on the JVM."""
