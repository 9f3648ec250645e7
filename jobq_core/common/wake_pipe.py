"""How a thread sleeping in ``select`` is woken from another thread or a signal handler
(every store's ``Watch.wake``), and reading what a non-blocking descriptor holds."""
from __future__ import annotations

import os


class WakePipe:
    """``fd`` becomes readable once ``wake()`` was called, until ``drain()``."""

    def __init__(self) -> None:
        self.fd, self._w = os.pipe()
        os.set_blocking(self.fd, False)
        os.set_blocking(self._w, False)

    def wake(self) -> None:
        """Safe from a signal handler."""
        try:
            os.write(self._w, b"!")
        except OSError:
            pass  # already pending (the pipe is full), or closed

    def drain(self) -> None:
        drain(self.fd)

    def close(self) -> None:
        for fd in (self.fd, self._w):
            try:
                os.close(fd)
            except OSError:
                pass


def drain(fd: int) -> bytes:
    """Everything a non-blocking ``fd`` holds now."""
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # BlockingIOError: nothing more
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)
