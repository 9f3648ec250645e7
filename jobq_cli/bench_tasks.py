"""The handlers of ``jobq bench``'s worker measurements, at module level so that the child
processes of a process pool can import them (``jobq_cli.bench_tasks:registry``)."""
from __future__ import annotations

from typing import Any

from jobq_core import Registry

NOOP = "bench.noop"
CPU = "bench.cpu"
CPU_LOOPS = 250_000  # pure-Python iterations: ~20 ms of CPU on the machine docs/performance.md was measured on

registry = Registry()


@registry.task(NOOP)
def noop(payload: Any) -> None:
    return None


@registry.task(CPU)
def cpu(payload: Any) -> None:
    """A fixed amount of pure-Python work, holding the GIL throughout."""
    x = 0
    for i in range(CPU_LOOPS):
        x += i * i % 7
