"""Processes as Linux's /proc shows them, for tests that must prove no child is left."""
from __future__ import annotations

import os


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of ``pid``, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2:].split()  # the name, in parentheses, may hold spaces
    return fields[0], int(fields[1])


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, waiting to be reaped, has ended)."""
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid``: its children, theirs, and so on."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (stat := _stat(int(name))) and stat[0] != "Z":
            parents[int(name)] = stat[1]
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        for child, p in parents.items():
            if p == parent and child not in found:
                found.add(child)
                todo.append(child)
    return found
