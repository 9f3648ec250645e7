"""A worker process for the multi-process test: claim and complete until the queue is empty.

Writes one "job_id token" line per accepted completion to OUT. Any exception (such as a
"database is locked" that escaped) exits non-zero.
"""
import os
import sys
import time

from jobq_core import Queue


def main(db: str, out: str, go: str, batch: int) -> None:
    while not os.path.exists(go):  # start together with the other processes
        time.sleep(0.002)
    name = f"claimer-{os.getpid()}"
    done = []
    with Queue(db) as q:
        while True:
            jobs = q.claim_many(name, batch, lease=60)
            if not jobs:
                if q.stats().pending == 0:
                    break
                continue
            for job in jobs:
                q.complete(job.id, job.token, {"by": name})
                done.append(f"{job.id} {job.token}\n")
    with open(out, "w") as f:
        f.writelines(done)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
