"""One JSON message per line over a Unix socket: how the worker, its fork server and its
child processes talk. JSON text never holds a raw newline (``json`` escapes it in strings),
so a newline ends a message. One ``recv`` takes whatever has arrived, often several
messages, where ``multiprocessing.Connection`` reads a length header and a body with two
calls per message; a reader never blocks on the rest of a long message it has begun.
"""
from __future__ import annotations

import json
import os
import socket
import threading
from typing import Any

from ..api.new_jobs import encode_json

CHUNK = 65536

# One message: a JSON object, its "op" saying what the rest holds.
Message = dict[str, Any]


def encode(message: Message) -> bytes:
    """A message as JSON bytes, through jobq's own encoder, which is built once: 1.7 us a
    run message, against 2.5 us with ``JSONEncoder.encode`` (a C encoder built per call)
    and 2.9 us with ``json.dumps`` (timeit)."""
    return encode_json(message, "message").encode()


class Channel:
    """One end of a socket pair. ``send`` from any thread; ``recv`` from one."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._send_lock = threading.Lock()
        self._parts: list[bytes] = []  # the start of a message not yet complete

    def fileno(self) -> int:
        return self.sock.fileno()

    @property
    def closed(self) -> bool:
        return self.sock.fileno() == -1

    def send(self, data: bytes) -> bool:
        """Send one message (JSON bytes, no newline). False when the other end is gone."""
        try:
            with self._send_lock:
                self.sock.sendall(data + b"\n")
        except (OSError, ValueError):
            return False
        return True

    def recv(self) -> list[Message]:
        """The messages one read completes (perhaps none: a long one has only begun).
        Blocks until something arrives; raises ``EOFError`` at the end."""
        data = self.sock.recv(CHUNK)
        if not data:
            raise EOFError
        return self.received(data)

    def received(self, data: bytes) -> list[Message]:
        """The messages ``data``, read from the socket, completes."""
        if b"\n" not in data:
            self._parts.append(data)
            return []
        if self._parts:
            self._parts.append(data)
            data = b"".join(self._parts)
            self._parts = []
        *lines, rest = data.split(b"\n")
        if rest:
            self._parts.append(rest)
        return [json.loads(line) for line in lines]

    def close(self) -> None:
        self.sock.close()


def pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


class WakePipe:
    """A pipe to wake a thread that waits in ``select`` on its read end (or, as a signal
    wake-up fd, to learn of a signal). Both ends non-blocking: ``wake`` never blocks, even
    from a signal handler, and ``drain`` empties it."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)

    def fileno(self) -> int:
        return self.read_fd

    def wake(self) -> None:
        try:
            os.write(self.write_fd, b"!")
        except OSError:  # BlockingIOError: a wake-up is pending already; or closed
            pass

    def drain(self) -> None:
        try:
            while os.read(self.read_fd, 4096):
                pass
        except BlockingIOError:
            pass

    def close(self) -> None:
        os.close(self.read_fd)
        os.close(self.write_fd)
