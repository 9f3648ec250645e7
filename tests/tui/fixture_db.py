"""A small jobq database in every state the monitor shows, built with a fixed clock."""
from __future__ import annotations

from jobq_core import Queue, Registry
from jobq_core.testing import FakeClock

T0 = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC


def build(path, clock: FakeClock | None = None, hostile: str | None = None) -> FakeClock:
    """Fill ``path``; returns the clock, left at the moment the monitor should look.

    With ``hostile``, that string is put into every text field the monitor displays.
    """
    clock = clock or FakeClock(T0 - 500)
    # Names jobq refuses at the door (a NUL) go in through the API without it, and are then
    # written whole with plain SQL, as another program writing the file would.
    h = (hostile or "").replace("\x00", "")
    q = Queue(path, clock=clock, max_attempts=3)
    try:
        # history: succeeded jobs spread over the last minutes (sparklines)
        for i in range(40):
            [j] = q.enqueue_many([{"kind": "send_receipt", "queue": "mail", "payload": {"n": i}}]) and \
                q.claim_many("w-old", 1, queues=["mail"])
            clock.advance(12)
            q.complete(j.id, j.token, {"sent": True})
        clock.set(T0 - 120)
        # dead jobs: one bad deploy (5 same errors) and a single other one
        for i in range(5):
            q.enqueue("build_report" + h, {"report": i, "note": h}, queue="export", max_attempts=1)
        q.enqueue("resize", {"img": "a.png"}, queue="media", max_attempts=1)
        for j in q.claim_many("w1" + h, 10):
            err = ("Traceback (most recent call last):\n"
                   f"  File \"reports.py\", line 3, in build\n    fetch(customer){h}\n"
                   f"RuntimeError: billing API returned HTTP 502 for invoice INV-{1000 + j.id}"
                   f"{h}\n" if j.kind.startswith("build") else "OSError: disk full")
            q.fail(j.id, j.token, err)
        # retries: failed once, waiting for their next attempt
        for i in range(3):
            q.enqueue("sync_crm", {"account": i}, queue="crm" + h)
        for j in q.claim_many("w2", 3, queues=["crm" + h]):
            q.fail(j.id, j.token, f"TimeoutError: CRM did not answer{h}", retry_in=300 + j.id)
        # pending (one old: queue lag), scheduled, cancelled
        clock.set(T0 - 90)
        q.enqueue("send_receipt", {"n": "late"}, queue="mail")
        q.enqueue("digest", {}, queue="mail", delay=3600)
        q.cancel(q.enqueue("noop", None, queue="default"))
        # workers: one fresh, one late (missed a beat), one lost (missed two)
        clock.set(T0 - 60)
        q.register_worker("w1" + h, host="app-1" + h, pid=774, queues=None, concurrency=4)
        q.register_worker("w2", host="app-2", pid=811, queues=["crm" + h, "mail"], concurrency=2)
        q.register_worker("w3", host="app-3", pid=902, queues=["export"], concurrency=1)
        # running: an expired lease (from w3), one near expiry, two healthy, one with progress
        q.enqueue("build_report", {"report": "big"}, queue="export")
        [stuck] = q.claim_many("w3", 1, queues=["export"], lease=18)
        clock.set(T0 - 20)
        q.enqueue_many([{"kind": "send_receipt", "queue": "mail", "payload": {"n": n}}
                        for n in range(3)])
        near, ok1, ok2 = q.claim_many("w1" + h, 3, queues=["mail"], lease=23)
        clock.set(T0 - 5)
        q.extend(ok1.id, ok1.token, lease=30)
        q.extend(ok2.id, ok2.token, lease=30)
        q.progress(ok2.id, ok2.token, 0.45, f"page 9 of 20{h}")
        q.enqueue("sync_crm", {"account": "x"}, queue="crm" + h)
        [crm] = q.claim_many("w2", 1, queues=["crm" + h], lease=30)
        q.cancel(crm.id)
        clock.set(T0 - 25)
        q.beat_worker("w2", busy=1)
        clock.set(T0 - 1)
        q.beat_worker("w1" + h, busy=3)
        # controls: mail runs at its concurrency limit, crm is rate limited, export paused
        q.set_limit("mail", concurrency=3)
        q.set_limit("crm" + h, rate="100/m")
        q.pause("export")
        # schedules (recorded, not ticked yet): every 5 minutes, and daily at 03:00 UTC
        q.register_schedule(Registry().periodic("refresh_rates" + h, every=300, queue="mail"),
                            since=T0 - 120)
        q.register_schedule(Registry().periodic("nightly_report", cron="0 3 * * *"),
                            since=T0 - 3600)
        clock.set(T0)
    finally:
        q.close()
    if hostile and h != hostile:
        _write_back(path, h, hostile)
    return clock


def _write_back(path, admitted: str, hostile: str) -> None:
    """Every text column holding ``admitted`` gets ``hostile`` in its place."""
    import sqlite3

    c = sqlite3.connect(path)
    try:
        for (table,) in c.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                  "AND name LIKE 'jobq%'").fetchall():
            for _, column, kind, *_ in c.execute(f"PRAGMA table_info({table})").fetchall():
                if kind.upper() == "TEXT":
                    c.execute(f"UPDATE {table} SET {column}=replace({column}, ?, ?) "
                              f"WHERE instr({column}, ?) > 0", (admitted, hostile, admitted))
        c.commit()
    finally:
        c.close()
