"""A real worker process whose jobs write to the application's own table, for the
exactly-once scenarios (``test_exactly_once.py``).

    python app_worker.py DB [--mode txn|plain] [--pool thread|process] [--concurrency N]
                            [--lease S] [--freeze-first MARKER GO]

Kind "add" adds 1 to ``accounts[payload["row"]]`` after ``payload["ms"]`` milliseconds of
work, holding its transaction open ``payload["tx_ms"]`` more:

* ``--mode txn``: ``ctx.complete(conn=...)`` in the same transaction, then commit: the
  job's completion and the +1 commit together (or not at all);
* ``--mode plain``: commit the +1, then return, and the worker completes the job (the
  at-least-once way: a crash between the two runs the job again).

``--freeze-first MARKER GO``: the first job this process runs writes its id to MARKER
before its transaction and waits for the file GO (the test stops the process meanwhile,
so that its lease runs out); a LeaseLost from its completion is written to MARKER.done.

$APP_DIE_AFTER_COMMIT=ID: this process SIGKILLs itself right after the +1 of job ID
commits, before the job is completed (``plain``) — or, in ``txn``, after the commit that
completed it. $APP_DIE_BEFORE_COMMIT=ID: right before that commit.
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
from stores import AppDB  # noqa: E402

from jobq_core import Backoff, LeaseLost, Queue, Registry, Worker  # noqa: E402

registry = Registry()
_local = threading.local()
_frozen_once = threading.Lock()


def app() -> AppDB:
    """This thread's connection to the application's database (a child of the process
    pool opens its own)."""
    db = getattr(_local, "db", None)
    if db is None or getattr(_local, "pid", None) != os.getpid():
        db = _local.db = AppDB(os.environ["APP_DB"])
        _local.pid = os.getpid()
    return db


def _publish(path: Path, text: str) -> None:
    """Write ``path`` whole: the test polls for it to exist, then reads it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _die_if(variable: str, job_id: int) -> None:
    if os.environ.get(variable) == str(job_id):
        os.kill(os.getpid(), signal.SIGKILL)


@registry.task("add", max_attempts=100, backoff=Backoff(base=0.05, cap=0.2))
def add(payload, ctx):
    time.sleep(payload.get("ms", 0) / 1000)
    freeze = os.environ.get("APP_FREEZE_MARKER")
    frozen = bool(freeze) and _frozen_once.acquire(blocking=False)
    if frozen:
        _publish(Path(freeze), str(ctx.job_id))
        go = Path(os.environ["APP_FREEZE_GO"])
        while not go.exists():
            time.sleep(0.01)
    db = app()
    try:
        db.execute("UPDATE accounts SET n = n + 1 WHERE id = ?", (payload["row"],))
        time.sleep(payload.get("tx_ms", 0) / 1000)
        if os.environ["APP_MODE"] == "txn":
            ctx.complete({"row": payload["row"]}, conn=db.conn)
        _die_if("APP_DIE_BEFORE_COMMIT", ctx.job_id)
        db.commit()
    except BaseException as e:
        db.rollback()
        if frozen and isinstance(e, LeaseLost):
            _publish(Path(freeze + ".done"), f"LeaseLost for job {ctx.job_id}")
        raise
    _die_if("APP_DIE_AFTER_COMMIT", ctx.job_id)
    return {"row": payload["row"]}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("db")
    p.add_argument("--mode", choices=["txn", "plain"], default="txn")
    p.add_argument("--pool", default="thread")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--lease", type=float, default=1.0)
    p.add_argument("--freeze-first", nargs=2, metavar=("MARKER", "GO"))
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING, format=f"[{os.getpid()}] %(message)s")
    os.environ["APP_DB"] = args.db  # for this process's children too
    os.environ["APP_MODE"] = args.mode
    if args.freeze_first:
        os.environ["APP_FREEZE_MARKER"], os.environ["APP_FREEZE_GO"] = args.freeze_first
    # Poison detection off: these scenarios kill workers at random, and a job that loses
    # three in a row (or is frozen once, then loses two) must still run to its end.
    with Queue(args.db) as queue:
        Worker(queue, registry, concurrency=args.concurrency, lease=args.lease, grace=5.0,
               poll_interval=0.01, pool=args.pool,
               max_lost_attempts=0).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
