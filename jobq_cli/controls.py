"""Commands for the operator's controls: pause, resume, limit, queues, schedules. Pause,
resume and limit create jobq's tables in a new database, as ``jobq enqueue`` does (a deploy
sets its limits before the first job); the others never create one. Their ``--json`` keys
are documented in docs/reference/cli.md."""
from __future__ import annotations

from typing import Annotated, Any, Optional

import typer
from rich.text import Text

from jobq_core import Queue, QueueStats, Rate, Schedule, ScheduleInfo
from jobq_core.presentation.display import (
    drift_text, duration, limits_text, limits_words, timestamp,
)
from jobq_core.common.textsafe import clean

from . import render, tables
from .common import (
    DEFAULT_DB, INT64_MAX, DbOption, JsonOption, fail, friendly, open_queue, print_json, usage,
)

QueueArg = Annotated[str, typer.Argument(metavar="QUEUE", help="The queue's name.")]


@friendly
def pause(queue: QueueArg, db: DbOption = DEFAULT_DB, as_json: JsonOption = False) -> None:
    """Stop every worker from claiming QUEUE's jobs (running ones finish; enqueue works).

    The pause is kept in the database: it holds for all workers and across restarts."""
    with open_queue(db, create=True) as q:
        unknown = not _in_use(q, queue)
        q.pause(queue)
    if unknown:  # most often a typo: the real queue would still be running
        typer.echo(f"jobq: warning: no job or schedule uses queue "
                   f"{clean(repr(queue), limit=200)} yet; paused it anyway (jobq queues "
                   "lists the queues in use)", err=True)
    _said(as_json, {"queue": queue, "paused": True}, f"queue {queue!r} paused")


def _in_use(q: Queue, queue: str) -> bool:
    """A queue with jobs (even finished ones, until pruned), controls or a schedule."""
    return (queue in q.queues() or q.count(queue=queue) > 0
            or any(s.queue == queue for s in q.schedules()))


@friendly
def resume(queue: QueueArg, db: DbOption = DEFAULT_DB, as_json: JsonOption = False) -> None:
    """Let workers claim QUEUE's jobs again."""
    with open_queue(db, create=True) as q:
        q.resume(queue)
    _said(as_json, {"queue": queue, "paused": False}, f"queue {queue!r} resumed")


@friendly
def limit(
    queue: QueueArg,
    concurrency: Annotated[Optional[int], typer.Option(
        max=INT64_MAX, metavar="N",
        help="At most N of its jobs running at once, across all workers.")] = None,
    rate: Annotated[Optional[str], typer.Option(
        metavar="N/s|N/m|N/h", help="At most N of its jobs started per second, minute or hour.",
    )] = None,
    key_concurrency: Annotated[Optional[int], typer.Option(
        "--key-concurrency", max=INT64_MAX, metavar="N",
        help="At most N running jobs per key (enqueue --key), across all workers.")] = None,
    ordered: Annotated[Optional[bool], typer.Option(
        "--ordered/--unordered",
        help="Run the jobs of each key one at a time, in enqueue order (--unordered: "
             "no longer).")] = None,
    clear: Annotated[bool, typer.Option(
        "--clear", help="Remove the queue's limits (then set only those given).")] = False,
    code: Annotated[bool, typer.Option(
        "--code", help="Set the limits the application's code declares (Registry.queue), "
        "as the last worker that applied them recorded them.")] = False,
    db: DbOption = DEFAULT_DB,
    as_json: JsonOption = False,
) -> None:
    """Limit how many of QUEUE's jobs run at once, start per window, or run per key.

    A limit not given is kept as it is; --clear removes them all first. Limits declared in
    code are applied by a worker that starts with a declaration other than the one the
    database recorded; a change made here holds until then (jobq queues shows both)."""
    given = (concurrency, rate, key_concurrency, ordered)
    if code:
        if clear or any(v is not None for v in given):
            usage("--code sets the code's limits: give it alone")
        with open_queue(db, create=True) as q:
            declared = q.declared_limits().get(queue)
            if declared is None:
                fail(f"no code declares the limits of queue {queue!r} (a worker records "
                     "those of its registry when it starts)")
            q.set_limit(queue, concurrency=declared.concurrency, rate=declared.rate,
                        key_concurrency=declared.key_concurrency, ordered=declared.ordered)
        _said(as_json, {"queue": queue, **render.limits_json(declared)},
              f"queue {queue!r}: {limits_words(declared)}, as the code declares")
        return
    if all(v is None for v in given) and not clear:
        usage("give --concurrency N, --rate N/s (or N/m, N/h), --key-concurrency N, "
              "--ordered, --clear or --code")
    if concurrency is not None and concurrency < 1:
        usage(f"--concurrency must be at least 1, got {concurrency}")
    if key_concurrency is not None and key_concurrency < 1:
        usage(f"--key-concurrency must be at least 1, got {key_concurrency}")
    try:
        new_rate = None if rate is None else Rate.parse(rate)
    except ValueError as e:
        usage(str(e))
    with open_queue(db, create=True) as q:
        current = QueueStats() if clear else q.queues().get(queue, QueueStats())
        concurrency = concurrency if concurrency is not None else current.concurrency
        new_rate = new_rate or current.rate
        if key_concurrency is None:
            key_concurrency = current.key_concurrency
        ordered = current.ordered if ordered is None else ordered
        q.set_limit(queue, concurrency=concurrency, rate=new_rate,
                    key_concurrency=key_concurrency, ordered=ordered)
    parts = ([f"concurrency {concurrency}"] * (concurrency is not None)
             + [f"rate {new_rate}"] * (new_rate is not None)
             + [f"key concurrency {key_concurrency}"] * (key_concurrency is not None)
             + ["ordered by key"] * ordered)
    said = f"queue {queue!r}: " + (", ".join(parts) or "no limits")
    _said(as_json, {"queue": queue, "concurrency": concurrency,
                    "rate": None if new_rate is None else str(new_rate),
                    "key_concurrency": key_concurrency, "ordered": ordered}, said)


@friendly
def queues(db: DbOption = DEFAULT_DB, as_json: JsonOption = False) -> None:
    """Every queue with pending, running or dead jobs, or with controls (paused, limits):
    its counts, whether it is paused, and its limits (and the code's, when they differ:
    Registry.queue). A queue whose jobs have all finished well is not listed."""
    with open_queue(db) as q:
        stats = q.stats(window=1.0)
    if as_json:
        print_json([queue_json(name, qs, stats.now) for name, qs in stats.queues.items()])
    elif not stats.queues:
        typer.echo("no queues (no jobs and no controls)", err=True)
    else:
        tables.print_table(render.console(), QUEUE_COLS, queues_rows(stats.queues, stats.now))


@friendly
def schedules(
    forget: Annotated[Optional[str], typer.Option(
        "--forget", metavar="KEY",
        help="Delete the recorded schedule with this key (see --json) first: one no "
             "worker declares any more.")] = None,
    db: DbOption = DEFAULT_DB, as_json: JsonOption = False,
) -> None:
    """Every periodic schedule the workers have recorded: its spec, last and next tick."""
    with open_queue(db) as q:
        if forget is not None and not q.forget_schedule(forget):
            fail(f"no recorded schedule has the key {forget!r} (jobq schedules --json lists "
                 "the keys)")
        infos = q.schedules()
        now = q.clock.now()
    if as_json:
        print_json([schedule_json(s, now) for s in infos])
    elif not infos:
        typer.echo("no schedules recorded (workers record those of their registry)", err=True)
    else:
        tables.print_table(render.console(), SCHEDULE_COLS, schedules_rows(infos, now))


def _said(as_json: bool, value: dict[str, Any], text: str) -> None:
    if as_json:
        print_json(value)
    else:
        render.console().print(render.cell(text, limit=200))


# -- JSON and tables --------------------------------------------------------------------------

def queue_json(name: str, qs: QueueStats, now: float) -> dict[str, Any]:
    return {"queue": name, "pending": qs.pending, "running": qs.running, "dead": qs.dead,
            "oldest_pending_age": None if qs.oldest_pending_at is None
            else max(0.0, now - qs.oldest_pending_at), "held": qs.held,
            "paused": qs.paused, "concurrency": qs.concurrency,
            "rate": None if qs.rate is None else str(qs.rate),
            "key_concurrency": qs.key_concurrency, "ordered": qs.ordered,
            "keys_busy": qs.keys_busy,
            "declared": None if qs.declared is None else render.limits_json(qs.declared),
            "drift": qs.drift}



QUEUE_COLS = (
    tables.Col("QUEUE", tables.NEVER_DROPPED, fixed=True),  # the name pause and limit take
    tables.Col("STATE", 96, fixed=True), tables.Col("PENDING", 95, fixed=True, justify="right"),
    tables.Col("RUNNING", 94, fixed=True, justify="right"),
    tables.Col("DEAD", 80, fixed=True, justify="right"),
    tables.Col("LAG", 70, fixed=True, justify="right"),
    tables.Col("LIMITS", 85, least=6, want=12, shrink=2),
)


def queues_rows(queues: dict[str, QueueStats], now: float) -> list[list[Text | str]]:
    rows: list[list[Text | str]] = []
    for name, qs in queues.items():
        lag = None if qs.oldest_pending_at is None else max(0.0, now - qs.oldest_pending_at)
        running = (f"{qs.running}/{qs.concurrency}" if qs.concurrency is not None
                   else str(qs.running))
        rows.append([render.cell(name, limit=None),
                     Text("⏸ paused", "yellow") if qs.paused else Text("active", "dim"),
                     str(qs.pending), running, str(qs.dead),
                     "-" if lag is None else duration(lag), _limits_cell(qs)])
    return rows


def _limits_cell(qs: QueueStats) -> Text:
    """LIMITS: what the database holds; when the code declares others, those too, marked."""
    cell = Text(limits_text(qs) or "-")
    if qs.drift:
        cell.append(f"  ≠ {drift_text(qs)}", "yellow")
    return cell


def next_tick(info: ScheduleInfo, now: float) -> float | None:
    schedule = Schedule.from_info(info)
    return None if schedule is None else schedule.next_tick(now)


def schedule_json(s: ScheduleInfo, now: float) -> dict[str, Any]:
    return {"key": s.key, "kind": s.kind, "queue": s.queue, "every": s.every, "cron": s.cron,
            "tz": s.tz, "last_tick": s.last_tick, "last_job": s.last_job,
            "next_tick": next_tick(s, now)}


SCHEDULE_COLS = (
    tables.Col("KIND", tables.NEVER_DROPPED, least=8, want=16, shrink=2),
    tables.Col("QUEUE", 60, least=6, want=10, shrink=1),
    tables.Col("SCHEDULE", 90, least=10, want=18, shrink=3),
    tables.Col("LAST TICK", 80, fixed=True, justify="right"),
    tables.Col("JOB", 30, fixed=True, justify="right"),
    tables.Col("NEXT TICK", 35, fixed=True), tables.Col("IN", 95, fixed=True, justify="right"),
)


def schedules_rows(infos: list[ScheduleInfo], now: float) -> list[list[Text | str]]:
    rows: list[list[Text | str]] = []
    for s in infos:
        nxt = next_tick(s, now)
        rows.append([render.cell(s.kind, limit=60), render.cell(s.queue, limit=40),
                     render.cell(s.spec, limit=60),
                     f"{duration(max(0.0, now - s.last_tick))} ago"
                     if s.last_tick is not None and s.last_job is not None else "-",
                     "-" if s.last_job is None else str(s.last_job),
                     "?" if nxt is None else timestamp(nxt),
                     "?" if nxt is None else duration(max(0.0, nxt - now))])
    return rows
