"""Entry point of ``jobq-tui``."""
from __future__ import annotations

import sys


def main() -> int:
    print("jobq-tui: the monitor is not built yet", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
