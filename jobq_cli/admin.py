"""Commands for looking at and repairing a queue: stats, list, show, workers, retry,
cancel, reap, prune. None of them creates a missing database file."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from jobq_core import LIST_STATUSES, JobNotFound, JobStatus, WorkerState
from jobq_core.common.textsafe import clean

from . import render
from .common import (
    DEFAULT_DB, DbOption, Duration, JsonOption, friendly, open_queue, print_json, typed,
    usage,
)

_STATUSES = ", ".join(LIST_STATUSES)
HELD_READ = 1000  # running jobs read to count what a lost worker still holds


@friendly
def stats(db: DbOption = DEFAULT_DB, as_json: JsonOption = False,
          window: Annotated[float, Duration("Count finished jobs over this long.")] = typed("1h"),
          ) -> None:
    """Counts by status, queue lag, and recent outcomes; per queue (those with pending,
    running or dead jobs, or with controls), its counts; the health of jobq's tables
    (dead rows and held-back vacuum, or the WAL), with a warning past the bounds."""
    seconds = window
    with open_queue(db) as q:
        s = q.stats(window=seconds)
        health = q.db_health()
    if as_json:
        print_json({**render.stats_json(s), "database": render.health_json(health)})
    else:
        render.print_stats(s, str(db), health)


@friendly
def list_jobs(
    db: DbOption = DEFAULT_DB,
    status: Annotated[Optional[str], typer.Option(metavar="STATUS", help=f"One of: {_STATUSES}.")] = None,
    queue: Annotated[Optional[str], typer.Option(metavar="QUEUE", help="Only this queue.")] = None,
    kind: Annotated[Optional[str], typer.Option(metavar="KIND", help="Only this kind.")] = None,
    key: Annotated[Optional[str], typer.Option(
        metavar="KEY", help="Only the jobs of this concurrency key.")] = None,
    limit: Annotated[int, typer.Option(min=0, metavar="N", help="At most this many jobs.")] = 50,
    as_json: JsonOption = False,
) -> None:
    """Jobs, newest first (pending: in claim order; running: nearest lease end first)."""
    if status is not None and status not in LIST_STATUSES:
        usage(f"unknown status {status!r}; expected one of {_STATUSES}")
    with open_queue(db) as q:
        jobs = q.list(status, queue, kind, key=key, limit=limit,
                      payloads=as_json)  # the table omits payloads
        now = q.clock.now()
        workers = [] if as_json else q.workers()
    if as_json:
        print_json([render.job_json(j) for j in jobs])
    elif not jobs:
        typer.echo("no jobs match", err=True)
    else:
        render.print_jobs(jobs, now, render.worker_states(workers, now))


@friendly
def show(job_id: Annotated[int, typer.Argument(metavar="ID", help="The job's id.")],
         db: DbOption = DEFAULT_DB,
         as_json: JsonOption = False) -> None:
    """One job in full: payload, result, last error with traceback, every attempt."""
    with open_queue(db) as q:
        job = q.get(job_id)
        if job is None:
            raise JobNotFound(job_id)
        attempts = q.attempts(job_id)
        deps = q.dependencies(job_id)
        now = q.clock.now()
    if as_json:
        print_json({**render.job_json(job), **render.links_json(deps),
                    "history": [render.attempt_json(a) for a in attempts]})
    else:
        render.console().print(render.job_view(job, attempts, now, deps))
        if attempts:
            render.print_attempts(attempts, now)


@friendly
def why(job_id: Annotated[int, typer.Argument(metavar="ID", help="The job's id.")],
        db: DbOption = DEFAULT_DB,
        as_json: JsonOption = False) -> None:
    """Why a job is not running (or how it ended): one reason and a sentence.

    Reasons, the first that applies: running, waiting, paused, queue_limit, rate_limit,
    scheduled, retry, no_worker, ready; for a finished job succeeded, dead or cancelled."""
    with open_queue(db) as q:
        answer = q.why(job_id)
    if as_json:
        print_json({"id": answer.job_id, "reason": answer.reason, "message": answer.message,
                    **answer.details})
    else:
        print(f"job {answer.job_id}: {answer.reason}: {clean(answer.message, limit=500)}")


@friendly
def workers(db: DbOption = DEFAULT_DB, as_json: JsonOption = False,
            forget_lost: Annotated[bool, typer.Option(
                "--forget-lost", help="Delete the registry entries of lost workers (their "
                "jobs come back when their leases run out; one that beats again registers "
                "again).")] = False,
            ) -> None:
    """Registered workers: state (ok, late, lost), how busy, when they last beat.

    Each is judged by the heartbeat interval it recorded: late after one missed beat, lost
    after two. A worker silent for 5 minutes (or ten of its beats) is forgotten. ROLE
    leader: the one worker that runs maintenance (reaper, retention, schedules)."""
    with open_queue(db) as q:
        ws = q.workers()
        now = q.clock.now()
        lead = q.leader()
        leader = lead.worker if lead is not None and lead.expires_at > now else None
        forgotten: list[str] = []
        if forget_lost:
            lost = [w for w in ws if render.worker_state(w, now) == WorkerState.LOST]
            q.forget_workers(lost)
            forgotten = [w.id for w in lost]
            ws = q.workers()
        held: dict[str, int] = {}
        if not as_json:
            for job in q.list("running", limit=HELD_READ, payloads=False):
                held[job.worker or ""] = held.get(job.worker or "", 0) + 1
    if as_json:
        listed = [render.worker_json(w, now, leader) for w in ws]
        print_json({"forgotten": forgotten, "workers": listed} if forget_lost else listed)
        return
    if forget_lost:
        typer.echo(f"forgot {len(forgotten)} lost worker(s)"
                   + (": " + ", ".join(clean(i, limit=60) for i in forgotten) if forgotten
                      else ""), err=True)
    if not ws:
        typer.echo("no workers registered", err=True)
    else:
        render.print_workers(ws, now, held, leader)


@friendly
def retry(
    job_id: Annotated[Optional[int], typer.Argument(
        metavar="ID", show_default=False, help="The job's id.")] = None,
    all_dead: Annotated[bool, typer.Option("--all-dead", help="Retry every dead job.")] = False,
    queue: Annotated[Optional[str], typer.Option(metavar="QUEUE", help="With --all-dead: only this queue.")] = None,
    kind: Annotated[Optional[str], typer.Option(metavar="KIND", help="With --all-dead: only this kind.")] = None,
    force: Annotated[bool, typer.Option("--force", help=(
        "Also take back a running job (stuck under a worker that will never finish it): "
        "its worker's lease is revoked, so that worker can no longer complete it."))] = False,
    db: DbOption = DEFAULT_DB,
    as_json: JsonOption = False,
) -> None:
    """Put a dead or cancelled job (or every dead job) back to pending.

    The job runs again now, with a fresh allowance of attempts."""
    if (job_id is None) == (not all_dead):
        usage("give a job ID or --all-dead (not both)")
    if job_id is not None and (queue or kind):
        usage("--queue and --kind only go with --all-dead")
    if force and job_id is None:
        usage("--force takes back one job: give its ID")
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
def cancel(job_id: Annotated[int, typer.Argument(metavar="ID", help="The job's id.")],
           terminate: Annotated[bool, typer.Option(
               "--terminate", help="A running job too is cancelled now, its attempt "
               "recorded, and its worker stops the run within about a second (a process-"
               "pool child is killed and replaced, an async handler cancelled; a thread is "
               "only asked, through ctx.cancelled).")] = False,
           db: DbOption = DEFAULT_DB,
           as_json: JsonOption = False) -> None:
    """Cancel a pending job now; ask a running job's handler to stop (ctx.cancelled), or
    with --terminate stop it."""
    with open_queue(db) as q:
        status = q.cancel(job_id, terminate=terminate)
    if as_json:
        print_json({"id": job_id, "status": str(status)})
    elif status == JobStatus.CANCELLED and terminate:
        typer.echo(f"job {job_id} cancelled (a run of it is stopped by its worker within "
                   "about a second)")
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
    older_than: Annotated[float, Duration("Jobs finished longer ago than this: 12h, 7d, 2w.",
                                          "--older-than")],
    dead: Annotated[bool, typer.Option(
        "--dead", help="Delete dead jobs too (kept by default: they are what an operator "
                       "investigates).")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Say how many jobs of each status would be deleted; delete "
                          "nothing.")] = False,
    db: DbOption = DEFAULT_DB,
    as_json: JsonOption = False,
) -> None:
    """Delete finished jobs older than DURATION, with their history.

    Succeeded and cancelled jobs, and dead ones with --dead; pending and running never."""
    with open_queue(db) as q:
        counts = q.prune_by_status(older_than, dead=dead, dry_run=dry_run)
        kept = 0 if dead else q.prune_by_status(older_than, dry_run=True).get("dead", 0)
    total = sum(counts.values())
    if as_json:
        print_json({"pruned": 0 if dry_run else total, "dry_run": dry_run,
                    "by_status": counts, "dead_kept": kept})
        return
    what = ", ".join(f"{n} {status}" for status, n in counts.items())
    age = render.span(older_than)
    if dry_run:
        typer.echo(f"would delete {total} job(s) finished over {age} ago ({what}); "
                   "nothing deleted (--dry-run)")
    else:
        typer.echo(f"deleted {total} job(s) finished over {age} ago ({what})")
    if kept:
        typer.echo(f"kept {kept} dead job(s) as old (--dead deletes them too)")
