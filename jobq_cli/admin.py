"""Commands for looking at and repairing a queue: stats, list, show, workers, retry,
cancel, reap, prune. None of them creates a missing database file."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from jobq_core import JobNotFound, JobStatus

from . import render
from .common import DEFAULT_DB, DbOption, JsonOption, fail, friendly, open_queue, parse_duration, print_json

_STATUSES = ", ".join([*JobStatus, "scheduled", "retrying"])


@friendly
def stats(db: DbOption = DEFAULT_DB, as_json: JsonOption = False,
          window: Annotated[str, typer.Option(help="Count finished jobs over this long.")] = "1h",
          ) -> None:
    """Counts by status and queue, queue lag, and recent outcomes."""
    seconds = parse_duration(window)
    with open_queue(db) as q:
        s = q.stats(window=seconds)
    if as_json:
        print_json(render.stats_json(s))
    else:
        render.console().print(render.stats_view(s, str(db)))


@friendly
def list_jobs(
    db: DbOption = DEFAULT_DB,
    status: Annotated[Optional[str], typer.Option(help=f"One of: {_STATUSES}.")] = None,
    queue: Annotated[Optional[str], typer.Option(help="Only this queue.")] = None,
    kind: Annotated[Optional[str], typer.Option(help="Only this kind.")] = None,
    limit: Annotated[int, typer.Option(min=0, help="At most this many jobs.")] = 50,
    as_json: JsonOption = False,
) -> None:
    """Jobs, newest first (pending: in claim order; running: nearest lease end first)."""
    with open_queue(db) as q:
        jobs = q.list(status, queue, kind, limit=limit, payloads=as_json)  # the table omits them
        now = q.clock.now()
    if as_json:
        print_json([render.job_json(j) for j in jobs])
    elif not jobs:
        typer.echo("no jobs match", err=True)
    else:
        render.console().print(render.jobs_table(jobs, now))


@friendly
def show(job_id: Annotated[int, typer.Argument(metavar="ID")], db: DbOption = DEFAULT_DB,
         as_json: JsonOption = False) -> None:
    """One job in full: payload, result, last error with traceback, every attempt."""
    with open_queue(db) as q:
        job = q.get(job_id)
        if job is None:
            raise JobNotFound(job_id)
        attempts = q.attempts(job_id)
        now = q.clock.now()
    if as_json:
        print_json({**render.job_json(job), "history": [render.attempt_json(a) for a in attempts]})
    else:
        render.console().print(render.job_view(job, attempts, now))


@friendly
def workers(db: DbOption = DEFAULT_DB, as_json: JsonOption = False) -> None:
    """Registered workers, with how busy they are and when they last beat."""
    with open_queue(db) as q:
        ws = q.workers()
        now = q.clock.now()
    if as_json:
        print_json([render.worker_json(w, now) for w in ws])
    elif not ws:
        typer.echo("no workers registered", err=True)
    else:
        render.console().print(render.workers_table(ws, now))


@friendly
def retry(
    job_id: Annotated[Optional[int], typer.Argument(metavar="[ID]")] = None,
    all_dead: Annotated[bool, typer.Option("--all-dead", help="Retry every dead job.")] = False,
    queue: Annotated[Optional[str], typer.Option(help="With --all-dead: only this queue.")] = None,
    kind: Annotated[Optional[str], typer.Option(help="With --all-dead: only this kind.")] = None,
    force: Annotated[bool, typer.Option("--force", help=(
        "Also take back a running job (stuck under a worker that will never finish it): "
        "its worker's lease is revoked, so that worker can no longer complete it."))] = False,
    db: DbOption = DEFAULT_DB,
    as_json: JsonOption = False,
) -> None:
    """Put a dead or cancelled job (or every dead job) back to pending.

    The job runs again now, with a fresh allowance of attempts."""
    if (job_id is None) == (not all_dead):
        fail("give a job ID or --all-dead (not both)")
    if job_id is not None and (queue or kind):
        fail("--queue and --kind only go with --all-dead")
    if force and job_id is None:
        fail("--force takes back one job: give its ID")
    with open_queue(db) as q:
        if job_id is not None:
            q.retry(job_id, force=force)
            n = 1
        else:
            n = q.retry_dead(queue=queue, kind=kind)
    if as_json:
        print_json({"retried": n})
    else:
        typer.echo(f"retried {n} job(s)")


@friendly
def cancel(job_id: Annotated[int, typer.Argument(metavar="ID")], db: DbOption = DEFAULT_DB,
           as_json: JsonOption = False) -> None:
    """Cancel a pending job now; ask a running job's handler to stop (ctx.cancelled)."""
    with open_queue(db) as q:
        status = q.cancel(job_id)
    if as_json:
        print_json({"id": job_id, "status": str(status)})
    elif status == JobStatus.CANCELLED:
        typer.echo(f"job {job_id} cancelled")
    else:
        typer.echo(f"job {job_id} is running: its worker was asked to stop it")


@friendly
def reap(db: DbOption = DEFAULT_DB, as_json: JsonOption = False) -> None:
    """Return running jobs whose lease ran out to the queue (workers do this on their own)."""
    with open_queue(db) as q:
        n = q.reap()
    if as_json:
        print_json({"reaped": n})
    else:
        typer.echo(f"reaped {n} job(s)")


@friendly
def prune(
    older_than: Annotated[str, typer.Option("--older-than", metavar="DURATION",
                                            help="e.g. 12h, 7d, 2w.")],
    db: DbOption = DEFAULT_DB,
    as_json: JsonOption = False,
) -> None:
    """Delete finished jobs older than DURATION, with their history.

    Only succeeded, dead and cancelled jobs are deleted; pending and running never."""
    seconds = parse_duration(older_than)
    with open_queue(db) as q:
        n = q.prune(seconds)
    if as_json:
        print_json({"pruned": n})
    else:
        typer.echo(f"pruned {n} job(s)")
