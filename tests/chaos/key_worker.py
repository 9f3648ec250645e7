"""A real worker process whose jobs record when they ran, for the concurrency-key scenarios
(``test_keys_chaos.py``).

    python key_worker.py DB [--concurrency N] [--lease S] [--queues A,B]

Kind "hold" works ``payload["ms"]`` milliseconds, then writes one row to the application's
``ledger`` table: (job id, queue, key, start, end, pid; the queue and key as the payload
repeats them), and completes the job in the same
transaction (``ctx.complete(conn=...)``): a run whose completion is refused (its lease was
reaped: a zombie) leaves no row. So the ledger holds exactly the accepted runs, each with
an interval inside the time its job was running in the database.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time

sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
from stores import AppDB  # noqa: E402

from jobq_core import Backoff, Queue, Registry, Worker  # noqa: E402

registry = Registry()
_local = threading.local()

def app() -> AppDB:
    db = getattr(_local, "db", None)
    if db is None:
        db = _local.db = AppDB(os.environ["APP_DB"])
    return db


@registry.task("hold", max_attempts=100, backoff=Backoff(base=0.05, cap=0.2))
def hold(payload, ctx):
    start = time.time()
    time.sleep(payload["ms"] / 1000)
    db = app()
    try:
        db.execute("INSERT INTO ledger VALUES (?, ?, ?, ?, ?, ?)",
                   (ctx.job_id, payload["queue"], payload["key"], start, time.time(),
                    os.getpid()))
        ctx.complete(None, conn=db.conn)
        db.commit()
    except BaseException:
        db.rollback()
        raise


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("db")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--lease", type=float, default=1.0)
    p.add_argument("--queues", default=None)
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING, format=f"[{os.getpid()}] %(message)s")
    os.environ["APP_DB"] = args.db
    queues = args.queues.split(",") if args.queues else None
    # Poison detection off: these scenarios kill workers at random, and a job that loses
    # three in a row (or is frozen once, then loses two) must still run to its end.
    with Queue(args.db) as queue:
        Worker(queue, registry, concurrency=args.concurrency, lease=args.lease, grace=5.0,
               poll_interval=0.01, queues=queues, max_lost_attempts=0).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
