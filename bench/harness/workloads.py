"""How one measurement runs: the enqueue loops (in this process) and the drains (in
forked workers, each on its own connection), with the drains' exactly-once counts."""
from __future__ import annotations

import collections
import multiprocessing as mp
import queue as queue_mod
import sqlite3
import threading
import time
import traceback

from harness.system import RanButFailed

COMPLETE_TRIES = 3      # a completion that fails on a lock error is retried (it is idempotent)


def _drain_loop(S, h, out):
    keys, errors, msgs, fenced, ack_failed = [], 0, [], 0, 0
    while True:
        try:
            job = S.claim(h)
        except sqlite3.Error as e:
            errors += 1
            if len(msgs) < 5:
                msgs.append(f"claim: {e}")
            if errors > 1000:
                break
            continue
        if job is None:
            break
        key, ctx = job
        ok = None                       # None = every try raised (job stays claimed)
        for _ in range(COMPLETE_TRIES):
            try:
                ok = S.complete(h, ctx)
                break
            except RanButFailed as e:
                errors += 1
                if len(msgs) < 5:
                    msgs.append(f"after run: {e}")
                ok = True
                break
            except sqlite3.Error as e:
                errors += 1
                if len(msgs) < 5:
                    msgs.append(f"complete: {e}")
        if ok:
            keys.append(key)
        elif ok is None:
            ack_failed += 1
        else:
            fenced += 1
    out.update(keys=keys, errors=errors, msgs=msgs, fenced=fenced, ack_failed=ack_failed,
               t_end=S.drained_at(h) or time.monotonic())


def _worker_main(S, d, wid, nthreads, start_evt, msgq):
    try:
        if nthreads:
            shared = S.open_shared(d)
            handles = [shared] * nthreads
        else:
            handles = [S.open_worker(d, wid)]
        msgq.put(("ready", wid))
        start_evt.wait()
        outs = [dict() for _ in handles]
        if nthreads:
            ts = [threading.Thread(target=_drain_loop, args=(S, h, o)) for h, o in zip(handles, outs)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        else:
            _drain_loop(S, handles[0], outs[0])
        for k, o in enumerate(outs):
            msgq.put(("done", f"{wid}.{k}", o))
    except BaseException:
        msgq.put(("fail", wid, traceback.format_exc()))


def run_drain(S, d, nproc, nthreads, n_expected, timeout):
    ctx = mp.get_context("fork")
    start_evt = ctx.Event()
    msgq = ctx.Queue()
    procs = [ctx.Process(target=_worker_main, args=(S, d, w, nthreads, start_evt, msgq), daemon=True)
             for w in range(nproc)]
    for p in procs:
        p.start()
    expected_done = nproc * (nthreads or 1)
    ready, done, fails = 0, [], []
    deadline = time.monotonic() + 60
    while ready + len(fails) < nproc:
        try:
            m = msgq.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue_mod.Empty:
            fails.append("workers not ready within 60 s")
            break
        if m[0] == "ready":
            ready += 1
        elif m[0] == "fail":
            fails.append(m[2])
    t0 = time.monotonic()
    start_evt.set()
    deadline = t0 + timeout
    timed_out = False
    while not fails and len(done) < expected_done:
        try:
            m = msgq.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue_mod.Empty:
            timed_out = True
            break
        if m[0] == "done":
            done.append(m[2])
        elif m[0] == "fail":
            fails.append(m[2])
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.terminate()
            p.join()
    if fails or timed_out:
        return {"error": ("timeout after %ss" % timeout) if timed_out else fails[0][-2000:]}
    wall = max(o["t_end"] for o in done) - t0
    counts = collections.Counter(k for o in done for k in o["keys"])
    completions = sum(counts.values())
    distinct = len(counts)
    dup = sum(c - 1 for c in counts.values() if c > 1)
    if S.kind == "project":          # keys are job ids: only distinctness is checkable
        unexpected = 0
        lost = n_expected - distinct
    else:                            # keys are the payload's sequence number 0..N-1
        unexpected = sum(1 for k in counts if not (isinstance(k, int) and 0 <= k < n_expected))
        lost = n_expected - (distinct - unexpected)
    return {
        "wall_s": wall,
        "jobs_per_s": distinct / wall if wall > 0 else None,
        "completions": completions,
        "distinct": distinct,
        "duplicates": dup,
        "lost": lost,
        "unexpected_keys": unexpected,
        "fenced": sum(o["fenced"] for o in done),
        "ack_failed": sum(o["ack_failed"] for o in done),
        "errors": sum(o["errors"] for o in done),
        "error_msgs": [m for o in done for m in o["msgs"]][:5],
        "per_worker": [len(o["keys"]) for o in done],
        "db_left": S.left(d),
    }


def run_enqueue(S, d, n, batch_size=None):
    elsewhere = S.enqueue_elsewhere(d, n, batch_size)
    if elsewhere is not None:
        S.after_enqueue(d)
        return {"wall_s": elsewhere["wall_s"], "jobs_per_s": n / elsewhere["wall_s"]}, {
            "note": "timed by the system in a process of its own"}
    h = S.open(d)
    settings = None
    try:
        try:
            settings = S.settings(h)
        except Exception as e:
            settings = {"error": repr(e)}
        t0 = time.perf_counter()
        if batch_size is None:
            for i in range(n):
                S.enqueue(h, i)
        else:
            for lo in range(0, n, batch_size):
                S.enqueue_batch(h, range(lo, min(n, lo + batch_size)))
        wall = time.perf_counter() - t0
    finally:
        S.close(h)
    S.after_enqueue(d)
    return {"wall_s": wall, "jobs_per_s": n / wall}, settings
