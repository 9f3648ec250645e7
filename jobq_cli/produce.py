"""``jobq enqueue``: one job from the arguments, or many from stdin (one JSON job a line).

A bulk load is read and checked in full (JSON, types, integer ranges, payload size) before
the first batch is written, so a bad line anywhere writes nothing. Then each batch's ids are
printed and flushed as soon as its commit returns: whatever stops the load part-way (an
error, Ctrl-C, a kill), stdout lists exactly the jobs stored — at most the batch committing
at the instant of a SIGKILL is stored without its ids.
"""
from __future__ import annotations

import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated, Any, Optional

import typer

from jobq_core import JobqError, Queue, Registry, prepare
from jobq_core.common.textsafe import clean

from .common import (
    DEFAULT_DB, DbOption, Duration, JsonOption, fail, friendly, open_queue, parse_json,
    print_json, typed, usage,
)
from .run import load_registry

BATCH = 500
_PLAIN_KEYS = frozenset({"kind", "payload"})
# One job to enqueue: enqueue's arguments by name, or the (kind, payload) form.
Item = dict[str, Any] | tuple[Any, ...]


@friendly
def enqueue(
    kind: Annotated[Optional[str], typer.Argument(metavar="KIND",
                                                  help="The job's kind (its handler).")] = None,
    payload: Annotated[Optional[str], typer.Argument(metavar="PAYLOAD_JSON",
                                                     help="JSON payload (default: null).")] = None,
    queue: Annotated[str, typer.Option(metavar="QUEUE", help="Queue name.")] = "default",
    priority: Annotated[int, typer.Option(metavar="N", help="Higher runs first.")] = 0,
    delay: Annotated[float, Duration("How long to wait before it may run (90, 90s, 1h).")
                     ] = typed("0s"),
    max_attempts: Annotated[Optional[int], typer.Option(metavar="N", help="Attempts before it goes dead.")] = None,
    unique_key: Annotated[Optional[str], typer.Option(metavar="KEY",
        help="While a job with this key is pending or running, return its id instead.")] = None,
    key: Annotated[Optional[str], typer.Option(metavar="KEY", help=(
        "The job's concurrency key: its queue's key limits (jobq limit --key-concurrency, "
        "--ordered) apply per key."))] = None,
    after: Annotated[Optional[str], typer.Option(metavar="IDS", help=(
        "Run only after these jobs succeeded (comma-separated ids); until then the job is "
        "waiting, and one of them ending dead or cancelled cancels it."))] = None,
    allow_failed: Annotated[bool, typer.Option("--allow-failed", help=(
        "With --after: run once they have all ended, however they ended."))] = False,
    stdin: Annotated[bool, typer.Option("--stdin", help=(
        "Read one JSON job per line: {\"kind\": ..., \"payload\": ..., \"queue\": ..., "
        "\"priority\": ..., \"delay\": ..., \"run_at\": ..., \"max_attempts\": ..., "
        "\"unique_key\": ..., \"key\": ...}; KIND and the options are defaults for lines that "
        "leave them out. Every line is checked before the first write; ids are printed per committed "
        f"batch of {BATCH}."))] = False,
    app: Annotated[Optional[str], typer.Option("--app", metavar="MODULE[:ATTR]", help=(
        "The task registry the workers run: warn when it has no handler for the kind, and "
        "check a typed payload against its handler's type."))] = None,
    db: DbOption = DEFAULT_DB,
    as_json: JsonOption = False,
) -> None:
    """Add a job and print its id (alone on stdout, for scripts)."""
    if key is not None:
        try:
            prepare([{"kind": "k", "key": key}])  # the check enqueue makes, as a usage error
        except ValueError as e:
            usage(f"--{e}")  # "--key must be ..."
    defaults = {"kind": kind, "queue": queue, "priority": priority, "delay": delay,
                "max_attempts": max_attempts, "unique_key": unique_key, "key": key}
    defaults = {k: v for k, v in defaults.items() if v is not None}
    after_ids = _ids(after) if after is not None else None
    if allow_failed and after_ids is None:
        usage("--allow-failed goes with --after")
    if stdin:
        if after_ids is not None:
            usage("--after takes one job; with --stdin, give each line its own \"after\"")
        if payload is not None:
            usage("with --stdin, payloads come from stdin, not the command line")
        plain = defaults.keys() <= {"kind", "queue", "priority", "delay"} and \
            (queue, priority, delay) == ("default", 0, 0.0)  # no option changes a default
        items: list[tuple[int, Item]] = [(n, _line_item(line, n, defaults, plain))
                                         for n, line in enumerate(sys.stdin, 1) if line.strip()]
    else:
        if kind is None:
            usage("give a KIND (or --stdin)")
        data = None if payload is None else parse_json(payload, "PAYLOAD_JSON", usage)
        items = [(0, {**defaults, "payload": data})]
    if app is not None:
        items = _checked_against(load_registry(app), items, app)
    jobs = [_prepared(item, n) for n, item in items]
    with open_queue(db, create=True) as q:
        if after_ids is not None:
            first = items[0][1]
            assert isinstance(first, dict)  # one job from the command line: its arguments
            job_id = q.enqueue(jobs[0].kind, first.get("payload"), queue=jobs[0].queue,
                               priority=jobs[0].priority, run_at=jobs[0].run_at,
                               max_attempts=jobs[0].max_attempts, unique_key=unique_key,
                               after=after_ids, allow_failed=allow_failed, key=key)
            print_json({"id": job_id, "existing": False}) if as_json else print(job_id)
            return
        if not stdin:
            before = q.clock.now()
            job_id = q.enqueue_many(jobs)[0]
            existing = bool(_existing(q, jobs, [job_id], before))
            if existing:
                print(f"jobq: a live job ({job_id}) already holds unique key "
                      f"{clean(jobs[0].unique_key, limit=200)!r}: its id is printed, and this "
                      "job's payload and options were not stored", file=sys.stderr)
            print_json({"id": job_id, "existing": existing}) if as_json else print(job_id)
            return
        _load(q, jobs, as_json)


def _ids(text: str) -> list[int]:
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if not ids or not all(part.isdigit() and 0 < int(part) < 2**63 for part in ids):
        usage(f"--after takes job ids separated by commas, got {text!r}")
    return [int(part) for part in ids]


def _existing(q: Queue, jobs: Sequence[Any], ids: Sequence[int], before: float) -> list[int]:
    """Which of ``ids`` name jobs that were already there: a job with a unique key that a
    pending or running job held gets that job's id, and nothing new is stored. Such a job
    was created before the enqueue began (``before``, read from the queue's clock), or by
    an earlier job of the same batch."""
    out, seen = [], set()
    for job, job_id in zip(jobs, ids):
        if job.unique_key is not None:
            if job_id in seen:  # an earlier line of this batch took the key
                out.append(job_id)
                continue
            seen.add(job_id)
            found = q.get(job_id)
            if found is not None and found.created_at < before:
                out.append(job_id)
    return out


def _line_item(line: str, n: int, defaults: dict[str, Any], plain: bool) -> Item:
    item = parse_json(line, f"stdin line {n}")
    if plain and type(item) is dict and item.keys() <= _PLAIN_KEYS:
        # Only a kind and a payload, with every option at its default: the (kind, payload)
        # form, which enqueue_many takes without looking at options.
        return (item.get("kind", defaults.get("kind")), item.get("payload"))
    if not isinstance(item, dict):
        fail(f"stdin line {n}: expected a JSON object, got {type(item).__name__}")
    merged = {**defaults, **item}
    if "run_at" in item and "delay" not in item:
        merged.pop("delay", None)  # a line's own run_at overrides --delay
    return merged


def _checked_against(registry: Registry, items: list[tuple[int, Item]], app: str
                     ) -> list[tuple[int, Item]]:
    """Warn (one line on stderr) of kinds ``registry`` has no handler for: such jobs fail
    every attempt until they go dead. A typed handler's payload is checked (and
    converted) as ``Task.enqueue`` would: a bad one writes nothing."""
    kinds = [item[0] if isinstance(item, tuple) else item.get("kind") for _, item in items]
    missing = sorted({k for k in kinds if isinstance(k, str) and k not in registry})
    if missing:
        print(f"jobq: warning: {app} has no handler for {', '.join(map(repr, missing))} "
              f"(it knows: {', '.join(registry.kinds())}); a worker running it would fail "
              "these jobs", file=sys.stderr)
    out: list[tuple[int, Item]] = []
    for n, item in items:
        kind, payload = item if isinstance(item, tuple) else (item.get("kind"), item.get("payload"))
        task = registry.get(kind) if isinstance(kind, str) else None
        if task is not None and task.payload_type is not None:
            try:
                payload = task.dump(payload)
            except (TypeError, ValueError) as e:
                fail(f"{f'stdin line {n}: ' if n else ''}{e}")
            item = (kind, payload) if isinstance(item, tuple) else {**item, "payload": payload}
        out.append((n, item))
    return out


def _prepared(item: Item, n: int) -> Any:  # a NewJob (not among jobq_core's public names)
    """Every check enqueue makes, made now: a bad line writes nothing."""
    if isinstance(item, dict) and "kind" not in item:
        fail(f"stdin line {n}: no kind (give one on the line or as KIND)")
    try:
        return prepare([item])[0]
    except (JobqError, ValueError, TypeError) as e:
        fail(f"{f'stdin line {n}: ' if n else ''}{e}")


def _load(q: Queue, jobs: list[Any], as_json: bool) -> None:
    """Write in batches, printing each batch's ids as its commit returns."""
    stored = found = 0
    with _deferred_interrupts() as interrupted:
        for start in range(0, len(jobs), BATCH):
            batch = jobs[start:start + BATCH]
            before = q.clock.now()
            try:
                ids = q.enqueue_many(batch)
            except Exception as e:
                if not stored:
                    raise
                fail(f"{e} ({_stored(stored, len(jobs))} before it)")
            existing = _existing(q, batch, ids, before)
            if as_json:
                print_json({"ids": ids, "count": len(ids), "existing": existing})
            else:
                sys.stdout.write("".join(f"{i}\n" for i in ids))
            sys.stdout.flush()
            stored += len(ids)
            found += len(existing)
            if interrupted and stored < len(jobs):
                print(f"jobq: interrupted: {_stored(stored, len(jobs))}; the rest were not "
                      "written", file=sys.stderr)
                raise typer.Exit(130)
    if found:
        print(f"jobq: {found} of {len(jobs)} lines had the unique key of a live job: that "
              "job's id is printed for each, and their payloads were not stored",
              file=sys.stderr)


def _stored(stored: int, total: int) -> str:
    return f"{stored} of {total} jobs stored, their ids printed"


@contextmanager
def _deferred_interrupts() -> Iterator[list[int]]:
    """Ctrl-C or SIGTERM during a load lets the batch being written commit (its ids are
    printed), then stops: the returned list is non-empty once a signal came."""
    interrupted: list[int] = []
    handler = lambda signum, _frame: interrupted.append(signum)  # noqa: E731
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield interrupted
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
