"""Text a handler hands over that the database cannot hold as it is (a lone surrogate from
``os.fsdecode``, a NUL, which PostgreSQL's text refuses) is stored escaped, on every store,
with a real Worker: the other outcomes of the same batch are written too."""
from __future__ import annotations

from jobq_core import Backoff, Queue, Registry, Worker

QUICK = Backoff(base=0.01, cap=0.01)


def _registry() -> Registry:
    r = Registry()

    @r.task("bad", max_attempts=1)
    def bad(payload):
        raise ValueError({"surrogate": "\udcff", "nul": "nul\x00here"}[payload])

    @r.task("good")
    def good(payload, ctx):
        ctx.progress(0.5, "read file-\udcff\x00")
        return payload

    return r


def test_an_error_text_the_database_cannot_hold_is_stored_escaped_and_the_batch_is_written(
        database):
    with Queue(database) as q:
        bad = [q.enqueue("bad", which) for which in ("surrogate", "nul")]
        good = q.enqueue_many([("good", i) for i in range(6)])
        w = Worker(q, _registry(), concurrency=4)
        w.run(burst=True, handle_signals=False)
        assert {q.get(i).status for i in good} == {"succeeded"}
        assert [q.get(i).result for i in good] == list(range(6))
        assert {q.get(i).progress_message for i in good} == {"read file-\\udcff\\x00"}
        first, second = (q.get(i) for i in bad)
        assert first.status == second.status == "dead"
        assert first.error.rstrip().endswith("ValueError: \\udcff")
        assert second.error.rstrip().endswith("ValueError: nul\\x00here")
        assert "lease expired" not in first.error + second.error
        assert w.counts["succeeded"] == 6 and w.counts["dead"] == 2
