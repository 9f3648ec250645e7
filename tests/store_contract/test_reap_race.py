"""The reaper and a completing worker racing on real connections, with real time."""
import random
import threading
import time

from jobq_core import Backoff, LeaseLost, Queue


def test_a_completion_racing_the_reaper_either_wins_whole_or_is_rejected_whole(db_path):
    setup = Queue(db_path)
    setup.enqueue_many([("k", i) for i in range(300)])
    setup.close()
    accepted, rejected = set(), set()
    stop = threading.Event()

    def reaper():
        q = Queue(db_path, backoff=Backoff(base=60, cap=60))  # reaped jobs mostly wait
        while not stop.is_set():
            q.reap()
        q.close()

    def worker():
        q = Queue(db_path)
        rng = random.Random(7)
        while (job := q.claim("w", lease=0.004)) is not None:
            time.sleep(rng.uniform(0, 0.008))  # finish just before or just after the lease
            try:
                q.complete(job.id, job.token, "done")
                accepted.add((job.id, job.token))
            except LeaseLost:
                rejected.add((job.id, job.token))
        q.close()

    t = threading.Thread(target=reaper)
    t.start()
    worker()
    stop.set()
    t.join()

    q = Queue(db_path)
    assert accepted and rejected  # the race really happened both ways
    for job_id, token in accepted:
        job = q.get(job_id)
        assert job.status == "succeeded" and job.token == token and job.result == "done"
        assert not [a for a in q.attempts(job_id) if a.token == token and a.outcome != "succeeded"]
    for job_id, token in rejected:
        job = q.get(job_id)
        assert job.token != token  # a rejected claim never became the final one
        mine = [a.outcome for a in q.attempts(job_id) if a.token == token]
        assert mine == ["lease expired"]
    assert len({job_id for job_id, _ in accepted}) == len(accepted)  # one completion per job
    assert len(accepted) + q.count(status="pending") == 300
