"""The one compiled part: an optional accelerator for the FetchResponse encoder.

Everything else is in pyproject.toml. ``optional=True``: without a C compiler or Python's headers
the build warns and goes on, and protocol.fast_fetch uses its pure-Python encoder.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("protocol._fast_fetch", ["protocol/_fast_fetch.c"], optional=True),
    ]
)
