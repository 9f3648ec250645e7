"""One section's rounds: each workload of each system measured on fresh databases,
repeated up to --min-time / --max-reps with the median kept; ratios to the section's
baseline in the same round; a disk probe before and after each round."""
from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time

from harness.system import METRICS
from harness.workloads import run_drain, run_enqueue


def fsync_probe(directory, seconds=0.3):
    """4 KiB write + fsync per iteration: the disk's commit-rate ceiling for synchronous=FULL."""
    fd, p = tempfile.mkstemp(dir=directory)
    try:
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            os.write(fd, b"x" * 4096)
            os.fsync(fd)
            n += 1
        return n / (time.perf_counter() - t0)
    finally:
        os.close(fd)
        os.unlink(p)


def measure_once(S, metric, d, templates, settings, n, args, keep):
    if metric in ("enqueue", "batch"):
        S.create(d)
        out, st = run_enqueue(S, d, n, args.batch_size if metric == "batch" else None)
        settings.setdefault(S.name, st)
        if keep:
            templates[S.name] = d
        return out
    S.metric = metric
    if metric == "cpu2":
        S.prepare(d, args.cpu_n)
        return run_drain(S, d, 1, 0, args.cpu_n, args.drain_timeout)
    src = templates.get(S.template_from or S.name)
    if src is None:
        return {"error": "no enqueued template (enqueue failed)"}
    S.copy_from(src, d)
    if S.thread_workers:
        return run_drain(S, d, 1, args.workers, n, args.drain_timeout)
    nproc = 1 if metric == "drain1" else args.workers
    return run_drain(S, d, nproc, 0, n, args.drain_timeout)


def measure(S, metric, rdir, templates, settings, n, args):
    """One workload for one system; repeated on fresh databases while the
    accumulated time is under --min-time (at most --max-reps), median kept.
    dup/lost/errors are the worst over the repetitions."""
    outs = []
    spent = 0.0
    while True:
        k = len(outs)
        d = os.path.join(rdir, f"{S.name.replace('/', '_')}-{metric}-{k}")
        keep = metric == "enqueue" and k == 0          # first enqueue DB = drain template
        try:
            out = measure_once(S, metric, d, templates, settings, n, args, keep)
        except Exception as e:
            out = {"error": f"{type(e).__name__}: {e}"}
        if not keep:
            S.discard(d)
        if "error" in out:
            return out
        outs.append(out)
        spent += out["wall_s"]
        if spent >= args.min_time or len(outs) >= args.max_reps:
            break
    rates = [o["jobs_per_s"] for o in outs]
    best = sorted(outs, key=lambda o: o["jobs_per_s"])[(len(outs) - 1) // 2]
    res = dict(best)
    res["jobs_per_s"] = statistics.median(rates)
    res["reps_jobs_per_s"] = rates
    for key in ("duplicates", "lost", "errors", "fenced", "ack_failed", "unexpected_keys"):
        if key in best:
            res[key] = max(o.get(key, 0) for o in outs)
    if "error_msgs" in best:
        res["error_msgs"] = [m for o in outs for m in o.get("error_msgs", [])][:5]
    return res


def run_section(systems, baseline, args, n, root, run_t0, label):
    """Every round of one section (one store): its systems' results per round, the
    settings read back, and the disk probes."""
    rounds = []              # rounds[r][system][metric] = result dict
    settings = {}
    fsyncs = [fsync_probe(root)]
    for r in range(args.repeat):
        order = systems[r % len(systems):] + systems[:r % len(systems)]
        res = {s.name: {} for s in systems}
        templates = {}
        rdir = os.path.join(root, f"{label}-r{r}")
        os.makedirs(rdir)

        def log(msg):
            print(f"[{time.monotonic() - run_t0:6.1f}s {label} r{r + 1}] {msg}", file=sys.stderr,
                  flush=True)

        try:
            for metric in METRICS:
                for S in order:
                    if metric not in S.workloads:
                        continue
                    if metric == "batch" and not S.supports_batch:
                        res[S.name][metric] = {"na": S.batch_note}
                        continue
                    out = measure(S, metric, rdir, templates, settings, n, args)
                    res[S.name][metric] = out
                    if "error" in out:
                        log(f"{metric:8s} {S.name:21s} ERROR {out['error'][-1500:]}")
                    else:
                        extra = ""
                        if metric.startswith("drain"):
                            extra = (f"  dup={out['duplicates']} lost={out['lost']} "
                                     f"left={out['db_left']} errs={out['errors']}")
                        reps = out["reps_jobs_per_s"]
                        rs = f" median of {len(reps)}" if len(reps) > 1 else ""
                        log(f"{metric:8s} {S.name:21s} {out['jobs_per_s']:>10,.0f} jobs/s "
                            f"({out['wall_s']:.2f}s{rs}){extra}")
        finally:
            by_name = {s.name: s for s in systems}
            for name, d in templates.items():
                by_name[name].discard(d)
        # ratios to the baseline measured in this round
        for s in systems:
            for metric in METRICS:
                m = res[s.name].get(metric)
                b = res.get(baseline, {}).get(metric)
                if m and b and "jobs_per_s" in m and "jobs_per_s" in b and b["jobs_per_s"]:
                    m["ratio"] = m["jobs_per_s"] / b["jobs_per_s"]
                f = res.get("raw-FULL", {}).get(metric)
                if m and f and "jobs_per_s" in m and "jobs_per_s" in f and f["jobs_per_s"]:
                    m["ratio_to_raw_FULL"] = m["jobs_per_s"] / f["jobs_per_s"]
        rounds.append(res)
        shutil.rmtree(rdir, ignore_errors=True)
        fsyncs.append(fsync_probe(root))
    return rounds, settings, fsyncs
