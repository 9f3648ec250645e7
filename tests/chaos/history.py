"""The history log of a chaos run: append-only JSON lines written by real processes.

Each event is one ``write()`` of one line to a file opened with O_APPEND, so lines from
several processes never interleave, and a line whose write returned survives the writer
being SIGKILLed (it is in the kernel's page cache). Events:

  enqueued  {"ids": [...]}                           after enqueue/enqueue_many returned
  claimed   {"job", "token", "attempt", "lease", "t"}  after a claim returned
  accepted  {"job", "token"}                         a completion the database took
  rejected  {"job", "token"}                         a completion fenced out (LeaseLost)
  failed    {"job", "token", "status"}               a failure the database took
  released  {"job", "token"}                         an unfinished job handed back
  ran       {"job", "attempt"}                       a handler body finished
"""
from __future__ import annotations

import json
import os
import time


class HistoryWriter:
    def __init__(self, path: str):
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._pid = os.getpid()

    def write(self, event: str, **fields) -> None:
        fields.update(ev=event, pid=self._pid, t=fields.get("t", time.time()))
        os.write(self._fd, (json.dumps(fields) + "\n").encode())

    def close(self) -> None:
        os.close(self._fd)


def read_history(path: str) -> list[dict]:
    """Every complete line; a torn last line (a writer killed mid-write) is dropped."""
    events = []
    if not os.path.exists(path):
        return events
    with open(path, "rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                break
            events.append(json.loads(line))
    return events
