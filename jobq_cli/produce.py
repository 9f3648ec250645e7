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
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Optional

import typer

from jobq_core import JobqError, Queue, prepare

from .common import DEFAULT_DB, DbOption, JsonOption, fail, friendly, open_queue, parse_json, print_json

BATCH = 500
_PLAIN_KEYS = frozenset({"kind", "payload"})


@friendly
def enqueue(
    kind: Annotated[Optional[str], typer.Argument(metavar="[KIND]",
                                                  help="The job's kind (its handler).")] = None,
    payload: Annotated[Optional[str], typer.Argument(metavar="[PAYLOAD_JSON]",
                                                     help="JSON payload (default: null).")] = None,
    queue: Annotated[str, typer.Option(help="Queue name.")] = "default",
    priority: Annotated[int, typer.Option(help="Higher runs first.")] = 0,
    delay: Annotated[float, typer.Option(help="Seconds to wait before it may run.")] = 0.0,
    max_attempts: Annotated[Optional[int], typer.Option(help="Attempts before it goes dead.")] = None,
    unique_key: Annotated[Optional[str], typer.Option(
        help="While a job with this key is pending or running, return its id instead.")] = None,
    stdin: Annotated[bool, typer.Option("--stdin", help=(
        "Read one JSON job per line: {\"kind\": ..., \"payload\": ..., \"queue\": ..., "
        "\"priority\": ..., \"delay\": ..., \"run_at\": ..., \"max_attempts\": ..., "
        "\"unique_key\": ...}; KIND and the options are defaults for lines that leave them "
        "out. Every line is checked before the first write; ids are printed per committed "
        f"batch of {BATCH}."))] = False,
    db: DbOption = DEFAULT_DB,
    as_json: JsonOption = False,
) -> None:
    """Add a job and print its id (alone on stdout, for scripts)."""
    defaults = {"kind": kind, "queue": queue, "priority": priority, "delay": delay,
                "max_attempts": max_attempts, "unique_key": unique_key}
    defaults = {k: v for k, v in defaults.items() if v is not None}
    if stdin:
        if payload is not None:
            fail("with --stdin, payloads come from stdin, not the command line")
        plain = defaults.keys() <= {"kind", "queue", "priority", "delay"} and \
            (queue, priority, delay) == ("default", 0, 0.0)  # no option changes a default
        items = [(n, _line_item(line, n, defaults, plain))
                 for n, line in enumerate(sys.stdin, 1) if line.strip()]
    else:
        if kind is None:
            fail("give a KIND (or --stdin)")
        data = None if payload is None else parse_json(payload, "PAYLOAD_JSON")
        items = [(0, {**defaults, "payload": data})]
    jobs = [_prepared(item, n) for n, item in items]
    with open_queue(db, create=True) as q:
        if not stdin:
            job_id = q.enqueue_many(jobs)[0]
            print_json({"id": job_id}) if as_json else print(job_id)
            return
        _load(q, jobs, as_json)


def _line_item(line: str, n: int, defaults: dict[str, Any], plain: bool) -> dict | tuple:
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


def _prepared(item: dict | tuple, n: int) -> Any:
    """Every check enqueue makes, made now: a bad line writes nothing."""
    if isinstance(item, dict) and "kind" not in item:
        fail(f"stdin line {n}: no kind (give one on the line or as KIND)")
    try:
        return prepare([item])[0]
    except (JobqError, ValueError, TypeError) as e:
        fail(f"{f'stdin line {n}: ' if n else ''}{e}")


def _load(q: Queue, jobs: list, as_json: bool) -> None:
    """Write in batches, printing each batch's ids as its commit returns."""
    stored = 0
    with _deferred_interrupts() as interrupted:
        for start in range(0, len(jobs), BATCH):
            try:
                ids = q.enqueue_many(jobs[start:start + BATCH])
            except Exception as e:
                if not stored:
                    raise
                fail(f"{e} ({_stored(stored, len(jobs))} before it)")
            if as_json:
                print_json({"ids": ids, "count": len(ids)})
            else:
                sys.stdout.write("".join(f"{i}\n" for i in ids))
            sys.stdout.flush()
            stored += len(ids)
            if interrupted and stored < len(jobs):
                print(f"jobq: interrupted: {_stored(stored, len(jobs))}; the rest were not "
                      "written", file=sys.stderr)
                raise typer.Exit(130)


def _stored(stored: int, total: int) -> str:
    return f"{stored} of {total} jobs stored, their ids printed"


@contextmanager
def _deferred_interrupts() -> Iterator[list]:
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
