"""The reaper and a completing worker really contending for SQLite's write lock: a third
connection holds the lock on purpose while both line up behind it, then lets go. Which
one gets the lock first is up to SQLite; the test asserts that either way the winner's
change is whole and the loser changed nothing (the orders themselves are asserted one by
one in tests/store_contract/test_reap_race.py)."""
import sqlite3
import threading
import time

from jobq_core import Backoff, Queue

JOBS = 30


def test_a_completion_and_a_reap_let_go_together_end_in_one_whole_outcome(db_path, clock):
    worker = Queue(db_path, clock=clock)
    reaper = Queue(db_path, clock=clock, backoff=Backoff(base=60, cap=60))
    worker.enqueue_many([("k", i) for i in range(JOBS)])
    claims = worker.claim_many("w", JOBS, lease=5)
    clock.advance(6)
    results = {}
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    sides = [
        threading.Thread(target=lambda: results.update(accepted=worker.complete_many(
            [(c.id, c.token, "done") for c in claims]))),
        threading.Thread(target=lambda: results.update(reaped=reaper.reap())),
    ]
    try:
        for t in sides:
            t.start()
        time.sleep(0.1)  # time to reach the lock; the assertions hold however they arrive
        assert all(t.is_alive() for t in sides) and results == {}  # both wait for the lock
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    for t in sides:
        t.join(60)

    if results["reaped"] == 0:  # the completions won: every one, and the reaper found none
        assert results["accepted"] == [True] * JOBS
        assert {(j.status, j.result) for j in worker.list(limit=JOBS)} == {("succeeded", "done")}
        expected = ["succeeded"]
    else:  # the reaper won: every job, and no completion was written
        assert results == {"reaped": JOBS, "accepted": [False] * JOBS}
        assert {(j.status, j.result) for j in worker.list(limit=JOBS)} == {("pending", None)}
        expected = ["lease expired"]
    for c in claims:
        assert [a.outcome for a in worker.attempts(c.id)] == expected
    worker.close(), reaper.close()
