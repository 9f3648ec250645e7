"""Worker: the configuration, start and stop, signals, and the wiring of the parts (see the
package's description for which thread runs which part)."""
from __future__ import annotations

import logging
import os
import secrets
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType

from ..common.checks import MAX_LEASE, check_int, check_pool, check_seconds
from ..errors import JobqError
from ..maintenance import Duties, Elector, Pruner, Reaper, Scheduler, TableCare
from ..queue import Queue
from ..registry import JobContext, Registry
from ..store.base import DEFAULT_MAX_LOST_ATTEMPTS
from ..tasks import Task
from ..presentation.display import limits_words
from ..types import Job, PoolKind, QueueLimits
from .claimer import Claimer
from .completer import Completer
from .executor import Executor
from .heartbeat import Heartbeat
from .outbox import Outbox
from .pool import Pool
from .run_metrics import RunMetrics
from .state import State
from .threads import ThreadPool

log = logging.getLogger("jobq.worker")


class Worker:
    """Runs jobs from ``queue`` with the handlers of ``registry``.

    ``concurrency`` slots run handlers at once; ``queues`` (None: all) limits what is
    claimed; ``lease`` is the default lease term in seconds; ``grace`` is how long a stop
    waits for running handlers before their jobs are released. The registry's periodic
    schedules are enqueued by all workers together, one job per tick (``Scheduler``).
    An idle worker sleeps until another process writes the database (inotify, on Linux)
    and then starts new jobs within a millisecond or two; where that is unavailable it
    checks every ``poll_interval`` seconds (a cheap read), and while some slots are busy it
    looks for work as often.
    Delayed jobs and retries start when they become ready: after a claim finds nothing
    more, the worker asks the store when the next one is due and sleeps until then at
    most; it also looks for work every ``idle_claim_interval`` seconds whatever it heard.

    ``pool`` is a ``PoolKind`` or its string. ``"thread"`` (the default) runs handlers on
    threads of this process; ``"process"`` in ``concurrency`` child processes, one handler
    at a time each, which can be killed at a task's ``timeout`` and whose crash fails only
    their own job (see ``processes.py``). Each child imports the registry by name:
    ``app="MODULE:ATTR"``, by default the module-level name the registry is found under.
    ``max_jobs_per_child`` (process pool only) replaces a child after that many jobs.
    ``max_result_bytes`` (default: the queue's ``max_payload_bytes``, 10 MiB unless set)
    caps a handler's result as JSON: a larger one is not stored and the job goes dead with
    an error saying so (in the process pool the child checks it, so it never reaches the
    worker's memory).
    ``max_lost_attempts``: a job whose last that many attempts each lost their worker (no
    heartbeat until the lease ran out: the process died) goes dead as a poison job when
    this worker's reaper takes it back, instead of killing worker after worker (0: never).
    """

    def __init__(
        self,
        queue: Queue,
        registry: Registry,
        *,
        concurrency: int = 8,
        queues: Sequence[str] | None = None,
        lease: float = 30.0,
        grace: float = 30.0,
        poll_interval: float = 0.02,
        idle_claim_interval: float = 0.5,
        worker_id: str | None = None,
        pool: PoolKind | str = PoolKind.THREAD,
        max_jobs_per_child: int | None = None,
        app: str | None = None,
        max_result_bytes: int | None = None,
        max_lost_attempts: int = DEFAULT_MAX_LOST_ATTEMPTS,
    ):
        check_int("concurrency", concurrency, minimum=1)
        check_seconds("lease", lease, positive=True, maximum=MAX_LEASE)
        pool = check_pool(pool)
        if max_jobs_per_child is not None:
            if pool is not PoolKind.PROCESS:
                raise ValueError("max_jobs_per_child applies to pool='process' only "
                                 f"(got {max_jobs_per_child!r:.80} with pool={pool.value!r})")
            check_int("max_jobs_per_child", max_jobs_per_child, minimum=1)
        for name, value in (("poll_interval", poll_interval),
                            ("idle_claim_interval", idle_claim_interval)):
            check_seconds(name, value, positive=True)
        check_seconds("grace", grace)
        if max_result_bytes is None:
            max_result_bytes = queue.max_payload_bytes
        check_int("max_result_bytes", max_result_bytes, minimum=2)
        check_int("max_lost_attempts", max_lost_attempts, minimum=0)
        self.max_result_bytes = max_result_bytes
        if isinstance(queues, str):
            queues = [queues]
        if queues is not None and (not queues or not all(isinstance(q, str) and q for q in queues)):
            raise ValueError(f"queues must be None or non-empty queue names, got {queues!r}")
        if not isinstance(registry, Registry):
            raise TypeError(f"registry must be a jobq Registry, got {registry!r:.80}")
        self.queue = queue
        self.registry = registry
        if queue.registry is None:  # what handlers enqueue by kind takes its task's defaults
            queue.registry = registry
        self.concurrency = concurrency
        self.queues = None if queues is None else list(queues)
        self.lease = float(lease)
        self.grace = float(grace)
        self.poll_interval = float(poll_interval)
        self.idle_claim_interval = float(idle_claim_interval)
        self.id = worker_id or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"
        self.pool = pool
        self.max_jobs_per_child = max_jobs_per_child
        self._failure: str | None = None  # why the pool could not go on

        self._gone: JobqError | None = None  # set when the database went away
        self._state = state = State(concurrency, registry.kinds())
        self.counts = state.counts
        outbox = Outbox(state)
        self._executor = Executor(state, outbox, registry,
                                  self._make_pool(pool, registry, app, max_jobs_per_child))
        self._reaper = Reaper(queue, interval=min(self.lease, 60.0),
                              max_lost_attempts=max_lost_attempts)
        shortest = min([self.lease, *(t.lease for t in _tasks(registry) if t.lease)])
        self.beat_interval = shortest / 3  # recorded in the registry: judged late by it
        # The maintenance leader's lease lasts as long as this worker's shortest lease: a
        # leader that died is replaced within it and a beat, as its jobs are reaped.
        self._elector = Elector(queue, self.id, term=3 * self.beat_interval)
        leading = lambda: self._elector.leading  # noqa: E731
        stop_duties = threading.Event()
        self._duties = Duties(self._elector, self._reaper,
                              Pruner(queue, stop=stop_duties, leading=leading), stop_duties,
                              TableCare(queue))
        self._heartbeat = Heartbeat(queue, state, self._executor, self._elect,
                                    worker_id=self.id, every=self.beat_interval,
                                    on_gone=self._database_gone, on_forgotten=self._register)
        self._claimer = Claimer(queue, registry, state, outbox, self._executor,
                                self._heartbeat.extend, worker_id=self.id, queues=self.queues,
                                lease=self.lease, poll_interval=self.poll_interval,
                                idle_claim_interval=self.idle_claim_interval)
        self._completer = Completer(queue, state, outbox, self._claimer, worker_id=self.id,
                                    queues=self.queues, lease=self.lease)
        self._scheduler = Scheduler(queue, registry.schedules(), leading)

    # -- public -----------------------------------------------------------------------------

    def run(self, *, burst: bool = False, handle_signals: bool = True) -> None:
        """Work until ``stop()`` (or SIGTERM/SIGINT when ``handle_signals`` and on the main
        thread); with ``burst``, until no job is ready and none is running. Returns after a
        clean shutdown: running jobs finished or released, the worker deregistered."""
        restore = self._install_signals() if handle_signals else None
        try:
            self._start()
            try:
                self._claimer.loop(burst)
                with self._claimer.lock:  # a claim in flight has started its runs or
                    pass                  # handed its jobs back (Claimer.adopt)
                self._executor.drain(0.0 if self._gone else self.grace)
            finally:
                self._shutdown()
        finally:
            if restore:
                restore()
        if self._gone:
            raise self._gone
        if self._failure is not None:
            raise JobqError(self._failure)

    def _database_gone(self, error: JobqError) -> None:
        """The database file was deleted or replaced: stop at once; ``run`` raises."""
        self._gone = error
        self.stop()

    def stop(self) -> None:
        """Stop claiming and shut down gracefully. Safe from any thread or signal handler."""
        self._state.stopping.set()
        self._claimer.interrupt()

    @property
    def stopping(self) -> bool:
        return self._state.stopping.is_set()

    def running_jobs(self) -> list[tuple[Job, float, JobContext]]:
        """(job, seconds running, context) of every handler running now, oldest first."""
        now = time.monotonic()
        runs = sorted(self._state.running_runs(), key=lambda r: r.started)
        return [(r.job, now - r.started, r.ctx) for r in runs]

    def run_metrics(self) -> RunMetrics:
        """A copy of this worker's outcome counts and handler durations by queue and kind
        (``jobq_core.observability.prometheus`` serves them)."""
        with self._state.lock:
            return self._state.metrics.snapshot()

    def children(self) -> list[tuple[int, str, int | None]]:
        """The process pool's children: (pid, state, job id or None), state one of
        starting, idle, busy, stopping. Empty for the thread pool."""
        return self._executor.pool.children()

    # -- starting and stopping --------------------------------------------------------------

    def _make_pool(self, kind: PoolKind, registry: Registry, app: str | None,
                   max_jobs_per_child: int | None) -> Pool:
        if kind is PoolKind.THREAD:
            return ThreadPool(self.concurrency, self.max_result_bytes)
        from .processes import ProcessPool

        app = app or find_app(registry)
        module_name = app.partition(":")[0]
        main_path = getattr(sys.modules.get("__main__"), "__file__", None)
        if module_name == "__main__" and main_path is None:
            raise ValueError("pool='process' needs a registry the child processes can import, "
                             "and this one lives in an interactive session's __main__")
        return ProcessPool(app, concurrency=self.concurrency,
                           max_jobs_per_child=max_jobs_per_child, worker_id=self.id,
                           kinds=registry.kinds(), main_path=main_path,
                           max_result_bytes=self.max_result_bytes)

    def _pool_failed(self, reason: str) -> None:
        """The process pool cannot start children any more: stop (running jobs get the
        grace period, waiting ones are released) and have ``run()`` raise."""
        self._failure = reason
        log.error("%s: stopping the worker", reason)
        self.stop()

    def _start(self) -> None:
        # Before the worker is registered: a pool may fail to start.
        self._executor.start(self._pool_failed)
        try:
            self._apply_limits()
            self._register()
        except BaseException:
            self._executor.close()
            raise
        self._tell_of_dead_workers()
        # Said first: the election that follows may say it leads.
        log.info("worker %s started: %s pool, concurrency=%d queues=%s lease=%gs kinds=%s",
                 self.id, self.pool, self.concurrency, ",".join(self.queues) if self.queues else "*", self.lease,
                 self.registry.describe_kinds())
        self._elect()
        self._duties.start()
        self._heartbeat.start()
        self._completer.start()
        self._scheduler.start()

    def _apply_limits(self) -> None:
        """Apply the limits the registry declares (``Registry.queue``) where they differ
        from the declaration the database recorded; a queue it does not declare is left
        alone. Logged, so a deploy's change reads in the worker's log."""
        declared = self.registry.queues()
        if not declared:
            return
        applied = set(self.queue.declare_limits(declared))
        held = self.queue.queues()
        for name, code in sorted(declared.items()):
            db = held[name].limits if name in held else QueueLimits()
            if name in applied:
                log.info("queue %s: limits set as the code declares (%s)", name,
                         limits_words(code))
            elif db != code:
                log.info("queue %s: its limits (%s) differ from the code's (%s), changed since "
                         "the code declared them: kept until the code declares others",
                         name, limits_words(db), limits_words(code))

    def _register(self) -> None:
        """Put this worker in the registry (at start, and again if it was forgotten)."""
        self.queue.register_worker(self.id, host=socket.gethostname(), pid=os.getpid(),
                                   queues=self.queues, concurrency=self.concurrency,
                                   beat_interval=self.beat_interval, lease=self.lease,
                                   pool=self.pool)

    def _tell_of_dead_workers(self) -> None:
        """Log a line for each worker of this host still registered whose process is gone:
        it died without stopping (a stop deregisters), most likely the run before this
        one. Its jobs come back when their leases run out; a job that kills worker after
        worker goes dead after ``max_lost_attempts`` (the reaper's poison check)."""
        host = socket.gethostname()
        try:
            gone = [w for w in self.queue.workers()
                    if w.host == host and w.id != self.id and not _alive(w.pid)]
        except JobqError:
            return
        for w in gone:
            log.warning("worker %s (pid %d on this host) died without stopping: a crash, a "
                        "kill or the OOM killer? Its jobs are retried once their leases run "
                        "out; a handler that can crash its process belongs in --pool process",
                        w.id, w.pid)

    def _elect(self) -> None:
        """Take part in the maintenance leader's election (at start, then every beat);
        when this worker has just been elected, its duties start at once."""
        was = self._elector.leading
        if self._elector.run_once() and not was:
            self._duties.wake()

    @property
    def looped_at(self) -> float:
        """Monotonic time of the claim loop's latest turn (0: not started)."""
        return self._state.looped_at

    @property
    def beat_at(self) -> float:
        """Monotonic time of the heartbeat's latest turn (0: not started)."""
        return self._state.beat_at

    @property
    def leading(self) -> bool:
        """Whether this worker is the database's maintenance leader (as it last knew)."""
        return self._elector.leading

    def _shutdown(self) -> None:
        self._duties.close()
        self._scheduler.close()
        self._completer.close()  # writes everything queued before it ends
        self._heartbeat.close()
        self._executor.close()
        self._claimer.close()
        self._elector.resign()
        try:
            self.queue.deregister_worker(self.id)
        except JobqError as e:
            log.warning("could not deregister worker %s: %s", self.id, e)
        log.info("worker %s stopped: %s", self.id,
                 " ".join(f"{k}={v}" for k, v in self.counts.items()))

    def _install_signals(self) -> Callable[[], None] | None:
        """First SIGTERM/SIGINT: stop gracefully (``grace``); a second: exit at once."""
        if threading.current_thread() is not threading.main_thread():
            return None
        previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            if self._state.stopping.is_set():
                n = self._state.running
                log.warning("second signal: exiting now; the leases of %d running job(s) will "
                            "expire and the jobs run again", n)
                self._executor.kill()  # child processes go too
                logging.shutdown()
                os._exit(130 if signum == signal.SIGINT else 143)
            log.info("%s: stopping; running jobs get %gs to finish (signal again to exit "
                     "at once)", signal.Signals(signum).name, self.grace)
            self.stop()

        for s in previous:
            signal.signal(s, on_signal)

        def restore() -> None:
            for s, h in previous.items():
                signal.signal(s, h)

        return restore


def _tasks(registry: Registry) -> list[Task]:
    return [t for k in registry.kinds() if (t := registry.get(k)) is not None]


def find_app(registry: Registry) -> str:
    """``MODULE:ATTR``: a module-level name under which ``registry`` can be imported (by a
    child process). Looks in the modules of its handlers first, then in every module."""
    first = [t.fn.__module__ for t in _tasks(registry) if isinstance(t.fn.__module__, str)]
    for name in dict.fromkeys([*first, *list(sys.modules)]):
        module = sys.modules.get(name)
        try:
            names = list(vars(module).items())
        except TypeError:
            continue
        for attr, value in names:
            if value is registry and attr.isidentifier():
                return f"{name}:{attr}"
    raise ValueError("pool='process' needs a registry the child processes can import by name "
                     f"(a module-level variable), and {registry!r:.80} is none: define it at "
                     "the top level of a module, or pass app='MODULE:ATTR'")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, ValueError, OverflowError):
        return True  # another user's process, or a pid this system cannot name: not known dead
    return True
