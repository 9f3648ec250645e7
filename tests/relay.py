"""A TCP relay to the PostgreSQL server, for tests that break the path between a client
and the server: ``Relay(listen, (host, port))`` accepts on ``listen`` and pipes each
connection to the server, until closed.

``refusing = True`` makes every new connection fail at once (the relay closes it as soon
as it is accepted: "server closed the connection unexpectedly") while the open ones carry
on, as for a host whose own end of the link went down while its connections were idle.
``url(database_url)`` is that URL as a client of the relay reaches it.
"""
from __future__ import annotations

import select
import socket
import threading
from urllib.parse import urlsplit, urlunsplit


class Relay:
    """One select loop per connection, on a thread of its own (one thread per direction
    would do too)."""

    def __init__(self, listen: str, target: tuple[str, int]):
        self.target = target
        self.refusing = False
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((listen, 0))
        self._sock.listen(64)
        self.address = listen
        self.port = self._sock.getsockname()[1]
        self._closed = False
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="relay", daemon=True).start()

    def url(self, database_url: str) -> str:
        """``database_url`` through this relay."""
        parts = urlsplit(database_url)
        netloc = parts.netloc.rsplit("@", 1)
        user = f"{netloc[0]}@" if len(netloc) == 2 else ""
        return urlunsplit(parts._replace(netloc=f"{user}{self.address}:{self.port}"))

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            if self.refusing:
                client.close()
                continue
            try:
                server = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self._conns += [client, server]
            threading.Thread(target=self._pipe, args=(client, server), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        peer = {a: b, b: a}
        try:
            while not self._closed:
                ready, _, _ = select.select([a, b], [], [], 0.5)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    peer[s].sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.close()
                except OSError:
                    pass

    def close(self) -> None:
        self._closed = True
        self._sock.close()
        with self._lock:
            for s in self._conns:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
