"""``python -m broker`` is ``odradek``."""

import sys

from broker.cli import main

sys.exit(main())
