"""Query plans: the hot statements read the partial indexes and never sort or scan the
whole table, so they stay fast however many finished jobs pile up."""
import sqlite3

from jobq_core.store.base import ListFilter
from jobq_core.store import listing
from jobq_core.store.sqlite.dialect import DIALECT

sql = DIALECT.statements  # the shared statements in SQLite's spelling


def test_the_claim_uses_the_partial_pending_indexes_and_never_sorts_the_backlog(queue):
    plan = queue.store.explain_claim()
    assert any("USING INDEX jobq_jobs_pending" in line for line in plan), plan
    assert not any("TEMP B-TREE" in line for line in plan), plan
    plan = queue.store.explain_claim(["mail"], limit=4)
    assert any("INDEX jobq_jobs_pending_queue (queue=?)" in line for line in plan), plan
    assert not any("TEMP B-TREE" in line for line in plan), plan


def test_reap_and_stats_read_only_partial_indexes_never_the_whole_table(queue, db_path):
    conn = sqlite3.connect(db_path)  # the plan is the schema's, whichever connection asks

    def plan(sql, *params):
        return " | ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params))

    assert "INDEX jobq_jobs_running" in plan(sql.EXPIRED_LEASES, 0.0, 1.0, 10)
    assert "INDEX jobq_jobs_running" in plan(sql.RUNNING_BY_QUEUE, 0.0)
    assert "INDEX jobq_jobs_finished" in plan(sql.RECENT_FINISHED, 0.0)
    assert "COVERING INDEX jobq_jobs_dead" in plan(sql.DEAD_BY_QUEUE)
    pending = plan(sql.PENDING_BY_QUEUE, 0.0, 0.0, 0.0)
    assert "SCAN j USING INDEX jobq_jobs_pending_queue" in pending, pending
    assert "TEMP B-TREE" not in pending  # and a held key's probes each seek jobq_jobs_key:
    assert pending.count("SCAN") == 1 and "INDEX jobq_jobs_key" in pending, pending
    where = ListFilter(status="dead", limit=50)
    conds, params, order = listing.list_conditions(DIALECT.MATCHING, where, 0.0)
    dead_list = plan(f"SELECT id FROM jobq_jobs WHERE {' AND '.join(conds)} ORDER BY {order}",
                     *params)
    assert "INDEX jobq_jobs_finished" in dead_list and "TEMP B-TREE" not in dead_list, dead_list


def test_with_a_controlled_queue_holding_jobs_a_claim_seeks_each_queue_instead_of_scanning(
        queue, monkeypatch):
    from jobq_core.store import controls

    monkeypatch.setattr(controls, "TTL", 0.0)
    queue.enqueue_many([{"kind": "k", "queue": "held"} for _ in range(5)] + [("k", 1)])
    plain = queue.store.explain_claim()
    assert any("jobq_jobs_pending " in line or line.endswith("jobq_jobs_pending")
               for line in plain), plain
    queue.pause("held")  # its jobs are first in claim order: the plain scan would step over them
    plan = queue.store.explain_claim()
    assert any("INDEX jobq_jobs_pending_queue (queue>?)" in line for line in plan), plan
    assert any("INDEX jobq_jobs_pending_queue (queue=?)" in line for line in plan), plan
    assert not any("USING INDEX jobq_jobs_pending " in line for line in plan), plan
    assert [j.queue for j in queue.claim_many("w", 5)] == ["default"]
