"""The System interface every measured queue implements, and what the adapters share:
payloads, SQLite pragmas and counts read back, and the batched drain of the raw anchors."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3

LEASE_S = 30.0
SYNC_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
METRICS = ("enqueue", "batch", "drain1", "drain4", "cpu2")


class RanButFailed(Exception):
    """complete() ran the job but a later step failed: count the completion, do not retry."""


COMPLETE_TRIES = 3      # a completion that fails on a lock error is retried (it is idempotent)


def payload_text(i: int) -> str:
    return json.dumps({"i": i})


def read_pragmas(conn) -> dict:
    """journal_mode / synchronous / busy_timeout as seen on a library's own connection."""
    out = {}
    for p in ("journal_mode", "synchronous", "busy_timeout"):
        try:
            v = conn.execute(f"PRAGMA {p}").fetchone()[0]
        except Exception as e:  # pragma: no cover - defensive
            v = f"? ({e})"
        if p == "synchronous":
            v = SYNC_NAMES.get(v, v)
        out[p if p != "busy_timeout" else "busy_timeout_ms"] = v
    return out


def count_rows(db_file: str, sql: str):
    """Read-only count on a finished database (end-state cross-check)."""
    try:
        c = sqlite3.connect(db_file, timeout=30.0)
        try:
            return c.execute(sql).fetchone()[0]
        finally:
            c.close()
    except Exception:
        return None


def checkpoint_and_close(db_file: str):
    """Fold the WAL into the main file so a template can be copied as plain files."""
    try:
        c = sqlite3.connect(db_file, timeout=30.0)
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        c.close()
    except Exception:
        pass


class System:
    """Adapter interface. One instance per system, looked up by name in forked workers."""

    name = "?"
    kind = "peer"               # raw | peer | project
    workloads = METRICS[:4]
    template_from = None        # reuse another system's enqueued DB for the drains
    thread_workers = False      # drain4 with threads in one process instead of processes
    supports_batch = False
    batch_note = "no batch API"
    semantics = ""

    def available(self):
        return True, ""

    def sqlite_file(self, d):
        return os.path.join(d, "q.db")

    def open(self, d):
        raise NotImplementedError

    def close(self, h):
        pass

    def enqueue(self, h, i):
        raise NotImplementedError

    def enqueue_batch(self, h, ids):
        raise NotImplementedError

    def open_worker(self, d, wid):
        return self.open(d)

    def open_shared(self, d):
        return self.open(d)

    def enqueue_elsewhere(self, d, n, batch_size):
        """For a system whose client runs in another interpreter (Oban: Python 3.12): its
        enqueue loop (``batch_size`` None: one job per call) run and timed there, as
        {"wall_s": ...}. None: the loop runs here, through enqueue / enqueue_batch."""
        return None

    def claim(self, h):
        """-> None when nothing is claimable, else (key, ctx). key identifies the job."""
        raise NotImplementedError

    def complete(self, h, ctx) -> bool:
        raise NotImplementedError

    def settings(self, h) -> dict:
        return {}

    def left(self, d):
        """Jobs not in a finished state according to the database after a drain."""
        return None

    def drained_at(self, h):
        """For a worker with no burst mode, which the harness stops once every job has run:
        the time.monotonic() at which the last job finished, where the drain ends. None:
        the drain ends when claim() returns None."""
        return None

    # Where a measurement's database lives: the harness names it by a directory ``d``.
    section = "sqlite"          # which table the system's row goes to
    baseline = "raw-NORMAL"     # its section's anchor: every ratio is to it
    promises = ""               # lease? fencing? (printed under the table)

    def create(self, d):
        os.makedirs(d)

    def copy_from(self, src, d):
        shutil.copytree(src, d)

    def discard(self, d):
        shutil.rmtree(d, ignore_errors=True)

    def after_enqueue(self, d):
        checkpoint_and_close(self.sqlite_file(d))


BATCH_CLAIM = 8  # the raw-*-batch anchors: jobs per claim statement (jobq's default concurrency)


class BatchedDrain:
    """The drain of a batching worker, for the raw-*-batch anchors: up to ``BATCH_CLAIM``
    jobs claimed by one statement, and their fenced completions written together just
    before the next claim. A subclass's worker handle is a dict with ``claimed`` and
    ``done`` lists; it gives ``_claim_batch(h) -> [(payload JSON text, ctx), ...]`` and
    ``_complete_batch(h, ctxs) -> how many were accepted``, or writes the completions and
    claims the next batch its own way in ``_next_batch``."""

    name: str

    def claim(self, h):
        if not h["claimed"]:
            done, h["done"] = h["done"], []
            h["claimed"] = self._next_batch(h, done)
            if not h["claimed"]:
                return None
        return h["claimed"].pop(0)

    def complete(self, h, ctx):
        h["done"].append(ctx)
        return True  # written with the next claim, which checks every one was accepted

    def _next_batch(self, h, done):
        """Write the completions ``done`` (raising when one was fenced out), then claim:
        the next batch's (key, ctx) pairs."""
        if done and (n := self._complete_batch(h, done)) != len(done):
            raise RuntimeError(f"{self.name}: {len(done) - n} completions fenced out")
        return [(json.loads(p)["i"], ctx) for p, ctx in self._claim_batch(h)]
