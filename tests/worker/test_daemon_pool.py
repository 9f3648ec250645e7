"""The thread pool's threads (DaemonPool): work handed on in a chain, never waiting while a
thread is free, never behind a running handler."""
import threading

from jobq_core.testing import wait_for
from jobq_core.worker.threads import DaemonPool


def test_items_submitted_together_all_run_at_once_up_to_the_limit():
    pool = DaemonPool(4)
    release, started = threading.Event(), []
    lock = threading.Lock()

    def block(i):
        with lock:
            started.append(i)
        release.wait(10)

    for i in range(6):
        pool.submit(block, i)
    wait_for(lambda: len(started) == 4, timeout=5)
    assert len(started) == 4  # the limit: the other two wait for a thread
    release.set()
    wait_for(lambda: len(started) == 6, timeout=5)
    pool.close()


def test_an_item_never_waits_behind_a_running_handler_while_a_thread_is_idle():
    pool = DaemonPool(3)
    done = []
    for i in range(3):  # three threads, each idle again after its item
        pool.submit(done.append, i)
    wait_for(lambda: len(done) == 3, timeout=5)
    wait_for(lambda: len(pool._sleepers) == pool._threads, timeout=5)
    release = threading.Event()
    pool.submit(release.wait, 10)  # holds one thread
    ran = threading.Event()
    pool.submit(ran.set)
    assert ran.wait(5)  # taken by another thread, not queued behind the first
    release.set()
    pool.close()


def test_closing_lets_every_thread_end_once_the_queue_is_empty():
    pool = DaemonPool(4, name="closing-test")
    done = []
    for i in range(20):
        pool.submit(done.append, i)
    pool.close()
    wait_for(lambda: not any(t.name.startswith("closing-test") and t.is_alive()
                             for t in threading.enumerate()), timeout=5)
    assert sorted(done) == list(range(20))
