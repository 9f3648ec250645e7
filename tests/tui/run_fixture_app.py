"""Run the monitor on a fresh fixture database at the fixture's fixed clock.

    python tests/tui/run_fixture_app.py PATH [HOSTILE_STRING_AS_PYTHON_LITERAL]

Used by the end-to-end terminal test, and handy to look at the app by hand.
"""
import ast
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import fixture_db  # noqa: E402

from jobq_tui.app import MonitorApp  # noqa: E402
from jobq_tui.source import Source  # noqa: E402


def main() -> None:
    path = sys.argv[1]
    hostile = ast.literal_eval(sys.argv[2]) if len(sys.argv) > 2 else None
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    clock = fixture_db.build(path, hostile=hostile)
    source = Source(path, clock=clock)
    source.open()
    MonitorApp(source, clock=clock).run()


if __name__ == "__main__":
    main()
