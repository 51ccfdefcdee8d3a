"""The compiled parts: optional accelerators for the FetchResponse encoder and the produce-side
record check.

Everything else is in pyproject.toml. ``optional=True``: without a C compiler or Python's headers
the build warns and goes on, and protocol.fast_fetch and protocol.records.check use their
pure-Python twins.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("protocol._fast_fetch", ["protocol/_fast_fetch.c"], optional=True),
        Extension("protocol._record_check", ["protocol/_record_check.c"], optional=True),
    ]
)
