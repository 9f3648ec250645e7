"""A tasks module as the guides write one: a module-level ``Queue`` on the database that
``JOBQ_TEST_DATABASE`` names. Every process-pool child imports it (by name) to run
``nap``; none of them uses the queue."""
from __future__ import annotations

import os
import time

from jobq_core import Queue, Registry

queue = Queue(os.environ["JOBQ_TEST_DATABASE"])
registry = Registry()


@registry.task("nap")
def nap(_payload):
    time.sleep(0.2)
