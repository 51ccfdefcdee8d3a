"""Runs every benchmark module in bench/ that defines ``main()``."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import bench


def run() -> int:
    names = sys.argv[1:] or [
        m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_")
    ]
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        print(f"\n## {name}  (python -m bench {name})", flush=True)
        module.main()
    return 0


if __name__ == "__main__":
    sys.exit(run())
