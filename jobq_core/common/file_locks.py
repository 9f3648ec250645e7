"""Which processes hold a lock on a file, and what they are: what an operator needs to act
on a write that waits (Linux's /proc; elsewhere nothing can be told, and these say so
by returning nothing)."""
from __future__ import annotations

import os


def lock_holders(path: str, byte: int, locks: str = "/proc/locks") -> list[int]:
    """The pids, other than this process, holding a POSIX (fcntl) write lock that covers
    byte ``byte`` of the file ``path``, where the OS says (Linux's /proc/locks lists fcntl
    locks with their owner); [] where it cannot tell."""
    try:
        st = os.stat(path)
        with open(locks) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    file_id = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = []
    for line in lines:
        fields = line.split()
        if len(fields) < 8 or fields[1] == "->":  # "->": a process waiting for the lock
            continue
        _, kind, _, mode, pid, where, start, end = fields[:8]
        if (kind == "POSIX" and mode == "WRITE" and where == file_id and pid.isdigit()
                and int(start) <= byte <= (2**63 if end == "EOF" else int(end))):
            pids.append(int(pid))
    return sorted(set(pids) - {os.getpid()})


def _state(pid: int) -> str:
    """The one-letter state of process ``pid`` (``T``: stopped); ``OSError`` if gone."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rpartition(")")[2].split()[0]


def describe_process(pid: int) -> str:
    """``pid 4242 (jobq run --app tasks, stopped)``: what an operator needs to act."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
        state = _state(pid)
    except OSError:
        return f"pid {pid}"
    words = {"T": "stopped", "t": "stopped by a debugger", "D": "waiting on the disk",
             "Z": "a zombie"}
    command = " ".join(" ".join(os.path.basename(a) if i == 0 else a for i, a in
                                enumerate(argv)).split())  # one line, whatever argv holds
    what = ", ".join(w for w in (command[:80], words.get(state, "")) if w)
    return f"pid {pid} ({what})" if what else f"pid {pid}"


def stopped(pids: list[int]) -> list[str]:
    """Descriptions of the processes among ``pids`` that are stopped (SIGSTOP, a
    debugger): a lock they hold stays held, however long others wait."""
    out = []
    for pid in pids:
        try:
            state = _state(pid)
        except OSError:
            continue
        if state in ("T", "t"):
            out.append(describe_process(pid))
    return out
