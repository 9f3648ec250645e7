"""The process pool (``Worker(..., pool="process")``, ``jobq run --pool process``): N child
processes (``child.py``), started once and reused, each running one handler at a time.

The worker process keeps everything else: claims, leases and heartbeats, the completer,
the reaper, signals. It hands a run to an idle child over a socket and hears back how the
handler ended; children never open the database (a ``ctx.heartbeat()`` or
``ctx.progress()`` in a child is a request the worker carries out; ``ctx.complete(conn=...)``
writes on the child's own application connection, with the worker's check and time). One thread,
``jobq-processes``, reads every child's socket, starts children and hears of their exits;
ctx calls run on ``jobq-ctx-call-N`` threads so that a slow database write never stalls
that reading.

What a process buys over a thread: a run past its task's ``timeout`` (or abandoned for any
reason) is *stopped* — SIGTERM to its child, SIGKILL ``KILL_GRACE`` seconds later — and a
child that dies (``os._exit``, a segfault, the OOM killer) fails only its own run, with
``worker process died: ...``; in both cases a new child takes the slot at once and the
other children are not touched. ``max_jobs_per_child`` retires a child after that many
jobs (leaky C libraries).

Children are forked by a fork server of the pool's own (``forkserver.py``, which says why
not fork, spawn or multiprocessing's forkserver), which reports each child's exit status.
Each child imports the app module itself, not the fork server: an app module may open
connections or start threads on import, which a fork would copy.
"""
from __future__ import annotations

import collections
import enum
import logging
import os
import selectors
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import JobqError, LeaseLost, UnusableConnection
from ..api.new_jobs import DEFAULT_MAX_PAYLOAD
from ..store.base import ConnectionIdentity
from ..types import PoolKind
from .channel import Channel, Message, WakePipe, encode, pair
from .forkserver import ForkServer, signal_group
from .pool import Finished, not_started
from .runs import Failed, Run, job_fields, outcome_from
from .threads import DaemonPool

log = logging.getLogger("jobq.worker")

KILL_GRACE = 1.0  # seconds from SIGTERM to SIGKILL for a child whose run was abandoned
START_RETRY = 0.5  # seconds before starting a child again after one died while starting
START_ATTEMPTS = 3  # children dying in a row while starting: the pool gives up
CLOSE_TIMEOUT = 10.0  # seconds past KILL_GRACE that closing waits for children to end


class ChildState(enum.Enum):
    STARTING = "starting"  # importing the app
    IDLE = "idle"
    BUSY = "busy"  # running ``run``
    STOPPING = "stopping"  # retired or signalled; no longer counted: another takes its place


@dataclass(eq=False)
class Child:
    """A child process, as the worker sees it: the worker's ends of its two sockets (see
    ``child.py``). A send to a child that is gone fails quietly: its exit follows."""

    jobs: Channel  # runs out, everything the child says back
    control: Channel  # cancels and answers to ctx calls, out
    pid: int
    state: ChildState = ChildState.STARTING
    run: Run | None = None
    done: int = 0  # runs it finished
    kill_at: float | None = None  # monotonic: SIGKILL if it is still alive then
    error: str | None = None  # why it could not start, as it said

    def signal(self, signum: int) -> None:
        """Signal the child, and the subprocesses it started (``signal_group``)."""
        signal_group(self.pid, signum)


class ProcessPool:
    kind = PoolKind.PROCESS

    def __init__(self, app: str, *, concurrency: int, max_jobs_per_child: int | None,
                 worker_id: str, kinds: list[str], main_path: str | None = None,
                 max_result_bytes: int = DEFAULT_MAX_PAYLOAD):
        self.app = app
        self._concurrency = concurrency
        self._max_jobs = max_jobs_per_child
        self._child_args = [app, main_path, list(sys.path), os.getcwd(), kinds, worker_id,
                            max_result_bytes]
        self._server: ForkServer | None = None  # started by the supervisor, as needed
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._children: dict[int, Child] = {}
        self._idle: list[Child] = []
        self._pending: collections.deque[Run] = collections.deque()
        self._closing = False
        self._failure: str | None = None  # why no child can start; the worker stops
        self._failure_told = False  # the worker was told (``fail``)
        self._started = False  # start() returned: a failure from now on stops the worker
        self._start_failures = 0
        self._retry_at = 0.0
        self._finished: Finished = not_started
        self._fail: Callable[[str], None] = not_started
        self._selector = selectors.DefaultSelector()
        self._wake = WakePipe()  # wakes the supervisor: a child to replace, or closing
        self._selector.register(self._wake, selectors.EVENT_READ, ("wake", None))
        self._calls = DaemonPool(concurrency, name="jobq-ctx-call")
        self._thread = threading.Thread(target=self._supervise, name="jobq-processes",
                                        daemon=True)

    # -- the pool interface (any thread) ----------------------------------------------------

    def start(self, finished: Finished, fail: Callable[[str], None]) -> None:
        """Start the children; return once one is ready. Raises ``JobqError`` when they
        cannot start (the app does not import in a child)."""
        self._finished, self._fail = finished, fail
        self._thread.start()
        with self._changed:
            while not self._idle and self._failure is None:
                self._changed.wait()
            failure = self._failure
            self._started = failure is None
        if failure is not None:
            self.close()
            raise JobqError(failure)

    def run(self, runs: list[Run]) -> None:
        for run in runs:
            with self._lock:
                if not self._idle:
                    self._pending.append(run)
                    continue
                child = self._take(self._idle.pop(), run)
            self._send_run(child, run)  # outside the lock: the supervisor need not wait

    def cancel(self, run: Run) -> None:
        child = run.handle
        if child is not None and child.run is run:
            child.control.send(encode({"op": "cancel", "id": run.job.id}))

    def stop(self, run: Run) -> None:
        with self._lock:
            child = run.handle
            if child is None or child.run is not run:  # waiting for a child, or done
                try:
                    self._pending.remove(run)
                except ValueError:
                    pass
                return
            child.run = run.handle = None
            self._retire(child)
            child.signal(signal.SIGTERM)
        log.info("%s: stopping child process %d (SIGTERM, SIGKILL after %gs)",
                 run.describe(), child.pid, KILL_GRACE)
        self._wake.wake()  # the supervisor starts another child in its place

    def close(self) -> None:
        with self._lock:
            self._closing = True
        self._wake.wake()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(KILL_GRACE + CLOSE_TIMEOUT)
            if self._thread.is_alive():  # a child's end was never reported: never hang
                log.error("the process pool did not end within %gs: killing its children",
                          KILL_GRACE + CLOSE_TIMEOUT)
                self.kill()
        self._calls.close()

    def kill(self) -> None:
        for child in list(self._children.values()):  # no lock: called from a signal handler
            child.signal(signal.SIGKILL)
        if self._server is not None:
            self._server.kill()

    def children(self) -> list[tuple[int, str, int | None]]:
        """(pid, state, job id) of every child, for the live view."""
        with self._lock:
            return [(c.pid, c.state.value, c.run.job.id if c.run else None)
                    for c in self._children.values()]

    # -- under the lock ---------------------------------------------------------------------

    def _take(self, child: Child, run: Run) -> Child:
        """``child`` runs ``run`` from now on (under the lock; ``_send_run`` then tells it)."""
        child.state, child.run, run.handle = ChildState.BUSY, run, child
        return child

    def _ready(self, child: Child) -> Run | None:
        """``child`` can take a run (under the lock): the next waiting one, which the caller
        sends it with ``_send_run`` once the lock is released, or it waits."""
        if self._pending:
            return self._take(child, self._pending.popleft()).run
        child.state = ChildState.IDLE
        self._idle.append(child)
        self._changed.notify_all()
        return None

    @staticmethod
    def _send_run(child: Child, run: Run) -> None:
        """Tell ``child`` to run ``run``. A cancel or SIGTERM for the run may come before:
        the child keeps the cancel for the run; a failed send means the child is gone, and
        its exit fails the run."""
        job = run.job
        message: Message = {"op": "run", "id": job.id, "token": job.token, "kind": job.kind,
                            "queue": job.queue, "attempt": job.attempts, "lease": run.lease,
                            "payload": job.payload, "trace": job.trace_context}
        if run.task is not None and run.task.hooks is not None:  # the child's hooks read it
            message["job"] = job_fields(job)
        child.jobs.send(encode(message))

    def _retire(self, child: Child) -> None:
        if child.state is ChildState.IDLE:
            self._idle.remove(child)
        child.state = ChildState.STOPPING
        child.kill_at = time.monotonic() + KILL_GRACE

    # -- the supervisor thread --------------------------------------------------------------

    def _supervise(self) -> None:
        try:
            while True:
                with self._lock:
                    closing = self._closing
                    if closing:
                        self._close_children()
                        if not self._children:
                            break
                if not closing:
                    self._fill()
                with self._lock:
                    timeout = self._next_timeout()
                if self._server is not None:
                    self._server_said(read=False)  # exits read while forking
                for key, _ in self._selector.select(timeout):
                    what, child = key.data
                    if what == "wake":
                        self._wake.drain()
                    elif what == "child":
                        self._receive(child)
                    else:
                        self._server_said()
                self._kill_overdue()
                self._tell_failure()
        except BaseException:  # noqa: BLE001 - a bug here must stop the worker, not hang it
            log.exception("the process pool's supervisor failed")
            with self._lock:
                self._give_up("the process pool's supervisor failed (see the log)")
            self._tell_failure()
            self.kill()
        finally:
            if self._server is not None:
                self._server.close()
            self._selector.close()
            self._wake.close()

    def _fill(self) -> None:
        """Start children until ``concurrency`` are alive and not stopping. The forks
        happen outside the lock (a fork request takes ~1.4 ms here, the fork server's own
        start ~165 ms, once), so that handing runs to idle children goes on meanwhile."""
        with self._lock:
            if self._failure is not None or time.monotonic() < self._retry_at:
                return
            missing = self._concurrency - sum(
                1 for c in self._children.values() if c.state is not ChildState.STOPPING)
        for _ in range(missing):
            (jobs, jobs_theirs), (control, control_theirs) = pair(), pair()
            try:
                if self._server is None:
                    self._server = ForkServer()
                    self._selector.register(self._server, selectors.EVENT_READ,
                                            ("server", None))
                pid = self._server.fork(self._child_args,
                                        [jobs_theirs.fileno(), control_theirs.fileno()])
            except (OSError, EOFError) as e:  # out of processes or memory
                jobs.close()
                control.close()
                with self._lock:
                    self._start_failed(f"starting a child process failed: {e}")
                return
            finally:
                jobs_theirs.close()
                control_theirs.close()
            child = Child(Channel(jobs), Channel(control), pid)
            with self._lock:
                self._children[pid] = child
            self._selector.register(child.jobs, selectors.EVENT_READ, ("child", child))

    def _next_timeout(self) -> float | None:
        times = [c.kill_at for c in self._children.values() if c.kill_at is not None]
        if self._retry_at > time.monotonic() and not self._closing:
            times.append(self._retry_at)
        return max(0.0, min(times) - time.monotonic()) if times else None

    def _receive(self, child: Child) -> None:
        try:
            messages = child.jobs.recv()
        except (EOFError, OSError):
            self._close_sockets(child)  # its exit follows
            return
        for message in messages:
            self._handle(child, message)

    def _close_sockets(self, child: Child) -> None:
        """Close the sockets to ``child`` (at EOF it exits)."""
        if not child.jobs.closed:
            self._selector.unregister(child.jobs)
            child.jobs.close()
            child.control.close()

    def _handle(self, child: Child, message: Message) -> None:
        op = message["op"]
        if op == "done":
            with self._lock:
                run = child.run
                if child.state is not ChildState.BUSY or run is None \
                        or run.job.id != message["id"]:
                    return  # a stopped run's late answer
                child.run = run.handle = None
                child.done += 1
                following = None
                if self._max_jobs and child.done >= self._max_jobs:
                    self._retire(child)
                    recycled = True
                else:
                    following = self._ready(child)
                    recycled = False
            if following is not None:
                self._send_run(child, following)
            if recycled:
                self._close_sockets(child)  # it exits at EOF; another starts on this turn
                log.info("child process %d retired after %d jobs", child.pid, child.done)
            self._finished(run, outcome_from(message))
        elif op in ("heartbeat", "progress", "complete", "dependency_results"):
            run = child.run
            if run is None or run.job.id != message["id"]:
                child.control.send(encode({"op": "reply", "call": message["call"],
                                           "error": "lost"}))
            else:
                self._calls.submit(_ctx_call, child, run, message)
        elif op == "ready":
            with self._lock:
                if child.state is not ChildState.STARTING:
                    return
                self._start_failures = 0
                following = self._ready(child)
            if following is not None:
                self._send_run(child, following)
        elif op == "failed":
            child.error = message["error"]

    def _server_said(self, read: bool = True) -> None:
        """The fork server reported children that ended, or it ended itself."""
        server = self._server
        assert server is not None, "only a running fork server says anything"
        try:
            exits: Sequence[tuple[int, int | None]] = server.exits(read)
        except (EOFError, OSError):  # killed: its children got SIGKILL (PR_SET_PDEATHSIG)
            log.warning("the fork server (pid %d) of the process pool ended; starting another",
                        server.pid)
            self._selector.unregister(server)
            server.close()
            self._server = None
            exits = [(pid, None) for pid in list(self._children)]
            for pid, _ in exits:
                self._children[pid].signal(signal.SIGKILL)
        for pid, code in exits:
            child = self._children.get(pid)
            if child is not None:
                self._exited(child, code)

    def _exited(self, child: Child, code: int | None) -> None:
        """``child``'s process ended: fail its run, if it had one."""
        if not child.jobs.closed:
            child.jobs.sock.setblocking(False)
            try:  # what it sent before it ended comes first
                while True:
                    for message in child.jobs.recv():
                        self._handle(child, message)
            except (EOFError, OSError):  # BlockingIOError: nothing more
                pass
            self._close_sockets(child)
        with self._lock:
            del self._children[child.pid]
            state, run = child.state, child.run
            child.run = None
            if state is ChildState.IDLE:
                self._idle.remove(child)
            if state is ChildState.STARTING and not self._closing:
                if child.error is not None:  # the app does not import: no use trying again
                    self._give_up(f"the worker's child processes cannot start: {child.error}")
                else:
                    self._start_failed(f"a child process died while starting: "
                                       f"{describe_exit(code)}")
        if run is not None:
            run.handle = None
            log.info("child process %d died running %s: %s", child.pid, run.describe(),
                     describe_exit(code))
            self._finished(run, Failed(f"worker process died: {describe_exit(code)}"))
        elif state is ChildState.IDLE:
            log.warning("child process %d died while idle: %s", child.pid, describe_exit(code))

    def _start_failed(self, reason: str) -> None:
        """Under the lock."""
        self._start_failures += 1
        log.warning("%s", reason)
        if self._start_failures >= START_ATTEMPTS:
            self._give_up(f"{reason} ({START_ATTEMPTS} times in a row)")
        else:
            self._retry_at = time.monotonic() + START_RETRY

    def _give_up(self, reason: str) -> None:
        """No child can start: no more are tried, and the worker is told (under the lock)."""
        if self._failure is None:
            self._failure = reason
        self._changed.notify_all()

    def _tell_failure(self) -> None:
        """Tell the worker, once, that the pool gave up (it stops)."""
        with self._lock:
            if self._failure is None or self._failure_told or not self._started:
                return
            self._failure_told = True
        self._fail(self._failure)

    def _close_children(self) -> None:
        """Under the lock, while closing: idle children get EOF and exit; children still
        running something are signalled."""
        for child in self._children.values():
            if child.state is ChildState.STOPPING:
                continue
            busy = child.state is ChildState.BUSY
            self._retire(child)
            if busy:
                child.signal(signal.SIGTERM)
            else:
                self._close_sockets(child)

    def _kill_overdue(self) -> None:
        now = time.monotonic()
        with self._lock:
            overdue = [c for c in self._children.values()
                       if c.kill_at is not None and now >= c.kill_at]
            for child in overdue:
                child.kill_at = None
        for child in overdue:
            log.warning("child process %d still running %gs after it was told to stop: "
                        "SIGKILL", child.pid, KILL_GRACE)
            child.signal(signal.SIGKILL)


def _ctx_call(child: Child, run: Run, message: Message) -> None:
    """A child's ``ctx.heartbeat()``, ``ctx.progress()`` or the worker's part of
    ``ctx.complete(conn=...)``, done here on its run's context, which holds the lease."""
    reply: Message = {"op": "reply", "call": message["call"]}
    try:
        if message["op"] == "heartbeat":
            run.ctx.heartbeat()
        elif message["op"] == "complete":
            reply["now"] = run.ctx.prepare_complete(
                ConnectionIdentity.from_json(message["identity"]))
        elif message["op"] == "dependency_results":
            reply["results"] = {str(k): v for k, v in run.ctx.dependency_results().items()}
        else:
            run.ctx.progress(message["fraction"], message["message"])
    except LeaseLost:
        reply["error"] = "lost"
    except UnusableConnection as e:
        reply.update(error="UnusableConnection", message=str(e))
    except (TypeError, ValueError) as e:
        reply.update(error=type(e).__name__, message=str(e))
    except JobqError as e:  # the database is unavailable, or full
        reply.update(error="JobqError", message=str(e))
    except Exception as e:  # noqa: BLE001 - the handler gets it, as it would in a thread
        reply.update(error="JobqError", message=f"{type(e).__name__}: {e}")
    if run.ctx.cancelled.is_set():
        reply["cancelled"] = True
    child.control.send(encode(reply))


def describe_exit(code: int | None) -> str:
    """``exit code 3``, ``signal 11 (SIGSEGV)``."""
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"
