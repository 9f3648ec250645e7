"""A watch of the files of one directory whose names start with a prefix (a database file
and the files its engine writes beside it), through Linux's inotify: a waiter sleeps in
``select`` and wakes within a millisecond of a write() by any process, at no CPU cost while
nothing is written. None where inotify cannot be had; the caller polls instead.

Every write() to a watched file costs its writer (any process) a notification, so the
directory is watched only while someone waits (``arm`` / ``disarm``).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import struct
import sys

from .wake_pipe import WakePipe, drain


_IN_MODIFY = 0x00000002
_IN_CLOSE_WRITE = 0x00000008
_IN_MOVED_TO = 0x00000080
_IN_CREATE = 0x00000100
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_MASK = _IN_MODIFY | _IN_CLOSE_WRITE | _IN_MOVED_TO | _IN_CREATE
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        return libc
    except (OSError, AttributeError):
        return None


class FileWatch:
    """Blocks until a file of the watched directory whose name starts with ``prefix`` is
    written, ``wake()`` is called, or a timeout passes."""

    def __init__(self, fd: int, prefix: bytes, libc: ctypes.CDLL, directory: bytes):
        self._fd = fd
        self._prefix = prefix
        self._libc = libc
        self._directory = directory
        self._wd: int | None = None  # the watch descriptor while armed
        self._pipe = WakePipe()

    @classmethod
    def open(cls, path: str) -> FileWatch | None:
        """A watch of ``path`` and of the files beside it whose names start with its name
        (a database's ``-wal``, ``-journal``, ...), disarmed; None where inotify cannot
        be had (not Linux, out of inotify instances or watches): the caller polls."""
        libc = _libc()
        if libc is None:
            return None
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return None
        watch = cls(fd, os.fsencode(os.path.basename(path)), libc,
                    os.fsencode(os.path.dirname(os.path.abspath(path)) or "."))
        if not watch.arm():  # e.g. out of watches: the caller polls instead
            watch.close()
            return None
        watch.disarm()
        return watch

    def arm(self) -> bool:
        """Watch the directory (from now on its writes are reported); False if inotify
        refuses. Armed only while someone waits: every write() to a watched file costs
        the writer a notification, and a busy worker's own commits are many writes."""
        if self._wd is None:
            wd = self._libc.inotify_add_watch(self._fd, self._directory, _MASK)
            if wd < 0:
                return False
            self._wd = wd
        return True

    def disarm(self) -> None:
        if self._wd is not None:
            self._libc.inotify_rm_watch(self._fd, self._wd)
            self._wd = None
            drain(self._fd)  # the events queued so far, and the removal's own

    def wait(self, timeout: float) -> bool:
        """True when a watched file was written (or ``wake()`` called) within ``timeout``."""
        try:
            ready, _, _ = select.select([self._fd, self._pipe.fd], [], [], max(0.0, timeout))
        except (OSError, ValueError):  # closed under us: behave as a timeout
            return False
        woke = False
        if self._pipe.fd in ready:
            self._pipe.drain()
            woke = True
        if self._fd in ready:
            woke = self._ours(drain(self._fd)) or woke
        return woke

    def wake(self) -> None:
        """Make a ``wait`` in another thread return now. Safe from a signal handler."""
        self._pipe.wake()

    def _ours(self, data: bytes) -> bool:
        """Whether the events name one of the watched files (the prefix's)."""
        offset = 0
        while offset + _EVENT.size <= len(data):
            _wd, _mask, _cookie, length = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size: offset + _EVENT.size + length].rstrip(b"\0")
            if name.startswith(self._prefix):
                return True
            offset += _EVENT.size + length
        return False

    def close(self) -> None:
        self._pipe.close()
        try:
            os.close(self._fd)
        except OSError:
            pass
