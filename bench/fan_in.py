#!/usr/bin/env python3
"""fan_in.py - what a group's fan-in costs: N members completing, then the callback released.

    python bench/fan_in.py [--members 10000] [--store sqlite,postgresql] [--pg-url URL]

For each store, on a fresh database: ``Queue.group`` of N members and a callback; then every
member claimed (batches of 100) and completed as a worker completes them (batches of 8,
``complete_many``), timed from the first completion to the callback found ``pending``.
PostgreSQL runs on ``--pg-url`` (a database the user may create databases from), else on
the tests' server (``tests/pgserver.py``: $JOBQ_TEST_PG, a throwaway cluster, or
127.0.0.1:5432). Prints per store the seconds of the completions, the time per completion
over the first and the last tenth of the members (flat when each completion costs the same),
and the callback's status.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from jobq_core import Queue  # noqa: E402

CLAIM = 100
BATCH = 8  # a worker's completion batch


def fan_in(database: str, members: int) -> tuple[float, float, float, str]:
    """(seconds of all completions, ms a completion in the first tenth, in the last tenth,
    the callback's status after the last completion)."""
    with Queue(database) as q:
        ids, then = q.group([("bench.member", i) for i in range(members)],
                            then={"kind": "bench.callback", "queue": "bench.after"})
        stamps: list[float] = []
        start = time.perf_counter()
        while True:
            jobs = q.claim_many("bench", CLAIM, queues=["default"])
            if not jobs:
                break
            for i in range(0, len(jobs), BATCH):
                q.complete_many([(j.id, j.token, None) for j in jobs[i:i + BATCH]])
                stamps += [time.perf_counter()] * len(jobs[i:i + BATCH])
        total = stamps[-1] - start if stamps else 0.0
        tenth = max(1, members // 10)
        first = (stamps[tenth - 1] - start) / tenth * 1000
        last = (stamps[-1] - stamps[-tenth - 1]) / tenth * 1000
        return total, first, last, str(q.get(then).status)


def sqlite_database(tmp: str) -> str:
    return os.path.join(tmp, f"{uuid.uuid4().hex}.db")


def postgres_database(url: str | None):
    """(database url, drop()) of a fresh database."""
    if url is None:
        import pgserver

        server = pgserver.server()
        name, db = server.create_database()
        return db, lambda: server.drop_database(name)
    import psycopg

    name = f"jobq_fan_in_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(url, autocommit=True) as c:
            c.execute(f'DROP DATABASE "{name}" WITH (FORCE)')

    return url.rsplit("/", 1)[0] + "/" + name, drop


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--members", type=int, default=10_000)
    p.add_argument("--store", default="sqlite,postgresql")
    p.add_argument("--pg-url")
    args = p.parse_args()
    for store in args.store.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            if store == "sqlite":
                db, drop = sqlite_database(tmp), (lambda: None)
            else:
                db, drop = postgres_database(args.pg_url)
            try:
                total, first, last, status = fan_in(db, args.members)
            finally:
                drop()
        print(f"{store:<10} {args.members:>6} members: {total:8.2f} s "
              f"({first:.3f} ms a completion in the first tenth, {last:.3f} ms in the last); "
              f"callback {status}", flush=True)


if __name__ == "__main__":
    main()
