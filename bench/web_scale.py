"""Benchmark of the web dashboard on a large database (not a test): how long every page,
its JSON twin and the actions take to answer, server-side, with 1,000,000 finished jobs
and 20,000 dead ones, on SQLite and on PostgreSQL.

    python bench/web_scale.py [--sqlite PATH] [--pg postgresql://USER@HOST/postgres]
                              [--finished 1000000] [--dead 20000] [--calls 5] [--rounds 3]

Fills each database with bulk SQL (one ``INSERT ... SELECT`` over a generated series per
part, about a minute for a million jobs), plus what a live queue has through the API:
5,000 pending jobs (some with a concurrency key), 400 scheduled, 500 retrying, 50 running
under 8 workers, a paused queue, a limited one, three schedules. The finished jobs
succeeded over the last day; the dead ones died over the same day after 3 attempts each
(3 rows of history), with errors that fold into a few dozen groups. Both databases are
analyzed, as autovacuum and ``PRAGMA optimize`` leave a database that has been running.

Then each route is called through ``create_app`` in the process (httpx's ASGI transport,
no socket): ``--calls`` times a round, ``--rounds`` rounds; a call's time is from the
request entering the app to its last body byte leaving it. Reported per route: the
median of the rounds' medians, and the worst call. The bound is 200 ms.

``--sqlite`` keeps the file when it exists (filled once, reused); a PostgreSQL database
is created on the server ``--pg`` names (its own name, ``jobq_web_scale_...``) and
dropped at the end.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sqlite3
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from jobq_core import Queue
from jobq_web import create_app

BOUND_MS = 200.0
DAY = 86_400.0
KINDS = ("send_receipt", "build_report", "resize", "sync_crm", "digest")
QUEUES = ("mail", "export", "media", "crm", "default")
TOKEN = "bench-token"

# One generated series per part: ``{series}`` names ``s(i)``, i from 1 to the count.
SERIES = {
    "sqlite": ("WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s "
               "WHERE i < ?) ", " FROM s"),
    "pg": ("", " FROM generate_series(1, ?) AS s(i)"),
}


def _case(values: tuple[str, ...], expr: str) -> str:
    arms = " ".join(f"WHEN {n} THEN '{v}'" for n, v in enumerate(values))
    return f"CASE ({expr}) % {len(values)} {arms} END"


# Ids interleaved as a live queue's are: with a ratio r of finished jobs to dead ones, dead
# job j has id j * (r + 1) and finished job i the ids in between (i + (i - 1) // r).
FINISHED = (
    "INSERT INTO jobq_jobs(id, kind, queue, payload, priority, status, attempts, "
    "max_attempts, run_at, worker, token, result, created_at, started_at, finished_at) "
    f"SELECT i + (i - 1) / ?, {_case(KINDS, 'i')}, {_case(QUEUES, 'i')}, "
    "'{\"n\": ' || i || ', \"to\": \"user' || i || '@example.com\"}', 0, 'succeeded', 1, 3, "
    "? + i * ?, 'w-old-' || (i % 8), i, '{\"ok\": true}', ? + i * ?, ? + i * ? + 0.01, "
    "? + i * ? + 0.05"
)
# Errors that fold into a few dozen groups (numbers and quoted names vary inside a group).
DEAD_ERROR = (
    "CASE i % 4 "
    "WHEN 0 THEN 'KeyError: ''customer_' || (i % 7) || '''' || char(10) || "
    "'Traceback (most recent call last):' || char(10) || "
    "'  File \"app/billing.py\", line ' || (100 + i % 9) || ', in charge' "
    "WHEN 1 THEN 'TimeoutError: CRM did not answer after ' || (30 + i % 3) || ' s' "
    "WHEN 2 THEN 'ValueError: invalid amount ' || (i % 1000) || ' for order ' || i "
    "ELSE 'ConnectionRefusedError: [Errno 111] Connection refused (host ' || (i % 12) "
    "|| ')' END"
)
DEAD = (
    "INSERT INTO jobq_jobs(id, kind, queue, payload, priority, status, attempts, "
    "max_attempts, run_at, worker, token, error, created_at, started_at, finished_at) "
    f"SELECT i * ?, {_case(KINDS, 'i / 4')}, {_case(QUEUES, 'i / 4')}, "
    "'{\"n\": ' || i || '}', 0, 'dead', 3, 3, ? + i * ?, 'w-old-' || (i % 8), i, "
    f"{DEAD_ERROR}, ? + i * ?, ? + i * ?, ? + i * ? + 0.2"
)
DEAD_ATTEMPTS = (
    "INSERT INTO jobq_attempts(job_id, attempt, worker, token, started_at, ended_at, "
    "outcome, error) SELECT id, a, worker, token, finished_at - 120 * (4 - a), "
    "finished_at - 120 * (3 - a), 'failed', error FROM jobq_jobs, "
    "(SELECT 1 AS a UNION ALL SELECT 2 UNION ALL SELECT 3) AS n WHERE status = 'dead'"
)
SCHEDULE = ("INSERT INTO jobq_schedules(key, kind, queue, every, cron, tz, last_tick, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")


def char_fn(sql: str, store: str) -> str:
    return sql.replace("char(10)", "chr(10)") if store == "pg" else sql


def bulk(execute: Callable[[str, tuple[Any, ...]], None], store: str, finished: int,
         dead: int, now: float) -> None:
    """The finished and dead jobs and the dead ones' attempts, in three statements."""
    head, tail = SERIES[store]
    start = now - DAY
    step = DAY / max(1, finished)
    ratio = max(1, finished // max(1, dead))

    def series(sql: str, n: int, *params: Any) -> None:  # the count's ? first in SQLite's
        execute(head + sql + tail, (n, *params) if head else (*params, n))

    # run_at, created_at, started_at, finished_at: start + i * step
    series(FINISHED, finished, ratio, *(start, step) * 4)
    step = DAY / max(1, dead)
    series(char_fn(DEAD, store), dead, ratio + 1, *(start, step) * 4)
    execute(DEAD_ATTEMPTS, ())
    for key, kind, queue, every, cron in (("digest-hourly", "digest", "mail", 3600.0, None),
                                          ("report-nightly", "build_report", "export", None,
                                           "0 3 * * *"),
                                          ("crm-sync", "sync_crm", "crm", 300.0, None)):
        execute(SCHEDULE, (key, kind, queue, every, cron, "UTC" if cron else None,
                           now - 60, now - 60))


def live(url: str) -> None:
    """What a running queue has besides its history, through the API."""
    with Queue(url) as q:
        q.enqueue_many([{"kind": KINDS[i % 5], "queue": QUEUES[i % 5], "payload": {"i": i},
                         "key": f"tenant-{i % 40}" if i % 5 == 0 else None}
                        for i in range(5_000)])
        q.enqueue_many([{"kind": "digest", "queue": "mail", "delay": 3600}
                        for _ in range(400)])
        q.enqueue_many([{"kind": "sync_crm", "queue": "crm", "max_attempts": 5}
                        for _ in range(500)])
        for j in q.claim_many("w-flaky", 500, queues=["crm"]):
            q.fail(j.id, j.token, "TimeoutError: CRM did not answer", retry_in=3600)
        for w in range(8):
            q.register_worker(f"w{w}", host=f"app-{w}", pid=1000 + w, queues=None,
                              concurrency=8)
        for w in range(8):
            q.claim_many(f"w{w}", 6 + (w < 2), lease=3600)
        q.pause("media")
        q.set_limit("export", concurrency=4, key_concurrency=1)


def schema(url: str) -> None:
    """jobq's tables in an empty database (a store opens on its first use)."""
    with Queue(url) as q:
        q.check()


def fill_sqlite(path: str, finished: int, dead: int) -> None:
    t0 = time.monotonic()
    schema(path)
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA synchronous=OFF")
    c.execute("BEGIN IMMEDIATE")
    bulk(lambda sql, params: c.execute(sql, params) and None, "sqlite", finished, dead,
         time.time())
    c.execute("COMMIT")
    c.close()
    live(path)
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("ANALYZE")
    c.close()
    print(f"filled {path} in {time.monotonic() - t0:.0f} s "
          f"({os.path.getsize(path) / 1e6:.0f} MB)", flush=True)


class PgDatabase:
    """A database of its own on the server ``server_url`` names, dropped on exit."""

    def __init__(self, server_url: str):
        self.server_url = server_url
        self.name = f"jobq_web_scale_{uuid.uuid4().hex[:8]}"
        self.url = urlunsplit(urlsplit(server_url)._replace(path=f"/{self.name}"))

    def __enter__(self) -> PgDatabase:
        import psycopg
        with psycopg.connect(self.server_url, autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{self.name}"')
        return self

    def __exit__(self, *exc: object) -> None:
        import psycopg
        with psycopg.connect(self.server_url, autocommit=True) as c:
            c.execute(f'DROP DATABASE "{self.name}" WITH (FORCE)')

    def fill(self, finished: int, dead: int) -> None:
        import psycopg
        t0 = time.monotonic()
        schema(self.url)
        with psycopg.connect(self.url) as c:
            bulk(lambda sql, params: c.execute(sql.replace("%", "%%").replace("?", "%s"), params) and None,
                 "pg", finished, dead, time.time())
            c.execute("SELECT setval(pg_get_serial_sequence('jobq_jobs', 'id'), max(id)) "
                      "FROM jobq_jobs")
        live(self.url)
        with psycopg.connect(self.url, autocommit=True) as c:
            c.execute("VACUUM ANALYZE")
            size = c.execute("SELECT pg_database_size(current_database())").fetchone()
        print(f"filled {self.name} in {time.monotonic() - t0:.0f} s "
              f"({(size[0] if size else 0) / 1e6:.0f} MB)", flush=True)


class Timed:
    """An ASGI app that records how long each call took inside it."""

    def __init__(self, app: Any):
        self.app = app
        self.last = 0.0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        started = time.perf_counter()

        async def timed_send(message: Any) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                self.last = time.perf_counter() - started

        await self.app(scope, receive, send if scope["type"] != "http" else timed_send)


def routes(ids: dict[str, int]) -> list[tuple[str, str]]:
    """(method, path) of every page, its JSON twin and the live fragment htmx asks for."""
    pages = ["/running", "/queues", "/workers", "/retries", "/dead", "/dead?jobs=1",
             "/all", "/all?q=status:dead", "/all?q=kind:send_receipt",
             "/all?q=queue:mail%20status:succeeded", "/all?q=customer_3",
             "/all?q=nothing-matches", '/all?q=error:%22did%20not%20answer%22',
             '/all?q=error:%22nothing%20matches%22', "/schedules", "/keys",
             f"/jobs/{ids['succeeded']}#succeeded", f"/jobs/{ids['dead']}#dead",
             f"/jobs/{ids['running']}#running"]
    out = [("GET", p) for p in pages]
    out += [("GET", "/api" + p) for p in pages]
    out += [("GET", p + ("&" if "?" in p else "?") + "live=1") for p in pages[:7]]
    out += [("GET", "/api/stats"), ("GET", "/login")]
    return out


def label(method: str, path: str) -> str:
    """``GET /jobs/ID (dead)`` for a job's page, else the method and the path."""
    if "#" in path:
        path, status = path.split("#")
        path = path.rsplit("/", 1)[0] + f"/ID ({status})"
    return f"{method} {path}"


def sample_ids(url: str) -> dict[str, int]:
    with Queue(url, read_only=True) as q:
        return {status: q.list(status, limit=1, payloads=False)[0].id
                for status in ("succeeded", "dead", "running")}


async def measure(url: str, calls: int, rounds: int) -> dict[str, tuple[float, float]]:
    """Route -> (median of the rounds' medians, worst call), in ms."""
    timed = Timed(create_app(url, token=TOKEN))
    ids = sample_ids(url)
    plan = routes(ids)
    seen: dict[str, list[list[float]]] = {label(m, p): [] for m, p in plan}
    auth = {"Authorization": f"Bearer {TOKEN}"}
    transport = httpx.ASGITransport(app=timed)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        for _ in range(rounds):
            for method, path in plan:
                times = []
                for _ in range(calls):
                    r = await client.request(method, path.split("#")[0])
                    if r.status_code >= 400:
                        raise SystemExit(f"{method} {path}: {r.status_code} {r.text[:300]}")
                    times.append(timed.last * 1000)
                seen[label(method, path)].append(times)
            # actions: each call acts on a different job, so none is refused
            actions = [("POST", "/queues/mail/pause"), ("POST", "/queues/mail/resume"),
                       ("POST", "/queues/export/limits")]
            dead = await client.get("/api/dead?jobs=1")
            for job in dead.json()[:calls]:
                actions.append(("POST", f"/jobs/{job['id']}/retry"))
            for method, path in actions:
                key = f"{method} {'/jobs/ID/retry' if path.startswith('/jobs/') else path}"
                r = await client.request(method, path, headers=auth,
                                         data={"concurrency": "4"} if "limits" in path else {})
                if r.status_code >= 400:
                    raise SystemExit(f"{method} {path}: {r.status_code} {r.text[:300]}")
                seen.setdefault(key, []).append([timed.last * 1000])
    out = {}
    for key, per_round in seen.items():
        medians = [statistics.median(r) for r in per_round]
        out[key] = (statistics.median(medians), max(max(r) for r in per_round))
    timed.app.state.dashboard.changes.stop()
    return out


def table(results: dict[str, dict[str, tuple[float, float]]]) -> str:
    stores = list(results)
    keys = list(next(iter(results.values())))
    head = "| route | " + " | ".join(f"{s} median | {s} worst" for s in stores) + " |"
    lines = [head, "| --- |" + " ---: | ---: |" * len(stores)]
    for key in keys:
        cells = []
        for s in stores:
            med, worst = results[s].get(key, (float("nan"), float("nan")))
            cells += [f"{med:.1f}" + (" **over**" if med > BOUND_MS else ""), f"{worst:.1f}"]
        lines.append(f"| `{key}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sqlite", default="/tmp/jobq-web-scale.db",
                   help="the SQLite file (filled if missing); '' to skip")
    p.add_argument("--pg", default="", help="a PostgreSQL server URL (a database of its own "
                   "is created and dropped); empty to skip")
    p.add_argument("--finished", type=int, default=1_000_000)
    p.add_argument("--dead", type=int, default=20_000)
    p.add_argument("--calls", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", default="", help="write the figures to this file")
    args = p.parse_args()
    results: dict[str, dict[str, tuple[float, float]]] = {}
    if args.sqlite:
        if not os.path.exists(args.sqlite):
            fill_sqlite(args.sqlite, args.finished, args.dead)
        results["SQLite"] = asyncio.run(measure(args.sqlite, args.calls, args.rounds))
        print(table({"SQLite": results["SQLite"]}), flush=True)
    if args.pg:
        with PgDatabase(args.pg) as db:
            db.fill(args.finished, args.dead)
            results["PostgreSQL"] = asyncio.run(measure(db.url, args.calls, args.rounds))
    print()
    print(table(results))
    worst = max(m for r in results.values() for m, _ in r.values())
    print(f"\nslowest median: {worst:.1f} ms (bound {BOUND_MS:.0f} ms)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": f"{os.cpu_count()} cores", "python": sys.version.split()[0],
                       "finished": args.finished, "dead": args.dead, "results": results},
                      f, indent=2)


if __name__ == "__main__":
    main()
