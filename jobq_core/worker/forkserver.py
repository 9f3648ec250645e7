"""The fork server: one clean process per process pool that forks the pool's children.

Why not fork the worker itself: it has threads (a fork copies a lock another thread holds,
which then never opens) and an open SQLite connection (a forked copy can corrupt the
file). Why not ``multiprocessing``'s spawn or forkserver: each of their children imports
the parent's ``__main__`` again — ``jobq_cli.main`` for ``jobq run``, with Typer and Rich
(0.25 s measured here), and a script without a ``__main__`` guard forks without end — and
spawn starts a fresh interpreter per child (~100 ms). This server is a fresh interpreter
that imports what children run (``child.py``, ``jobq_core``; not the Worker's threads,
claimer and completer, nor asyncio until an async handler runs; no threads, no connection
on import), once (~0.1 s to its first child), then answers a fork request in ~1.4 ms; the
child, which imports the app module itself, is ready ~11 ms after the request (measured on
a 2-vCPU VM).

Protocol, one JSON line per message on a Unix socket pair (``channel.py``):
  worker -> server   {"args": [...], "fds": N} with N file descriptors attached (the child's
                     ends of its sockets): fork a child running ``child.main(*args, *fds)``
  server -> worker   {"pid": N} for each fork, in order; {"exited": N, "code": C} when a
                     child ends (C as ``Popen.returncode``: -11 for SIGSEGV)

Lifetime: the server ends at EOF on its socket — the worker closed it (after its children
ended), or the worker died, however: the kernel closes a dead process's descriptors. Then
it SIGKILLs the children still alive: when the worker is gone, nobody would read their
results. It has a session of its own (as have the children), so a Ctrl-C or a signal to
the worker's process group leaves it to the worker to decide.
"""
from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
from types import ModuleType
from typing import Any, NoReturn

from .channel import CHUNK, Channel, Message, WakePipe, encode, pair

FORK_TIMEOUT = 30.0  # seconds for the server to answer a fork (it takes milliseconds)


class ForkServer:
    """The worker's handle on its fork server. Used by one thread (the pool's supervisor),
    except ``kill``."""

    def __init__(self) -> None:
        ours, theirs = pair()
        code = (f"import sys; sys.path[:] = {sys.path!r}; "
                f"from jobq_core.worker.forkserver import serve; serve({theirs.fileno()})")
        try:
            self._process = subprocess.Popen([sys.executable, "-c", code],
                                             pass_fds=[theirs.fileno()],
                                             stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            theirs.close()
        self.pid = self._process.pid
        self._channel = Channel(ours)
        self._exits: list[tuple[int, int]] = []

    def fileno(self) -> int:
        return self._channel.fileno()

    def fork(self, args: list[Any], fds: list[int]) -> int:
        """Start a child running ``child.main(*args, *fds)``; its pid."""
        socket.send_fds(self._channel.sock, [encode({"args": args, "fds": len(fds)}) + b"\n"],
                        fds)
        pid: int | None = None
        while pid is None:
            for message in self._messages(block=True):
                if "pid" in message:
                    pid = message["pid"]
                else:  # kept for exits(): the socket may not be readable again for them
                    self._exits.append((message["exited"], message["code"]))
        return pid

    def exits(self, read: bool = True) -> list[tuple[int, int]]:
        """(pid, code) of the children that ended since the last call: those ``fork`` read
        on the way, and with ``read`` (the socket is readable) what there is to read.
        Raises ``EOFError`` when the server is gone."""
        if read:
            for message in self._messages(block=False):
                self._exits.append((message["exited"], message["code"]))
        exits, self._exits = self._exits, []
        return exits

    def close(self, timeout: float = 5.0) -> None:
        """End the server (it SIGKILLs any child still alive) and reap it."""
        self._channel.close()
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self._process.wait()

    def kill(self) -> None:
        try:
            self._process.kill()
        except ProcessLookupError:
            pass

    def _messages(self, block: bool) -> list[Message]:
        self._channel.sock.settimeout(FORK_TIMEOUT if block else 0.0)
        try:
            return self._channel.recv()
        except BlockingIOError:
            return []
        except EOFError:
            raise EOFError("the fork server ended") from None


# -- the server process ----------------------------------------------------------------------

def serve(fd: int) -> None:
    """The server's main loop (``python -c``, see ``ForkServer``)."""
    from . import child  # imports jobq_core: once here, not in every child

    sock = socket.socket(fileno=fd)
    channel = Channel(sock)
    wake = WakePipe()
    signal.set_wakeup_fd(wake.write_fd)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wakeup fd is written
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    children: set[int] = set()
    fds: list[int] = []
    watched: list[socket.socket | WakePipe] = [sock, wake]
    try:
        while True:
            ready, _, _ = select.select(watched, [], [])
            if wake in ready:
                wake.drain()
                for pid, code in _reap():
                    children.discard(pid)
                    if not channel.send(encode({"exited": pid, "code": code})):
                        _gone()
            if sock in ready:
                data, new_fds, _, _ = socket.recv_fds(sock, CHUNK, 16)
                if not data:
                    return  # the worker closed the socket, or died
                fds += new_fds
                for request in channel.received(data):
                    theirs, fds = fds[:request["fds"]], fds[request["fds"]:]
                    pid = os.fork()
                    if pid == 0:
                        _become_child(child, request["args"], theirs,
                                      [sock.fileno(), wake.read_fd, wake.write_fd, *fds])
                    for fd in theirs:
                        os.close(fd)
                    children.add(pid)
                    if not channel.send(encode({"pid": pid})):
                        _gone()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the worker is gone
    finally:
        for pid in children:
            signal_group(pid, signal.SIGKILL)


def _gone() -> NoReturn:
    raise BrokenPipeError("the worker is gone")


def _become_child(child: ModuleType, args: list[Any], fds: list[int], close: list[int]
                  ) -> NoReturn:
    """In the forked child: drop the server's state, run ``child.main``, never return."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in close:
            os.close(fd)
        child.main(*args, *fds)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported on stderr, as an uncaught error would be
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        os._exit(code)


def _reap() -> list[tuple[int, int]]:
    ended: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid == 0:
            return ended
        ended.append((pid, os.waitstatus_to_exitcode(status)))


def signal_group(pid: int, signum: int) -> None:
    """Signal a child and the subprocesses it started: it leads a process group (its
    session's), unless it has not got that far yet (then the child alone). Nothing
    happens when it is gone."""
    for send in (os.killpg, os.kill):
        try:
            send(pid, signum)
            return
        except ProcessLookupError:
            return
        except PermissionError:  # no such group yet, and its id names another process's
            continue
