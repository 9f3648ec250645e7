"""Handlers that complete their job in the application's transaction (``ctx.complete(conn=)``)
for ``test_transactional_completion.py``. Child processes import this module by name, so
the registry is a module-level name."""
import time
from pathlib import Path

from stores import AppDB

from jobq_core import Backoff, Registry

registry = Registry()
QUICK = Backoff(base=0.01, cap=0.01)


@registry.task("pay", backoff=QUICK)
def pay(payload, ctx):
    """Adds 1 to ``accounts[account]`` and completes the job in the same transaction, then
    does what ``then`` says: commit, rollback, or rollback and raise. ``go``: a file to
    wait for first."""
    if payload.get("go"):  # before the transaction: on SQLite it holds the write lock
        go = Path(payload["go"])
        while not go.exists():
            time.sleep(0.01)
    with AppDB(payload["db"]) as app:
        app.execute("UPDATE accounts SET n = n + 1 WHERE id = ?", (payload["account"],))
        ctx.complete(payload.get("result"), conn=app.conn)  # LeaseLost: closed unanswered
        if payload.get("then", "commit") == "commit":
            app.commit()
        else:
            app.rollback()
        if payload.get("then") == "rollback and raise":
            raise RuntimeError("rolled back, then failed")
    return payload.get("returned")


@registry.task("pay-elsewhere", max_attempts=1)
def pay_elsewhere(payload, ctx):
    """Completes on a connection to another database: refused."""
    with AppDB(payload["other"]) as app:
        ctx.complete(conn=app.conn)
        app.commit()
