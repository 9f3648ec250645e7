#!/usr/bin/env python3
"""keys_claim.py - what a claim on a queue with key limits costs, on SQLite or PostgreSQL.

    python bench/keys_claim.py [--url postgresql://USER@HOST/DB] [--ahead 0,1000,10000]

For each number A of --ahead, on a fresh database: a queue "q" with 2,000 ready jobs of
distinct keys, behind A ready jobs of one key whose one running job fills its
key_concurrency of 1 (the jobs a claim must step over), and the same queue with no key
limits; then 500 claims of one job (each completed) through the API, timed. Prints claims
per second of each, median of three rounds.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid

from jobq_core import Queue

CLAIMS = 500


def database(url: str | None, tmp: str) -> tuple[str, object]:
    if url is None:
        return f"{tmp}/{uuid.uuid4().hex}.db", None
    import psycopg

    name = f"jobq_keys_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + "/" + name, name


def drop(url: str | None, name) -> None:
    if name is None:
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as c:
        c.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def rate(url: str | None, tmp: str, ahead: int, keyed: bool) -> float:
    db, name = database(url, tmp)
    try:
        with Queue(db) as q:
            q.enqueue_many([{"kind": "k", "queue": "q", "key": "busy"}] * (ahead + 1),)
            q.enqueue_many([{"kind": "k", "queue": "q", "key": f"k{i}"} for i in range(2000)])
            if keyed:
                q.set_limit("q", key_concurrency=1)
            assert q.claim("holder", queues=["q"]).key == "busy"
            start = time.perf_counter()
            for _ in range(CLAIMS):
                job = q.claim("w", queues=["q"])
                q.complete(job.id, job.token)
            return CLAIMS / (time.perf_counter() - start)
    finally:
        drop(url, name)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url")
    p.add_argument("--ahead", default="0,1000,10000")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for ahead in map(int, args.ahead.split(",")):
            plain = statistics.median(rate(args.url, tmp, ahead, False) for _ in range(3))
            keyed = statistics.median(rate(args.url, tmp, ahead, True) for _ in range(3))
            print(f"{ahead:>6} jobs of a busy key ahead: no key limit {plain:7.0f} claims/s, "
                  f"key_concurrency=1 {keyed:7.0f} claims/s ({keyed / plain:.2f}x)")


if __name__ == "__main__":
    main()
