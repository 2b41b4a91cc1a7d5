"""``python -m kbtool``: the same command line as the ``kbtool`` script."""

from __future__ import annotations

import sys

from kbtool.cli import main

if __name__ == "__main__":
    sys.exit(main())
