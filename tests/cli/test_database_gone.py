"""A worker whose database file is deleted or replaced under it says so in one line and
exits 1 within a few seconds, instead of working on a file nobody else sees."""
from __future__ import annotations

import os
import shutil
import time

import pytest

from .conftest import wait_for

pytestmark = pytest.mark.slow  # a real worker process outliving its file


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_worker_exits_1_when_its_database_file_is_deleted_or_replaced(db, queue, procs,
                                                                        app_dir, how):
    queue.enqueue("nap", {"seconds": 0})
    shutil.copy(db, app_dir / "backup.db")
    worker = procs.start("run", "--app", "taskapp", "--db", db)
    wait_for(lambda: queue.stats().succeeded_recent == 1)  # it works, then the file goes
    queue.close()
    if how == "deleted":
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.unlink(db + suffix)
    else:
        os.replace(app_dir / "backup.db", db)
    started = time.monotonic()
    assert worker.wait(10) == 1, procs.log(worker)
    assert time.monotonic() - started < 5
    expected = "is gone" if how == "deleted" else "was replaced"
    assert f"jobq: {db}: the database file {expected}\n" in procs.log(worker)
    assert "Traceback" not in procs.log(worker)
