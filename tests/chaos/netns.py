"""Several "hosts" on one machine: network namespaces, each joined to this one by a veth
pair, and a small TCP relay per host (``tests/relay.py``) that carries its connections to
the PostgreSQL server (which listens on loopback, out of a namespace's reach).

    this namespace                         host namespace (jobq-PID-hN)
    relay on 169.254.X.(4N+1):port  <-veth->  169.254.X.(4N+2)  worker processes
      -> server at 127.0.0.1

A worker in a host connects to ``host.url(database_url)``. ``host.cut()`` takes the link
down, as a pulled cable or a partition would: its packets go nowhere, nothing is closed,
and its TCP connections resume when ``host.mend()`` brings the link back (the kernel
retransmits what was held); ``cut(silent=False)`` downs the host's own end instead, so
its new connections fail at once. Every address is link-local, on
links that exist only between this machine's namespaces.

``available()`` says whether this process may create namespaces (root, with ``ip``), and
if not why: the tests skip with that reason.
"""
from __future__ import annotations

import os
import random
import shutil
import subprocess

from relay import Relay


def _ip(*args: str, ns: str | None = None) -> subprocess.CompletedProcess:
    cmd = ["ip", *(["netns", "exec", ns, "ip"] if ns else []), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


def _must(proc: subprocess.CompletedProcess) -> None:
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(proc.args)} failed: {proc.stderr.strip()}")


def available() -> str | None:
    """None when namespaces can be made here, else why not."""
    if not shutil.which("ip"):
        return "the ip command (iproute2) is not installed"
    probe = f"jobq-probe-{os.getpid()}"
    made = _ip("netns", "add", probe)
    if made.returncode != 0:
        return f"ip netns is not permitted here ({made.stderr.strip() or 'ip netns add failed'})"
    _ip("netns", "del", probe)
    return None


def _used_subnets() -> set[str]:
    out = _ip("-o", "-4", "addr", "show").stdout
    return {word.split("/")[0].rsplit(".", 1)[0] for word in out.split() if word.count(".") == 3}


class Host:
    """One namespace, its veth pair and its relay to ``server`` (host, port)."""

    def __init__(self, index: int, server: tuple[str, int]):
        tag = f"{os.getpid() % 100000}{index}"
        self.ns = f"jobq-{os.getpid()}-h{index}"
        self.outer, self.inner = f"jq{tag}a", f"jq{tag}b"  # at most 15 characters
        used = _used_subnets()
        rng = random.Random(os.getpid() * 31 + index)
        while True:  # a /30 of 169.254.0.0/16 no interface here uses yet
            prefix = f"169.254.{rng.randrange(1, 254)}"
            base = 4 * rng.randrange(0, 63)
            if prefix not in used:
                break
        self.outer_addr, self.inner_addr = f"{prefix}.{base + 1}", f"{prefix}.{base + 2}"
        self.relay: Relay | None = None
        try:
            _must(_ip("netns", "add", self.ns))
            _must(_ip("link", "add", self.outer, "type", "veth", "peer", "name", self.inner))
            _must(_ip("link", "set", self.inner, "netns", self.ns))
            _must(_ip("addr", "add", f"{self.outer_addr}/30", "dev", self.outer))
            _must(_ip("link", "set", self.outer, "up"))
            _must(_ip("addr", "add", f"{self.inner_addr}/30", "dev", self.inner, ns=self.ns))
            _must(_ip("link", "set", self.inner, "up", ns=self.ns))
            _must(_ip("link", "set", "lo", "up", ns=self.ns))
            self.relay = Relay(self.outer_addr, server)
        except BaseException:
            self.remove()
            raise

    def url(self, database_url: str) -> str:
        """``database_url`` as this host reaches it: through its relay."""
        assert self.relay is not None
        return self.relay.url(database_url)

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` run inside this host (``ip netns exec`` execs it: the pid is the
        program's own)."""
        return ["ip", "netns", "exec", self.ns, *argv]

    def cut(self, *, silent: bool = True) -> None:
        """Take the link down: nothing gets in or out of the host.

        Either way the host's open connections hang, their packets dropped, until the
        link returns. ``silent`` (a pulled cable at the far end, a partition): this
        machine's end goes down; the host's stays up without a carrier, and a connection
        it opens meanwhile waits too (and is refused once the link is back, measured).
        Otherwise the host's own end goes down and its route with it: a connection it
        opens fails at once ("Network is unreachable")."""
        if silent:
            _must(_ip("link", "set", self.outer, "down"))
        else:
            _must(_ip("link", "set", self.inner, "down", ns=self.ns))
        self._cut = silent

    def mend(self) -> None:
        if getattr(self, "_cut", True):
            _must(_ip("link", "set", self.outer, "up"))
        else:
            _must(_ip("link", "set", self.inner, "up", ns=self.ns))

    def remove(self) -> None:
        if self.relay is not None:
            self.relay.close()
        _ip("link", "del", self.outer)  # takes its peer with it
        _ip("netns", "del", self.ns)
