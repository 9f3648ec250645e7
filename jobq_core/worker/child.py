"""A child process of the process pool: imports the app's registry by name and runs one
handler at a time, as the worker process (``processes.py``) tells it. It never opens the
database: everything it learns and says goes through two sockets to the worker, as JSON
lines (``channel.py``): *jobs*, read by the main thread between handlers, and *control*,
read all the time by a thread of its own (``jobq-child-control``).

Messages, worker -> child, on jobs:
  {"op": "run", "id", "token", "kind", "queue", "attempt", "lease", "payload", "trace",
   "job"?}                                          start a handler ("trace": the job's
                                                    trace context, or null; "job": the
                                                    claimed Job's fields, sent when the
                                                    task has hooks around runs)
on control:
  {"op": "cancel", "id"}                            set that run's ``ctx.cancelled``
  {"op": "reply", "call", "error"?, "message"?, "cancelled"?, "now"?}   answers a ctx call
child -> worker, on jobs:
  {"op": "ready", "pid"} or {"op": "failed", "error"}   the app imported, or not
  {"op": "done", "id", "result"} | {"op": "done", "id", "error", "give_up", "retry_delay"?} |
  {"op": "done", "id", "lost": true}                how the handler ended
  {"op": "heartbeat", "id", "call"} | {"op": "progress", "id", "call", "fraction",
  "message"}                                        ctx calls; the worker does the lease work
  {"op": "dependency_results", "id", "call"}        ctx.dependency_results(): the worker reads
  {"op": "complete", "id", "call", "identity"}      ctx.complete(conn=...): the worker checks
                                                    the connection's identity and replies
                                                    with "now"; the child writes on its own
                                                    application connection

Why two sockets: the main thread reads its next job itself, with no hand-off from a
reading thread (one thread switch less per job), while cancels and the answers to ctx
calls must reach a handler that is running on the main thread.

Lifetime: the child ends at EOF on its sockets — the worker closed them (shutdown, or
``max_jobs_per_child`` reached) or the worker process is gone, however it died: the kernel
closes a dead process's descriptors. The control thread notices at once, even
mid-handler. EOF rather
than polling ``os.getppid()``: it is immediate, and the child's parent is the fork server
(``forkserver.py``), not the worker. Two more guards cover a handler stuck in C code that
holds the GIL (the reading thread cannot run then): the fork server SIGKILLs its children
when the worker is gone, and on Linux ``PR_SET_PDEATHSIG`` SIGKILLs the child if the fork
server itself dies.

SIGTERM (a hard timeout, or the worker stopping) sets ``ctx.cancelled`` and raises
``SystemExit`` in the handler, so its ``finally`` blocks run; the child then exits without
reporting (the worker has given the run up). The worker sends SIGKILL after a short grace.
SIGINT is ignored and the child has a session (and so a process group) of its own: Ctrl-C
in a terminal, a hangup, or a signal to the worker's process group is the worker's to
handle (its grace period), not something that kills running handlers. A session of its
own also matters where the kernel shares CPU between sessions (autogroup scheduling): in
the worker's session two busy children got 0.17 of a core each on a loaded machine, where
a process of its own got ~0.5 (tests/core/test_process_pool.py measures it).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any
import importlib
import importlib.util
import itertools
# Imported before a script's registry is: on its first import, multiprocessing points
# sys.modules["__mp_main__"] at __main__, which would replace the script being loaded
# under that name while it runs (its sys.modules[__name__] would be the fork server's
# __main__). The fork server imports this module once, so its children pay nothing.
import multiprocessing  # noqa: F401
import os
import signal
import socket
import sys
import threading
from types import FrameType

from ..errors import JobqError, LeaseLost, UnusableConnection
from ..registry import Hooks, JobContext, Registry
from ..tasks import Task
from ..store.base import ConnectionIdentity
from ..common.textsafe import storable
from .channel import Channel, Message, encode
from .runs import (Failed, ahooked, call_handler, hooked, job_from, outcome_message, raised,
                   result_json)

if TYPE_CHECKING:
    import asyncio


def main(app: str, main_path: str | None, sys_path: list[str], cwd: str, kinds: list[str],
         worker_id: str, max_result_bytes: int, jobs_fd: int, control_fd: int) -> None:
    """The child's whole life, in a process forked by the fork server."""
    _detach()
    link = Link(Channel(socket.socket(fileno=jobs_fd)),
                Channel(socket.socket(fileno=control_fd)), worker_id)
    try:
        sys.path[:] = sys_path
        os.chdir(cwd)
        registry = load_registry(app, main_path)
        if registry.kinds() != kinds:
            raise LookupError(
                f"{app} in a child process has the tasks {', '.join(registry.kinds()) or 'none'}, "
                f"the worker's registry has {', '.join(kinds)}: name the module that registers "
                "every task (Worker(..., app='MODULE:ATTR'), jobq run --app)")
    except BaseException as e:  # noqa: BLE001 - the user's module, any error at all
        link.send({"op": "failed", "error": f"importing {app} failed: {type(e).__name__}: {e}"})
        return
    signal.signal(signal.SIGTERM, link.on_sigterm)
    threading.Thread(target=link.watch, name="jobq-child-control", daemon=True).start()
    link.send({"op": "ready", "pid": os.getpid()})
    Runner(link, registry, max_result_bytes).serve()


def load_registry(app: str, main_path: str | None) -> Registry:
    module_name, _, attr = app.partition(":")
    if module_name == "__main__":  # a script's registry: import the script again, by path
        spec = importlib.util.spec_from_file_location("__mp_main__", main_path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import the script {main_path!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules["__mp_main__"] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    registry = getattr(module, attr, None)
    if not isinstance(registry, Registry):
        raise LookupError(f"{module_name}.{attr} is not a jobq Registry")
    return registry


class _Call:
    """A ctx call waiting for the worker's reply, which the control thread hands over."""

    __slots__ = ("done", "reply")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.reply: Message = {}


class Link:
    """The child's ends of its two sockets, and what the control thread hands over."""

    def __init__(self, jobs: Channel, control: Channel, worker_id: str):
        self._jobs = jobs
        self._control = control
        self.worker_id = worker_id
        self._waiting: list[Message] = []  # jobs read but not started (never more than one)
        self._lock = threading.Lock()
        self.current: RelayedContext | None = None  # the run under way
        self._cancels: set[int] = set()  # cancels that came before their run started
        self.terminating = False
        self._calls: dict[int, _Call] = {}
        self._numbers = itertools.count(1)

    def send(self, message: Message | bytes) -> None:
        if not self._jobs.send(message if isinstance(message, bytes) else encode(message)):
            os._exit(0)  # the worker closed the socket, or is gone

    def next_job(self) -> Message:
        """The next run (main thread): blocks until the worker sends one."""
        while not self._waiting:
            try:
                self._waiting = self._jobs.recv()
            except (EOFError, OSError):
                os._exit(0)  # the worker closed the socket, or is gone: nothing to report
        return self._waiting.pop(0)

    def start(self, message: Message) -> RelayedContext:
        ctx = RelayedContext(self, message, self.worker_id)
        with self._lock:
            self.current = ctx
            if self._cancels:
                if ctx.job_id in self._cancels:
                    ctx.cancelled.set()
                self._cancels.clear()
        return ctx

    def watch(self) -> None:
        """The control thread: cancels, answers to ctx calls, and the worker's end."""
        try:
            while True:
                for message in self._control.recv():
                    if message["op"] == "reply":
                        waiter = self._calls.pop(message["call"], None)
                        if waiter is not None:
                            waiter.reply = message
                            waiter.done.set()
                    elif message["op"] == "cancel":
                        with self._lock:
                            ctx = self.current
                            if ctx is not None and ctx.job_id == message["id"]:
                                ctx.cancelled.set()
                            else:
                                self._cancels.add(message["id"])
        except (EOFError, OSError):
            pass
        os._exit(0)  # the worker closed the socket or is gone: nothing more to do or report

    def call(self, message: Message) -> Message:
        """Ask the worker to do a ctx call for this run, and wait for its answer."""
        number = next(self._numbers)
        waiter = _Call()
        self._calls[number] = waiter
        self.send({**message, "call": number})
        waiter.done.wait()
        return waiter.reply

    def on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self.terminating = True
        ctx = self.current
        if ctx is not None:
            ctx.cancelled.set()
        raise SystemExit(128 + signum)


class RelayedContext(JobContext):
    """``ctx`` in a child: the same interface, with the lease work done by the worker."""

    __slots__ = ("_link",)

    def __init__(self, link: Link, message: Message, worker_id: str):
        super().__init__(None, message["id"], message["token"], message["attempt"], worker_id,
                         message["kind"], message["lease"])
        self._link = link

    def heartbeat(self) -> None:
        self._answer(self._link.call({"op": "heartbeat", "id": self.job_id}))

    def progress(self, fraction: float | None, message: str | None = None) -> None:
        self._answer(self._link.call({"op": "progress", "id": self.job_id,
                                      "fraction": fraction,
                                      "message": None if message is None
                                      else storable(str(message))}))

    def dependency_results(self) -> dict[int, Any]:
        reply = self._link.call({"op": "dependency_results", "id": self.job_id})
        self._answer(reply)
        return {int(k): v for k, v in reply["results"].items()}

    def prepare_complete(self, identity: ConnectionIdentity) -> float:
        """``ctx.complete(conn=...)`` in a child: the worker checks the connection's
        identity, marks the run and says the time; the fenced write then runs here, on
        the child's own application connection (``JobContext.complete``)."""
        reply = self._link.call({"op": "complete", "id": self.job_id, "identity": identity})
        self._answer(reply)
        return float(reply["now"])

    def _answer(self, reply: Message) -> None:
        if reply.get("cancelled"):
            self.cancelled.set()
        error = reply.get("error")
        if error is None:
            return
        if error == "lost":
            self.cancelled.set()
            raise LeaseLost(self.job_id, self._token)
        raise {"ValueError": ValueError, "TypeError": TypeError,
               "UnusableConnection": UnusableConnection}.get(error, JobqError)(
            reply.get("message", error))


class Runner:
    """The main thread: one handler at a time, each outcome sent back as JSON."""

    def __init__(self, link: Link, registry: Registry, max_result_bytes: int):
        self._max_result = max_result_bytes  # checked here: an oversized result never
        self._link = link  # crosses to the worker (whose memory it would cost)
        self._registry = registry
        self._loop: asyncio.AbstractEventLoop | None = None

    def serve(self) -> None:
        link = self._link
        while True:
            link.send(self._run(link.next_job()))

    def _run(self, message: Message) -> Message | bytes:
        job_id = message["id"]
        task = self._registry.get(message["kind"])
        if task is None:  # the parent checked its own registry: the two differ
            return {"op": "done", "id": job_id, "give_up": False,
                    "error": f"no handler for kind {message['kind']!r} in the child process"}
        ctx = self._link.start(message)
        if task.hooks is not None:
            return self._run_hooked(task, task.hooks, message, ctx)
        try:
            loop = self._event_loop() if task.is_async else None
            result = call_handler(task, message["payload"], ctx, message.get("queue", ""),
                                  message.get("trace"))
            if loop is not None:
                result = loop.run_until_complete(result)
        except BaseException as e:  # noqa: BLE001 - a handler's failure is data, never ours
            if self._link.terminating:
                os._exit(128 + signal.SIGTERM)
            return outcome_message(job_id, raised(e, task))
        if self._link.terminating:
            os._exit(128 + signal.SIGTERM)
        if result is None:
            return b'{"op":"done","id":%d,"result":null}' % job_id
        text = result_json(result, self._max_result)
        if isinstance(text, Failed):
            return outcome_message(job_id, text)
        # The result is JSON already (checked by encoding it): put in as it is.
        return b'{"op":"done","id":%d,"result":%s}' % (job_id, text.encode())


    def _run_hooked(self, task: Task, hooks: Hooks, message: Message,
                    ctx: RelayedContext) -> Message:
        """A run with the registry's hooks around it, here in the child (``runs.hooked``):
        the worker sent the claimed job's record for them."""
        job = job_from(message["job"])
        try:
            if task.is_async:
                outcome = self._event_loop().run_until_complete(
                    ahooked(hooks, task, job, ctx, self._max_result))
            else:
                outcome = hooked(hooks, task, job, ctx, self._max_result)
        except BaseException as e:  # noqa: BLE001 - SIGTERM in a hook: see below
            outcome = raised(e, task)
        if self._link.terminating:
            os._exit(128 + signal.SIGTERM)
        return outcome_message(job.id, outcome)

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:  # one loop per child, kept: loop-bound clients survive jobs
            import asyncio  # (on first need: most children never load it)

            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
        return self._loop


def _detach() -> None:
    """Signals and lifetime: see the module's description."""
    os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the death signal was armed
        os._exit(0)
