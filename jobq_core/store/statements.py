"""The SQL both stores share: the same logic on the same schema, written once.

Both stores keep the same table and the same partial indexes, so most reads are the
same text but for the placeholder (``?`` on SQLite, ``%s`` on psycopg). Each piece here
takes it as ``p``; what really differs (the claim, batches as arrays, booleans, string
functions) stays in each store's own ``statements.py``.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

PENDING_ORDER = "priority DESC, run_at, id"
"""The claim order, which both pending indexes follow."""


@functools.lru_cache(maxsize=32)
def next_run_at_sql(n_queues: int, p: str) -> str:
    """The earliest ``run_at`` after a given time among pending jobs (of the named queues,
    or of all): what an idle worker sets its timer by. Parameters: ``next_run_at_params``.

    Cheap with a million jobs scheduled: the pending indexes are ordered by priority
    first, so this is a loose index scan, two index seeks per distinct priority (the
    next priority below the last one, and the first ``run_at`` after the time within it),
    never a walk over the backlog. Several queues are one such scan each."""
    arms = []
    for i in range(max(1, n_queues)):
        q = f"queue={p} AND " if n_queues else ""
        first = "queue, " if n_queues else ""
        arms.append(
            f"pr{i}(p) AS (SELECT (SELECT priority FROM jobq_jobs WHERE {q}status='pending' "
            f"ORDER BY {first}priority DESC LIMIT 1) UNION ALL "
            f"SELECT (SELECT priority FROM jobq_jobs WHERE {q}status='pending' "
            f"AND priority<pr{i}.p ORDER BY {first}priority DESC LIMIT 1) FROM pr{i} "
            f"WHERE pr{i}.p IS NOT NULL)")
    picks = " UNION ALL ".join(
        f"SELECT (SELECT run_at FROM jobq_jobs WHERE {f'queue={p} AND ' if n_queues else ''}"
        f"status='pending' AND priority=pr{i}.p AND run_at>{p} "
        f"ORDER BY {'queue, ' if n_queues else ''}priority DESC, run_at LIMIT 1) AS t "
        f"FROM pr{i} WHERE pr{i}.p IS NOT NULL"
        for i in range(max(1, n_queues)))
    return f"WITH RECURSIVE {', '.join(arms)} SELECT min(t) FROM ({picks}) AS firsts"


def next_run_at_params(queues: Sequence[str], after: float) -> list:
    if not queues:
        return [after]
    return [q for q in queues for _ in range(2)] + [x for q in queues for x in (q, after)]
