"""conn= takes a SQLAlchemy Connection or Session (sync; SQLite through pysqlite,
PostgreSQL through psycopg 3): jobq's enqueue or fenced completion joins its transaction,
and commits or rolls back with the application's writes."""
from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from jobq_core import JobStatus, Queue, Registry, UnusableConnection
from jobq_core.testing import FakeClock, drain


class Base(DeclarativeBase):
    pass


class Order(Base):
    __tablename__ = "orders"
    id: Mapped[int] = mapped_column(primary_key=True)
    state: Mapped[str]


@pytest.fixture
def setup(database, adapter):
    """(queue, SQLAlchemy engine) on one database, with the application's table."""
    q = Queue(database, clock=FakeClock())
    engine = sa.create_engine(adapter.sqlalchemy_url(database))
    Base.metadata.create_all(engine)
    yield q, engine
    engine.dispose()
    q.close()


def orders(engine) -> list[tuple[int, str]]:
    with engine.connect() as c:
        return [tuple(r) for r in c.execute(sa.text("SELECT id, state FROM orders ORDER BY id"))]


def test_an_enqueue_on_a_connection_commits_and_rolls_back_with_it(setup):
    q, engine = setup
    with pytest.raises(RuntimeError):
        with engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO orders (id, state) VALUES (1, 'new')"))
            q.enqueue("order.ship", {"order": 1}, conn=conn)
            raise RuntimeError("the request failed")
    assert q.count() == 0 and orders(engine) == []
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO orders (id, state) VALUES (2, 'new')"))
        job_id = q.enqueue("order.ship", {"order": 2}, conn=conn)
        ids = q.enqueue_many([("order.audit", 2), ("order.audit", 3)], conn=conn)
    assert q.get(job_id).payload == {"order": 2} and len(ids) == 2
    assert orders(engine) == [(2, "new")]


def test_a_connection_with_no_transaction_yet_gets_one_that_its_commit_commits(setup):
    q, engine = setup
    with engine.connect() as conn:
        q.enqueue("k", conn=conn)  # nothing executed on it before: jobq begins it
        conn.commit()
    with engine.connect() as conn:
        q.enqueue("k", conn=conn)
        # leaving without commit: SQLAlchemy rolls back
    assert q.count() == 1


def test_an_enqueue_in_a_session_commits_and_rolls_back_with_it(setup):
    q, engine = setup
    make = sessionmaker(engine)
    with make() as session:
        session.add(Order(id=1, state="new"))
        q.enqueue("order.ship", {"order": 1}, conn=session)
        session.rollback()
    assert q.count() == 0 and orders(engine) == []
    with make() as session:
        session.add(Order(id=2, state="new"))
        session.flush()
        q.enqueue("order.ship", {"order": 2}, conn=session)
        session.commit()
    assert q.count() == 1 and orders(engine) == [(2, "new")]


def test_a_task_enqueues_in_a_session_too(setup):
    q, engine = setup
    r = Registry()
    ship = r.task("order.ship", queue="shipping")(lambda p: None)
    with Session(engine) as session, session.begin():
        session.add(Order(id=3, state="new"))
        job_id = ship.enqueue(q, {"order": 3}, conn=session)
    assert q.get(job_id).queue == "shipping"


def test_a_handler_completes_its_job_in_a_session_with_its_own_writes(setup):
    q, engine = setup
    r = Registry()
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO orders (id, state) VALUES (1, 'new'), (2, 'new')"))

    @r.task("order.ship")
    def ship(payload, ctx):
        with Session(engine) as session:
            session.get(Order, payload["order"]).state = "shipped"
            ctx.complete({"shipped": payload["order"]}, conn=session)
            if payload.get("fail"):
                session.rollback()  # the application changes its mind: neither is written
                raise RuntimeError("carrier down")
            session.commit()

    done = q.enqueue("order.ship", {"order": 1})
    failed = q.enqueue("order.ship", {"order": 2, "fail": True}, max_attempts=1)
    drain(q, r)
    assert orders(engine) == [(1, "shipped"), (2, "new")]
    assert q.get(done).status is JobStatus.SUCCEEDED and q.get(done).result == {"shipped": 1}
    assert q.get(failed).status is JobStatus.DEAD and "carrier down" in q.get(failed).error


def test_an_autocommit_engine_is_refused_and_nothing_is_written(setup):
    q, engine = setup
    with engine.execution_options(isolation_level="AUTOCOMMIT").connect() as conn:
        with pytest.raises(UnusableConnection, match="autocommit"):
            q.enqueue("k", conn=conn)
    assert q.count() == 0


def test_a_closed_connection_is_refused(setup):
    q, engine = setup
    conn = engine.connect()
    conn.close()
    with pytest.raises(UnusableConnection, match="closed"):
        q.enqueue("k", conn=conn)


def test_a_connection_to_another_database_is_refused(setup, tmp_path):
    q, _ = setup
    other = sa.create_engine(f"sqlite:///{tmp_path / 'other.db'}")
    with other.begin() as conn:
        with pytest.raises(UnusableConnection, match="nothing was written"):
            q.enqueue("k", conn=conn)
    other.dispose()
