"""The ``jobq`` command line (Typer)."""
from __future__ import annotations

import sys
from pathlib import Path

import typer

import time

from jobq_core import Backoff, JobqError, LeaseLost, Queue

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="jobq: a background job queue on SQLite.")


@app.callback()
def _root() -> None:
    """jobq: a background job queue on SQLite."""


@app.command()
def demo(db: Path = typer.Option(Path("demo.db"), "--db", help="database file to use")) -> None:
    """Enqueue, claim, heartbeat, complete and fence a few jobs, printing each step."""
    with Queue(db, backoff=Backoff(base=0.01, cap=0.01)) as q:
        ids = q.enqueue_many([("send_email", {"to": "ada@example.com"}),
                              {"kind": "resize", "payload": {"image": 7}, "priority": 5}])
        typer.echo(f"enqueued jobs {ids} into {db}")
        job = q.claim("worker-a", lease=0.05)
        typer.echo(f"worker-a claimed job {job.id} ({job.kind}, priority {job.priority}) "
                   f"with token {job.token}")
        time.sleep(0.1)  # worker-a stalls past its 50 ms lease
        typer.echo(f"worker-a stalled; the reaper returned {q.reap()} expired job(s) to pending")
        time.sleep(0.02)  # the retry backoff
        again = q.claim("worker-b")
        typer.echo(f"worker-b claimed job {again.id} (attempt {again.attempts}) "
                   f"with token {again.token}")
        try:
            q.complete(job.id, job.token, {"by": "worker-a"})
        except LeaseLost as e:
            typer.echo(f"worker-a woke up and tried to complete: {e}")
        q.complete(again.id, again.token, {"by": "worker-b"})
        typer.echo(f"worker-b completed job {again.id}: result {q.get(again.id).result}")
        other = q.claim("worker-b")
        q.complete(other.id, other.token)
        typer.echo(f"worker-b completed job {other.id} ({other.kind})")
        s = q.stats()
        typer.echo(f"done: {s.succeeded_recent} succeeded, {s.pending} pending, {s.dead} dead")


def main() -> int:
    try:
        app()
    except JobqError as e:
        print(f"jobq: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
