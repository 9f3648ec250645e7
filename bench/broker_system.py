"""BrokerSystem: a peer on Redis or RabbitMQ, enqueued through its library and drained
by its own worker, and how a drain learns which jobs ran (harness.drained.Drained, shared
by the forked workers; each process's log of the jobs its handlers ran)."""
from __future__ import annotations

import os

from broker_servers import (
    amqp_available, amqp_connection, flush_redis, namespace, redis_available, redis_client,
)
from harness.drained import Drained
from harness.system import System

_RUN: dict = {}     # this worker process's log file descriptor and Drained
_ENQUEUED: dict[str, int] = {}  # jobs each enqueue measurement stored, by its directory


def _ran(i) -> None:
    """The no-op handlers' one act: note that job i ran (in a file: an RQ work horse is a
    forked child that shares nothing else with its worker)."""
    os.write(_RUN["fd"], b"%d\n" % i)
    _RUN["drained"].ran(i)


def noop(i) -> None:
    _ran(i)


class BrokerSystem(System):
    """A peer on a broker, drained by its own worker. The harness's directory ``d`` holds
    the processes' logs of what ran; the jobs live on the broker under namespace(d)."""

    section = "brokers"
    baseline = "jobq-SQLite"
    workloads = ("enqueue", "batch", "drain1", "drain4")
    library = "?"              # import name, for available()
    install = "?"              # pip requirement, for the skip reason
    server = "redis"           # redis | amqp
    stops_on_drained = True    # no burst mode: the harness stops the worker

    _drained: Drained | None = None

    def available(self):
        try:
            __import__(self.library)
        except Exception as e:  # noqa: BLE001 - one line in the report
            return False, f"import {self.library} failed ({e}): pip install '{self.install}'"
        return redis_available() if self.server == "redis" else amqp_available()

    # where the jobs live
    def create(self, d):
        os.makedirs(d)
        self.purge(d)

    def purge(self, d):
        if self.server == "redis":
            flush_redis()
        else:
            self._delete_queues(namespace(d))

    def _delete_queues(self, name):
        c = amqp_connection()
        try:
            ch = c.channel()
            for q in (name, f"{name}.DQ", f"{name}.XQ"):
                ch.queue_delete(q)
        finally:
            c.close()

    def after_enqueue(self, d):
        self.purge(d)           # a drain enqueues its own copy (copy_from)

    def discard(self, d):
        try:
            self.purge(d)
        finally:
            System.discard(self, d)

    def copy_from(self, src, d):
        """The drain's jobs: as many as the enqueue measurement stored, enqueued again
        into d's namespace (outside the timed window)."""
        n = _ENQUEUED[src]
        self.create(d)
        h = self.open(d)
        try:
            if self.supports_batch:
                for lo in range(0, n, 1000):
                    self.enqueue_batch(h, range(lo, min(n, lo + 1000)))
            else:
                for i in range(n):
                    self.enqueue(h, i)
        finally:
            self._close(h)
        self._drained = Drained(n)

    # the enqueue side: open() returns {"d", "count", ...}; close() records the count
    def enqueue(self, h, i):
        self.send(h, i)
        h["count"] += 1

    def enqueue_batch(self, h, ids):
        ids = list(ids)
        self.send_many(h, ids)
        h["count"] += len(ids)

    def send(self, h, i):
        raise NotImplementedError

    def send_many(self, h, ids):
        raise NotImplementedError

    def close(self, h):
        _ENQUEUED[h["d"]] = h["count"]
        self._close(h)

    def _close(self, h):
        pass

    # the drain side, in each forked worker process
    def open_worker(self, d, wid):
        fd = os.open(os.path.join(d, f"ran-{wid}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        _RUN.update(fd=fd, drained=self._drained)
        return {"d": d, "wid": wid, "fd": fd, "keys": None,
                "worker": self.build_worker(d, wid)}

    def build_worker(self, d, wid):
        """Everything a worker needs that is not part of its run (before the start)."""
        return None

    def run_worker(self, h) -> None:
        raise NotImplementedError

    def claim(self, h):
        if h["keys"] is None:
            try:
                self.run_worker(h)
            finally:
                os.close(h["fd"])
            with open(os.path.join(h["d"], f"ran-{h['wid']}.log"), "rb") as f:
                h["keys"] = iter([int(x) for x in f.read().split()])
        key = next(h["keys"], None)
        return None if key is None else (key, key)

    def complete(self, h, ctx):
        return True

    def left(self, d):
        """Messages still in the drained queue (best effort)."""
        try:
            if self.server == "redis":
                r = redis_client()
                try:
                    return r.llen(self.queue_key(d))
                finally:
                    r.close()
            c = amqp_connection()
            try:
                return c.channel().queue_declare(namespace(d), passive=True).method.message_count
            finally:
                c.close()
        except Exception:  # noqa: BLE001 - the cross-check is best effort
            return None

    def queue_key(self, d):
        """The Redis list that holds d's waiting messages."""
        return namespace(d)

    def drained_at(self, h):
        if self.stops_on_drained and self._drained.done.is_set():
            return self._drained.at.value
        return None
