"""Worker: the configuration, start and stop, signals, and the wiring of the parts (see the
package's description for which thread runs which part)."""
from __future__ import annotations

import logging
import os
import secrets
import signal
import socket
import threading
import time
from collections.abc import Sequence

from ..checks import check_int, check_seconds
from ..errors import JobqError
from ..maintenance import Reaper
from ..queue import Queue
from ..registry import JobContext, Registry, Task
from ..types import Job
from .claimer import Claimer
from .completer import Completer, Outbox
from .executor import Executor
from .heartbeat import Heartbeat
from .threads import ThreadPool
from .state import State

log = logging.getLogger("jobq.worker")


class Worker:
    """Runs jobs from ``queue`` with the handlers of ``registry``.

    ``concurrency`` slots run handlers at once; ``queues`` (None: all) limits what is
    claimed; ``lease`` is the default lease term in seconds; ``grace`` is how long a stop
    waits for running handlers before their jobs are released. An idle worker sleeps until
    another process writes the database (inotify, on Linux) and then starts new jobs within
    a millisecond or two; where that is unavailable it checks every ``poll_interval``
    seconds (a cheap read), and while some slots are busy it looks for work as often.
    Delayed jobs and retries are looked for every ``idle_claim_interval`` seconds.
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
    ):
        check_int("concurrency", concurrency, minimum=1)
        for name, value in (("lease", lease), ("poll_interval", poll_interval),
                            ("idle_claim_interval", idle_claim_interval)):
            check_seconds(name, value, positive=True)
        check_seconds("grace", grace)
        if isinstance(queues, str):
            queues = [queues]
        if queues is not None and (not queues or not all(isinstance(q, str) and q for q in queues)):
            raise ValueError(f"queues must be None or non-empty queue names, got {queues!r}")
        if not isinstance(registry, Registry):
            raise TypeError(f"registry must be a jobq Registry, got {registry!r:.80}")
        self.queue = queue
        self.registry = registry
        self.concurrency = concurrency
        self.queues = None if queues is None else list(queues)
        self.lease = float(lease)
        self.grace = float(grace)
        self.poll_interval = float(poll_interval)
        self.idle_claim_interval = float(idle_claim_interval)
        self.id = worker_id or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"

        self._state = state = State(concurrency)
        self.counts = state.counts
        outbox = Outbox(state)
        self._executor = Executor(state, outbox, registry, ThreadPool(concurrency))
        self._reaper = Reaper(queue, interval=min(self.lease, 60.0))
        shortest = min([self.lease, *(t.lease for t in _tasks(registry) if t.lease)])
        self._heartbeat = Heartbeat(queue, state, self._executor, self._reaper,
                                    worker_id=self.id, every=shortest / 3)
        self._claimer = Claimer(queue, registry, state, outbox, self._executor,
                                self._heartbeat.extend, worker_id=self.id, queues=self.queues,
                                lease=self.lease, poll_interval=self.poll_interval,
                                idle_claim_interval=self.idle_claim_interval)
        self._completer = Completer(queue, state, outbox, self._claimer, worker_id=self.id,
                                    queues=self.queues, lease=self.lease)

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
                self._executor.drain(self.grace)
            finally:
                self._shutdown()
        finally:
            if restore:
                restore()

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

    # -- starting and stopping --------------------------------------------------------------

    def _start(self) -> None:
        self._executor.start()  # before the worker is registered: a pool may fail to start
        try:
            self.queue.register_worker(self.id, host=socket.gethostname(), pid=os.getpid(),
                                       queues=self.queues, concurrency=self.concurrency)
        except BaseException:
            self._executor.close()
            raise
        self._reaper.run_once()
        self._heartbeat.start()
        self._completer.start()
        log.info("worker %s started: concurrency=%d queues=%s lease=%gs kinds=%s", self.id,
                 self.concurrency, ",".join(self.queues) if self.queues else "*", self.lease,
                 ",".join(self.registry.kinds()) or "-")

    def _shutdown(self) -> None:
        self._completer.close()  # writes everything queued before it ends
        self._heartbeat.close()
        self._executor.close()
        self._claimer.close()
        try:
            self.queue.deregister_worker(self.id)
        except JobqError as e:
            log.warning("could not deregister worker %s: %s", self.id, e)
        log.info("worker %s stopped: %s", self.id,
                 " ".join(f"{k}={v}" for k, v in self.counts.items()))

    def _install_signals(self):
        """First SIGTERM/SIGINT: stop gracefully (``grace``); a second: exit at once."""
        if threading.current_thread() is not threading.main_thread():
            return None
        previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

        def on_signal(signum, _frame):
            if self._state.stopping.is_set():
                n = self._state.running
                log.warning("second signal: exiting now; the leases of %d running job(s) will "
                            "expire and the jobs run again", n)
                logging.shutdown()
                os._exit(130 if signum == signal.SIGINT else 143)
            log.info("%s: stopping; running jobs get %gs to finish (signal again to exit "
                     "at once)", signal.Signals(signum).name, self.grace)
            self.stop()

        for s in previous:
            signal.signal(s, on_signal)
        return lambda: [signal.signal(s, h) for s, h in previous.items()]


def _tasks(registry: Registry) -> list[Task]:
    return [t for k in registry.kinds() if (t := registry.get(k)) is not None]
