"""``jobq run``: import the user's registry and run a Worker on it.

Everything that can be wrong with the command line or the app module is reported before
the worker registers or claims anything.
"""
from __future__ import annotations

import importlib
import logging
import os
import sys
import time
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.text import Text

from jobq_core import PoolKind, Registry
from jobq_core.presentation.display import masked_url
from jobq_core.common.textsafe import clean

from . import metrics, render, tables
from .common import (
    DEFAULT_DB, INT64_MAX, DbOption, Duration, fail, friendly, open_queue, typed, usage,
)
from .tables import NEVER_DROPPED, Col

if TYPE_CHECKING:
    from jobq_core import Worker
    from jobq_core.observability.prometheus import MetricsServer

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def load_registry(ref: str) -> Registry:
    """``MODULE[:ATTR]`` -> the Registry it names (ATTR defaults to ``registry``). The
    current directory is put on ``sys.path`` first, as ``python -m`` would."""
    module_name, _, attr = ref.partition(":")
    attr = attr or "registry"
    if not module_name or not all(p.isidentifier() for p in module_name.split(".")) \
            or not attr.isidentifier():
        usage(f"--app must look like MODULE or MODULE:ATTR (e.g. myapp.tasks:registry), got {ref!r}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and module_name.startswith(e.name):
            fail(f"cannot import {module_name!r}: no such module (looked in {cwd} and sys.path)")
        fail(f"importing {module_name!r} failed: {type(e).__name__}: {e}")
    except BaseException as e:  # noqa: BLE001 - the user's module, any error at all
        fail(f"importing {module_name!r} failed: {type(e).__name__}: {e} "
             f"(run: python -c 'import {module_name}' for the traceback)")
    registry = getattr(module, attr, None)
    if registry is None:
        fail(f"module {module_name!r} has no attribute {attr!r}; "
             f"name the registry with --app {module_name}:NAME")
    if not isinstance(registry, Registry):
        fail(f"{module_name}:{attr} is a {type(registry).__name__}, not a jobq Registry")
    if not len(registry):
        fail(f"{module_name}:{attr} has no tasks registered")
    return registry


def app_name(ref: str) -> str:
    """``MODULE[:ATTR]`` as ``MODULE:ATTR``: where child processes import the registry."""
    module_name, _, attr = ref.partition(":")
    return f"{module_name}:{attr or 'registry'}"


@friendly
def run(
    app: Annotated[str, typer.Option("--app", metavar="MODULE[:ATTR]",
                                     help="Module with the task registry ('registry' by default).")],
    concurrency: Annotated[int, typer.Option(min=1, max=INT64_MAX, metavar="N",
                                             help="Jobs run at once.")] = 8,
    pool: Annotated[str, typer.Option(
        metavar="|".join(PoolKind),
        help="thread: handlers on threads of this process. process: in --concurrency child "
             "processes, which a task's timeout kills and whose crash fails only their job.",
    )] = PoolKind.THREAD.value,
    max_jobs_per_child: Annotated[Optional[int], typer.Option(
        max=INT64_MAX, metavar="K",
        help="--pool process: replace a child process after K jobs.")] = None,
    queue: Annotated[Optional[list[str]], typer.Option(
        "--queue", metavar="QUEUE",
        help="Only claim from this queue (repeatable; default: all).")] = None,
    lease: Annotated[float, Duration("Lease term (90, 90s, 2m).")] = typed("30s"),
    grace: Annotated[float, Duration(
        "How long running jobs get to finish on shutdown before they are released.")
    ] = typed("30s"),
    burst: Annotated[bool, typer.Option(
        "--burst", help="Exit (status 0) once no job is ready and none is running.")] = False,
    log_level: Annotated[str, typer.Option(metavar="LEVEL",
                                           help="DEBUG, INFO, WARNING or ERROR.")] = "INFO",
    synchronous: Annotated[Optional[str], typer.Option(
        metavar="NORMAL|FULL",
        help="FULL: every commit reaches the disk before it returns (survives power loss). "
             "Default: NORMAL on SQLite; the server's synchronous_commit on PostgreSQL.",
    )] = None,
    max_result_size: Annotated[Optional[int], typer.Option(
        min=2, max=INT64_MAX, metavar="BYTES", show_default=False,
        help="The largest result a handler may return, as JSON (default 10485760, "
             "10 MiB, as for payloads); a larger one fails its job, not retried.")] = None,
    max_lost_attempts: Annotated[Optional[int], typer.Option(
        min=0, max=INT64_MAX, metavar="N", show_default=False,
        help="A job whose last N attempts each lost their worker (the process died "
             "running it) goes dead as a poison job instead of being retried (default 3; "
             "0: never).")] = None,
    metrics_port: Annotated[Optional[int], typer.Option(
        metavar="PORT", min=0, max=65535,
        help="Serve Prometheus metrics on http://HOST:PORT/metrics while the worker runs "
             "(the queue's gauges and this worker's outcomes and durations).")] = None,
    metrics_host: Annotated[Optional[str], typer.Option(
        metavar="HOST", show_default=False,
        help="Address for --metrics-port (default 127.0.0.1, loopback: exposing it further "
             "is the operator's choice).")] = None,
    wait_for_db: Annotated[float, Duration(
        "How long to keep trying a database server that does not answer yet (down, "
        "starting up) before giving up, as for one lost later; 0: give up at once.",
        "--wait-for-db")] = typed("30s"),
    no_migrate: Annotated[bool, typer.Option(
        "--no-migrate", help="Refuse a database whose schema is older than this jobq's "
        "(or has none) instead of migrating it: run `jobq migrate` first.")] = False,
    db: DbOption = DEFAULT_DB,
) -> None:
    """Run a worker: claim jobs, run their handlers, record the outcomes.

    SIGTERM or Ctrl-C stops it gracefully; a second Ctrl-C exits at once."""
    level = log_level.upper()
    if level not in LOG_LEVELS:
        usage(f"--log-level must be one of {', '.join(LOG_LEVELS)}, got {log_level!r}")
    if not lease > 0:
        usage(f"--lease must be > 0 seconds, got {lease}")
    if not grace >= 0:
        usage(f"--grace must be >= 0 seconds, got {grace}")
    if not wait_for_db >= 0:
        usage(f"--wait-for-db must be >= 0 seconds, got {wait_for_db}")
    if synchronous is not None and synchronous.upper() not in ("NORMAL", "FULL"):
        usage(f"--synchronous must be NORMAL or FULL, got {synchronous!r}")
    if metrics_host is not None and metrics_port is None:  # it would be silently ignored
        usage("--metrics-host needs --metrics-port (the metrics are served only on a port)")
    if pool not in set(PoolKind):
        usage(f"--pool must be {' or '.join(PoolKind)}, got {pool!r}")
    kind = PoolKind(pool)
    if max_jobs_per_child is not None:
        if kind is not PoolKind.PROCESS:
            usage("--max-jobs-per-child applies to --pool process only")
        if max_jobs_per_child < 1:
            usage(f"--max-jobs-per-child must be >= 1, got {max_jobs_per_child}")
    registry = load_registry(app)
    durability: dict[str, Any] = ({} if synchronous is None
                                  else {"synchronous": synchronous.upper()})
    extra: dict[str, Any] = ({} if max_lost_attempts is None
                             else {"max_lost_attempts": max_lost_attempts})
    with open_queue(db, create=True, migrate=not no_migrate, **durability) as q:
        _setup_plain_logging(level)  # until the live view's, if any: the wait is logged
        # a PostgreSQL schema is checked (or migrated) now, not at the first claim
        q.check(wait=wait_for_db)
        from jobq_core import Worker  # the worker runtime loads only for `jobq run`

        worker = Worker(q, registry, concurrency=concurrency, queues=queue or None, lease=lease,
                        grace=grace, pool=kind, max_jobs_per_child=max_jobs_per_child,
                        app=app_name(app) if kind is PoolKind.PROCESS else None,
                        max_result_bytes=max_result_size, **extra)
        server: MetricsServer | None = None
        if metrics_port is not None:  # before the worker registers: a taken port stops here
            server = metrics.serve(worker, metrics_host or "127.0.0.1", metrics_port)
        try:
            if sys.stderr.isatty() and sys.stdout.isatty():
                _run_live(worker, level, str(db), burst, server)
            else:
                _say_where(server)
                worker.run(burst=burst)
        finally:
            if server is not None:
                server.close()


def _setup_plain_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("jobq")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


def _say_where(server: MetricsServer | None) -> None:
    if server is not None:
        host = f"[{server.host}]" if ":" in server.host else server.host
        logging.getLogger("jobq.metrics").info("serving metrics on http://%s:%d/metrics",
                                               host, server.port)


class TerminalLog(logging.Handler):
    """Log records on a terminal, above the live view: ``HH:MM:SS LEVEL    message``,
    wrapped at spaces to the terminal's width (``wrap_words``), the continuation lines
    under the message. Rich's log handler folded words at its message column's edge,
    cutting worker ids, kinds, paths and URLs in two even where a line had room for them.
    Text in a message is shown literally (``textsafe.clean``)."""

    STYLES = {"DEBUG": "dim", "WARNING": "yellow", "ERROR": "bold red", "CRITICAL": "bold red"}

    def __init__(self, console: Console):
        super().__init__()
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
            if record.exc_info:
                text += "\n" + logging.Formatter().formatException(record.exc_info)
            stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
            level = f"{record.levelname:<8} "
            indent = len(stamp) + 1 + len(level)
            lines = wrap_words(clean(text, multiline=True), max(indent + 8, self.console.width),
                               indent)
            out = Text.assemble((stamp + " ", "dim"), (level, self.STYLES.get(record.levelname, "")),
                                "\n".join(lines))
            self.console.print(out, soft_wrap=True)  # no wrapping but ours
        except Exception:
            self.handleError(record)


def wrap_words(text: str, width: int, indent: int) -> list[str]:
    """``text`` in lines of at most ``width`` columns, the first after an ``indent``-wide
    prefix, the others indented as much. Lines break at spaces only; a word too long for
    an indented line gets a line of its own from the first column, and only a word longer
    than the whole width is cut (no line may be wider than the terminal: the live view
    below would be drawn out of place)."""
    pad, room = " " * indent, width - indent
    out: list[str] = []
    for part in text.split("\n"):
        words = part.split()
        if words:  # a traceback's line keeps its indentation
            words[0] = part[:len(part) - len(part.lstrip())] + words[0]
        line, before = "", len(out)
        for word in words:
            if line and len(line) + 1 + len(word) <= room:
                line += " " + word
                continue
            if line:
                out.append(line if not out else pad + line)
                line = ""
            if len(word) <= room:
                line = word
                continue
            if not out:
                out.append("")  # the prefix alone: the word starts on the next line
            out += [word[i:i + width] for i in range(0, len(word), width)]
        if line or len(out) == before:
            out.append(line if not out else pad + line)
    return out


def _run_live(worker: Worker, level: str, db: str, burst: bool,
              server: MetricsServer | None) -> None:
    console = Console(stderr=True, highlight=False)
    handler = TerminalLog(console)
    root = logging.getLogger("jobq")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False
    _say_where(server)
    with Live(LiveView(worker, db), console=console, refresh_per_second=4, transient=True):
        worker.run(burst=burst)


RUNNING_COLS = (
    Col("ID", NEVER_DROPPED, fixed=True, justify="right"),
    Col("KIND", 80, least=12, want=24, shrink=1),
    Col("TRY", 60, fixed=True, justify="right"),
    Col("FOR", 70, fixed=True, justify="right"),
    Col("PID", 50, fixed=True, justify="right"),
    Col("STATE", 30, fixed=True),
)


class LiveView:
    """The worker's running jobs, redrawn by ``rich.live.Live``, fitted to the terminal as
    ``jobq list`` is (``tables``): ids whole, the least useful columns dropped first."""

    def __init__(self, worker: Worker, db: str):
        self.worker = worker
        self.db = db
        self.started = time.monotonic()

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        w = self.worker
        running = w.running_jobs()
        counts = "  ".join(f"{k} {v}" for k, v in w.counts.items() if v or k == "succeeded")
        state = "stopping" if w.stopping else "running"
        # Two lines that Rich wraps at a space when the terminal is narrower still.
        yield Text.assemble(("jobq worker ", "bold"), render.cell(w.id, limit=40),
                            f" · {state} · ", render.cell(masked_url(self.db), limit=40))
        yield Text(f"{w.pool} pool · {len(running)}/{w.concurrency} busy · "
                   f"up {render.span(time.monotonic() - self.started)} · {counts}")
        children = w.children()
        if children:
            yield Text("children: " + "  ".join(
                f"{pid} {state}" for pid, state, _ in sorted(children)[:16]))
        child_of = {job_id: pid for pid, _, job_id in children if job_id is not None}
        rows = [[str(job.id), render.cell(job.kind, limit=60),
                 f"{job.attempts}/{job.max_attempts}", render.span(took),
                 str(child_of.get(job.id, "")), "cancelling" if ctx.cancelled.is_set() else ""]
                for job, took, ctx in running[:20]]
        if len(running) > 20:
            rows.append(["…", f"{len(running) - 20} more", "", "", "", ""])
        if rows:
            yield tables.table(RUNNING_COLS, rows, options.max_width)
        else:
            yield Text("no job running", style="dim")
