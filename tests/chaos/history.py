"""The history log of a chaos run: append-only JSON lines written by real processes.

Each event is one ``write()`` of one line to a file opened with O_APPEND, so lines from
several processes never interleave, and a line whose write returned survives the writer
being SIGKILLed (it is in the kernel's page cache). A write that SIGKILL interrupts can
leave part of its line: Linux checks for a fatal signal between the pages a write spans,
so a line crossing a 4 KiB boundary may stop at it, and the next process's line follows
on the same line of the file. The reader drops such a torn piece, as it would an event
that the writer never got to write. Events:

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

_now = time.time  # bound at import: a worker that fakes its host clock later logs true times


class HistoryWriter:
    def __init__(self, path: str):
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.pid = os.getpid()

    def write(self, event: str, **fields) -> None:
        fields.update(ev=event, pid=self.pid, t=fields.get("t", _now()))
        os.write(self._fd, (json.dumps(fields) + "\n").encode())

    def close(self) -> None:
        os.close(self._fd)


def read_history(path: str) -> list[dict]:
    """Every complete event; the torn piece of a writer killed mid-write is dropped."""
    events = []
    if not os.path.exists(path):
        return events
    with open(path, "rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                break  # the last writer was killed mid-line
            try:
                events.append(json.loads(line))
            except ValueError:  # a torn piece, then another process's whole line
                events += _after_torn_piece(line)
    return events


def _after_torn_piece(line: bytes) -> list[dict]:
    start = line.find(b'{"', 1)
    while start != -1:
        try:
            return [json.loads(line[start:])]
        except ValueError:
            start = line.find(b'{"', start + 1)
    raise ValueError(f"history line is neither an event nor a torn piece and one: {line!r}")
