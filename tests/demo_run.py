"""``jobq demo`` as a subprocess, for the tests that kill one of its workers (the CLI's
and the monitor's): started, read up to its "Try it:" hint, and never left running."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


def _as_from_a_shell() -> None:
    """In the child, before exec: Ctrl-C as a shell leaves it (default, unblocked). In a full
    test run the demo twice ignored the tests' SIGINT for a minute (the disposition or mask
    it inherited from the test process, whose Python-level handler was unchanged)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextmanager
def demo(cwd, *args: str) -> Iterator[tuple[subprocess.Popen, list[str], list[int]]]:
    """``jobq demo ARGS`` in ``cwd`` (a pipe 80 columns wide): yields the process, the
    lines it printed up to its hint (the last one) and its workers' pids; a process still
    running at the end is killed."""
    p = subprocess.Popen([sys.executable, "-m", "jobq_cli.main", "demo", *args], cwd=cwd,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True, env={**os.environ, "COLUMNS": "80"},
                         preexec_fn=_as_from_a_shell)
    try:
        lines: list[str] = []
        while not (lines and lines[-1].startswith("Try it: ")):
            lines.append(p.stdout.readline())
            assert lines[-1], "".join(lines) + p.stderr.read()
        pids = [int(m.group(1)) for ln in lines if (m := re.search(r": pid (\d+)", ln))]
        yield p, lines, pids
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def stopped(p: subprocess.Popen, timeout: float, *, interrupt: bool = True) -> str:
    """The demo's output once it has ended, by Ctrl-C (``interrupt``) or its
    ``--duration``; it must exit 0."""
    if interrupt:
        p.send_signal(signal.SIGINT)  # Ctrl-C: the demo stops its workers and sums up
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, err
    return out
