"""Oban for Python in peers_pg.py's section. Oban needs Python 3.12 or newer, so it runs
in an interpreter of its own: a virtual environment, bench/.venv-oban, made on first use
with a Python 3.12+ found on this machine (``$OBAN_PYTHON``, else python3.13/python3.12 on
the PATH or under ~/.pyenv) and ``pip install 'oban==0.7.0'`` (or made by hand, the same
way). Its side is oban_child.py: the enqueue loops run and are timed there (the wall
time it reports is the figure, its interpreter's start left out), and each drain process
starts one child, waits for it to be ready (Oban imported, its pool open), then tells it
to go: the child starts Oban's worker and prints each job's number as it runs, which this
side counts (``Drained``) to stop every child once all have run.

When no Python 3.12 can be found, or the environment cannot be made, the row is skipped
and the reason printed.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import threading

from pg_system import ENQUEUED, SLOTS, StopsWhenDrained

HERE = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(HERE, ".venv-oban")
CHILD = os.path.join(HERE, "oban_child.py")
REQUIREMENT = "oban==0.7.0"


def _python312() -> str | None:
    """An interpreter that runs and is 3.12 or newer (a pyenv shim may exist and fail)."""
    found = [os.environ.get("OBAN_PYTHON")]
    found += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3")),
                    reverse=True)
    found += [shutil.which("python3.13"), shutil.which("python3.12")]
    for exe in found:
        if exe and subprocess.run([exe, "-c", "import sys; assert sys.version_info >= (3, 12)"],
                                  capture_output=True).returncode == 0:
            return exe
    return None


def venv_python() -> str:
    return os.path.join(VENV, "bin", "python")


def make_venv() -> tuple[bool, str]:
    """bench/.venv-oban with oban installed, made now if missing."""
    py = venv_python()
    if os.path.exists(py) and subprocess.run([py, "-c", "import oban"],
                                             capture_output=True).returncode == 0:
        return True, ""
    base = _python312()
    if base is None:
        return False, ("Oban for Python needs Python >= 3.12 and none was found (set "
                       "$OBAN_PYTHON to one, or install python3.12)")
    print(f"note: making {VENV} with {base} and pip install '{REQUIREMENT}'", file=sys.stderr)
    for cmd in ([base, "-m", "venv", VENV], [py, "-m", "pip", "install", "-q", REQUIREMENT]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["?"]
            return False, f"{' '.join(cmd[:4])} failed: {tail[0]}"
    return True, ""


def _child(*args: str, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run([venv_python(), CHILD, *args], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"oban_child.py {args[0]} failed: {r.stderr.strip()[-1500:]}")
    return r


class ObanSystem(StopsWhenDrained):
    name = "oban"
    batch_note = "Oban.enqueue_many(jobs): one INSERT for the batch"
    semantics = (f"Oban for Python 0.7 under Python 3.12 (a child process, oban_child.py): "
                 f"Oban.enqueue() per job (async; timed in the child); drained by "
                 f"Oban(queues={{'default': {SLOTS}}}) per process, its defaults otherwise "
                 "(leadership, stager every 1 s, lifeline, pruner) with an async no-op "
                 "worker; no burst mode: stopped once every job has run")
    promises = ("lease: a fixed one, not extended: the leader's lifeline (every 60 s) makes "
                "a job executing for over rescue_after (300 s) available again, whether its "
                "worker is dead or still running it; fencing: yes, a completion matches "
                "id, state 'executing' and the attempt's attempted_at, so a rescued job's "
                "first holder writes nothing")

    def available(self):
        ok, why = make_venv()
        if not ok:
            return False, why
        return super().available()

    def install(self, url):
        _child("install", url, timeout=300)

    def enqueue_elsewhere(self, d, n, batch_size):
        args = ["enqueue", self.url(d), str(n)] if batch_size is None else \
            ["batch", self.url(d), str(n), str(batch_size)]
        out = json.loads(_child(*args, timeout=3600).stdout.strip().splitlines()[-1])
        ENQUEUED[d] = n
        return out

    def left(self, d):
        return self.count(d, "SELECT count(*) FROM oban_jobs WHERE state IN ('available', "
                             "'executing', 'scheduled', 'retryable')")

    def open_worker(self, d, wid):
        p = subprocess.Popen([venv_python(), CHILD, "drain", self.url(d), str(SLOTS)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             bufsize=1)
        line = p.stdout.readline().strip()
        if line != "ready":
            p.kill()
            raise RuntimeError(f"oban_child.py drain did not start (said {line!r})")
        return {"d": d, "ran": None, "child": p}

    def claim(self, h):
        if h["ran"] is None:
            self._drain(h["child"])
            h["ran"] = iter([i for i in self._seen])
        key = next(h["ran"], None)
        return None if key is None else (key, key)

    def _drain(self, p):
        """Go; count what the child ran; stop it once every job has run (or none for a
        while); then wait for its end."""
        self._seen = []

        def stopper():
            self.wait_drained()
            p.stdin.write("stop\n")
            p.stdin.flush()

        p.stdin.write("go\n")
        p.stdin.flush()
        threading.Thread(target=stopper, daemon=True).start()
        for line in p.stdout:
            if line.startswith("end"):
                break
            i = int(line)
            self._seen.append(i)
            self._drained.ran(i)
        if p.wait(timeout=60) != 0:
            raise RuntimeError(f"oban_child.py drain exited with {p.returncode}")
