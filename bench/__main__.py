"""Runs benchmark modules: ``python -m bench`` runs every module in bench/ that defines
``main()``; ``python -m bench NAME [NAME ...]`` runs those; ``python -m bench NAME --option ...``
runs one with its own options (bench_e2e, bench_spark)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys

import bench


def run(argv: list[str]) -> int:
    split = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    names, options = argv[:split], argv[split:]
    if options and len(names) != 1:
        print("usage: python -m bench [NAME ...] | python -m bench NAME --option ...")
        return 2
    if not names:
        names = [
            m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_")
        ]
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        print(f"\n## {name}  (python -m bench {' '.join([name, *options])})", flush=True)
        if inspect.signature(module.main).parameters:
            module.main(options)
        else:
            module.main()
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
