"""import_instructions.py - what importing jobq costs, in instructions under callgrind.

Every ``jobq`` command starts a Python process that imports ``jobq_cli.main``, and every
web process that enqueues imports ``jobq_core``; neither needs the worker runtime unless
it runs a worker, so ``jobq_core.Worker`` loads on first use (``jobq_core/__init__.py``).
A process pool's fork server imports ``jobq_core.worker.child`` before it forks the first
child: neither the Worker nor asyncio (until an async handler runs).
This counts the instructions of each import (the interpreter's own start subtracted), for
one or more source trees, side by side:

    python bench/import_instructions.py                          # this checkout
    python bench/import_instructions.py --src /path/to/other/checkout --src .

Each tree's packages are byte-compiled first, as pip does when it installs a package:
where PYTHONDONTWRITEBYTECODE is set, a count would otherwise include compiling every
module from source.

Counts, not timings: a process start is tens of milliseconds, and on a shared machine
its wall time drifts by more than the difference being measured.
"""
from __future__ import annotations

import argparse
import compileall
import os
import re
import subprocess
import sys

IMPORTS = {"jobq_core": "import jobq_core", "jobq_cli.main": "import jobq_cli.main",
           "jobq_core.Worker": "import jobq_core; jobq_core.Worker",
           # a process pool's fork server, before its first child (forkserver.py)
           "jobq_core.worker.child": "import jobq_core.worker.child"}


def count(code: str) -> int:
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                          sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONHASHSEED": "0"}, check=True)
    return int(re.search(r"Collected : (\d+)", out.stderr).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", action="append", help="a source tree (default: this one)")
    args = parser.parse_args()
    trees = [os.path.abspath(t) for t in args.src or [os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))]]
    for tree in trees:
        for package in ("jobq_core", "jobq_cli", "jobq_tui"):
            compileall.compile_dir(os.path.join(tree, package), quiet=2)
    base = count("pass")
    print(f"{'import':<24}" + "".join(f"{os.path.basename(t) or t:>22}" for t in trees))
    for name, code in IMPORTS.items():
        counts = [count(f"import sys; sys.path.insert(0, {t!r}); {code}") - base for t in trees]
        print(f"{name:<24}" + "".join(f"{c / 1e6:>20.1f} M" for c in counts))


if __name__ == "__main__":
    main()
