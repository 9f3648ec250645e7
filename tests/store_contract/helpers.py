"""Jobs in a given state, made through the public API, and databases as an older jobq
left them, for the contract tests."""
from __future__ import annotations

from jobq_core import Queue


def dead_job(queue: Queue, kind: str = "k", error: str = "boom", queue_name: str = "default",
             **enqueue_options) -> int:
    """A job that failed its only attempt with ``error``; its id."""
    job_id = queue.enqueue(kind, queue=queue_name, max_attempts=1, **enqueue_options)
    job = queue.claim("w", queues=[queue_name])
    assert job.id == job_id, "another job was ready first"
    queue.fail(job.id, job.token, error)
    assert queue.get(job_id).status == "dead"
    return job_id


def succeeded_job(queue: Queue, kind: str = "k", result=None, **enqueue_options) -> int:
    """A job that ran once and succeeded; its id."""
    job_id = queue.enqueue(kind, **enqueue_options)
    job = queue.claim("w")
    assert job.id == job_id, "another job was ready first"
    queue.complete(job.id, job.token, result)
    return job_id


def old_schema(database: str, *, sqlite: int, postgresql: int, statements: tuple[str, ...] = (),
               ) -> None:
    """jobq's tables in the suite's ``database`` (an SQLite file not created yet, or a
    PostgreSQL database whose current tables go) as an older jobq left them: at schema
    version ``sqlite`` or ``postgresql``, then ``statements`` run on them (written with
    no parameters, in SQL both stores take)."""
    meta = "INSERT INTO jobq_meta VALUES ('application', 'jobq'), ('schema_version', '{}')"
    if database.startswith("postgresql:"):
        import psycopg

        from jobq_core.store.postgres.schema import MIGRATIONS, TABLES
        with psycopg.connect(database, autocommit=True) as c:
            c.execute("DROP TABLE " + ", ".join(TABLES) + "; DROP SEQUENCE jobq_tokens")
            for script in MIGRATIONS[:postgresql]:
                c.execute(script)
            for statement in (meta.format(postgresql), *statements):
                c.execute(statement)
        return
    import sqlite3

    from jobq_core.store.sqlite.schema import MIGRATIONS, _split_statements
    c = sqlite3.connect(database, isolation_level=None)
    c.execute("BEGIN IMMEDIATE")
    for script in MIGRATIONS[:sqlite]:
        if callable(script):
            script(c)
        else:
            for statement in _split_statements(script):
                c.execute(statement)
    for statement in (meta.format(sqlite), *statements):
        c.execute(statement)
    c.execute("COMMIT")
    c.close()
