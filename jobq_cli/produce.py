"""``jobq enqueue``: one job from the arguments, or many from stdin (one JSON job a line).

Bulk loads are read and checked in full before the first batch is written, so a bad line
anywhere means nothing is written.
"""
from __future__ import annotations

import math
import sys
from typing import Annotated, Any, Optional

import typer

from jobq_core import encode_json

from .common import DEFAULT_DB, DbOption, JsonOption, fail, friendly, open_queue, parse_json, print_json

BATCH = 1000
_KEYS = ("kind", "payload", "queue", "priority", "delay", "max_attempts", "unique_key")
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
        "\"priority\": ..., \"delay\": ..., \"max_attempts\": ..., \"unique_key\": ...}; "
        "KIND and the options are defaults for lines that leave them out."))] = False,
    db: DbOption = DEFAULT_DB,
    as_json: JsonOption = False,
) -> None:
    """Add a job and print its id (alone on stdout, for scripts)."""
    defaults = {"kind": kind, "queue": queue, "priority": priority, "delay": delay,
                "max_attempts": max_attempts, "unique_key": unique_key}
    if stdin:
        if payload is not None:
            fail("with --stdin, payloads come from stdin, not the command line")
        plain = defaults == _DEFAULTS | {"kind": kind}  # no option changes a default
        jobs = [_line_job(line, n, defaults, plain)
                for n, line in enumerate(sys.stdin, 1) if line.strip()]
    else:
        if kind is None:
            fail("give a KIND (or --stdin)")
        data = None if payload is None else parse_json(payload, "PAYLOAD_JSON")
        jobs = [_checked({**defaults, "payload": data}, "")]
    with open_queue(db, create=True) as q:
        ids: list[int] = []
        for start in range(0, len(jobs), BATCH):
            ids += q.enqueue_many(jobs[start:start + BATCH])
    if as_json:
        print_json({"id": ids[0]} if not stdin else {"ids": ids, "count": len(ids)})
    else:
        sys.stdout.write("".join(f"{i}\n" for i in ids))


_DEFAULTS = {"kind": None, "queue": "default", "priority": 0, "delay": 0.0, "max_attempts": None,
             "unique_key": None}


def _line_job(line: str, n: int, defaults: dict[str, Any], plain: bool) -> dict | tuple:
    item = parse_json(line, f"stdin line {n}")
    if plain and type(item) is dict and item.keys() <= _PLAIN_KEYS:
        # Only a kind and a payload, with every option at its default: the (kind, payload)
        # form, which enqueue_many takes without looking at options.
        kind = item.get("kind", defaults["kind"])
        if not isinstance(kind, str) or not kind:
            fail(f"stdin line {n}: kind must be a non-empty string, got {kind!r:.60}")
        payload = item.get("payload")
        _check_payload(payload, f"stdin line {n}: ")
        return (kind, payload)
    if not isinstance(item, dict):
        fail(f"stdin line {n}: expected a JSON object, got {type(item).__name__}")
    unknown = set(item) - set(_KEYS)
    if unknown:
        fail(f"stdin line {n}: unknown key(s) {', '.join(sorted(unknown))}; "
             f"known: {', '.join(_KEYS)}")
    return _checked({**defaults, "payload": None, **item}, f"stdin line {n}: ")


def _checked(job: dict[str, Any], where: str) -> dict[str, Any]:
    """The checks ``Queue.enqueue`` makes, made before anything is written."""
    for key in ("kind", "queue"):
        if not isinstance(job[key], str) or not job[key]:
            fail(f"{where}{key} must be a non-empty string, got {job[key]!r:.60}")
    if job["unique_key"] is not None and (not isinstance(job["unique_key"], str)
                                          or not job["unique_key"]):
        fail(f"{where}unique_key must be a non-empty string, got {job['unique_key']!r:.60}")
    for key, low in (("priority", None), ("max_attempts", 1)):
        value = job[key]
        if value is None and key == "max_attempts":
            continue
        if not isinstance(value, int) or isinstance(value, bool) or (low is not None and value < low):
            fail(f"{where}{key} must be an integer{'' if low is None else f' >= {low}'}, "
                 f"got {value!r:.60}")
    d = job["delay"]
    if isinstance(d, bool) or not isinstance(d, (int, float)) or not math.isfinite(d) or d < 0:
        fail(f"{where}delay must be a number of seconds >= 0, got {d!r:.60}")
    _check_payload(job["payload"], where)
    return {k: v for k, v in job.items() if v is not None or k == "payload"}


def _check_payload(payload: Any, where: str) -> None:
    try:
        encode_json(payload)
    except ValueError as e:  # NaN, Infinity, lone surrogates
        fail(f"{where}{e}")
