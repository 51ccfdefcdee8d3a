"""The ``odradek`` command."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["serve"]:
        print("odradek serve: the broker is not implemented yet", file=sys.stderr)
        return 2
    print("usage: odradek serve [--config FILE] [--override KEY=VALUE ...]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
