"""What the rounds come to: medians and worst counts per system and workload
(``summarise``), and the printed table."""
from __future__ import annotations

import statistics
import textwrap

from harness.system import METRICS


def fmt_rate(x):
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    return f"{x:,.0f}"


def fmt_ratio(x):
    return "" if x is None else f"{x:.2f}"


def median_or_none(xs):
    xs = [x for x in xs if isinstance(x, (int, float))]
    return statistics.median(xs) if xs else None


def pool_ratios(rounds):
    """{metric: median over rounds of jobq-worker-proc's rate / jobq-worker's}."""
    out = {}
    for metric in ("drain1", "drain4", "cpu2"):
        ratios = []
        for rd in rounds:
            p, t = rd.get("jobq-worker-proc", {}).get(metric), rd.get("jobq-worker", {}).get(metric)
            if p and t and p.get("jobs_per_s") and t.get("jobs_per_s"):
                ratios.append(p["jobs_per_s"] / t["jobs_per_s"])
        if ratios:
            out[metric] = statistics.median(ratios)
    return out


def summarise(systems, rounds):
    """Per system and workload: the medians over rounds, the worst dup/lost/errors."""
    summary = {}
    for s in systems:
        row = {}
        for metric in METRICS:
            cells = [rd[s.name].get(metric) for rd in rounds if rd[s.name].get(metric)]
            if not cells:
                row[metric] = {"na": "not run for this system"}
                continue
            if all("na" in c for c in cells):
                row[metric] = {"na": cells[0]["na"]}
                continue
            errs = [c["error"] for c in cells if "error" in c]
            row[metric] = {
                "jobs_per_s": median_or_none([c.get("jobs_per_s") for c in cells]),
                "ratio": median_or_none([c.get("ratio") for c in cells]),
                "ratio_to_raw_FULL": median_or_none([c.get("ratio_to_raw_FULL") for c in cells]),
            }
            if errs:
                row[metric]["errors_text"] = errs[:2]
            if metric.startswith("drain"):
                for k in ("duplicates", "lost", "fenced", "ack_failed", "errors", "unexpected_keys"):
                    row[metric][k] = max([c.get(k, 0) for c in cells if k in c], default=None)
                row[metric]["db_left"] = [c.get("db_left") for c in cells]
                row[metric]["error_msgs"] = [m for c in cells for m in c.get("error_msgs", [])][:5]
        summary[s.name] = row
    return summary


def hanging(name, text, width=100):
    """``  name  text``, the text wrapped under itself."""
    return textwrap.fill(text, width=width, initial_indent=f"  {name:22s} ",
                         subsequent_indent=" " * 25)


def table(systems, summary, rounds, baseline, args, n):
    w = max([18] + [len(s.name) for s in systems])
    hdr = (f"{'system':{w}s} {'enqueue/s':>10s} {'x':>5s} {'batch/s':>10s} {'x':>5s} "
           f"{'drain1/s':>9s} {'x':>5s} {'drain{0}/s'.format(args.workers):>9s} {'x':>5s} "
           f"{'cpu2/s':>7s} {'dup':>7s} {'lost':>5s} {'errs':>5s}")
    lines = [f"N={n} jobs, batch={args.batch_size}, drain workers={args.workers}, rounds={args.repeat}, "
             f"x = ratio to {baseline} measured in the same round (median over rounds)", hdr,
             "-" * len(hdr)]
    for s in systems:
        row = summary[s.name]
        cols = []
        for metric in METRICS:
            c = row[metric]
            if "na" in c:
                cols += ["n/a", ""]
            elif c.get("jobs_per_s") is None:
                cols += ["ERROR", ""]
            else:
                cols += [fmt_rate(c["jobs_per_s"]), fmt_ratio(c.get("ratio"))]
        dup = [row[m].get("duplicates") for m in ("drain1", "drain4") if "na" not in row[m]]
        lost = [row[m].get("lost") for m in ("drain1", "drain4") if "na" not in row[m]]
        errs = [row[m].get("errors") for m in ("drain1", "drain4") if "na" not in row[m]]

        def j(xs):
            xs = [("?" if x is None else str(x)) for x in xs]
            return "/".join(xs) if xs else "-"
        lines.append(f"{s.name:{w}s} {cols[0]:>10s} {cols[1]:>5s} {cols[2]:>10s} {cols[3]:>5s} "
                     f"{cols[4]:>9s} {cols[5]:>5s} {cols[6]:>9s} {cols[7]:>5s} "
                     f"{cols[8]:>7s} {j(dup):>7s} {j(lost):>5s} {j(errs):>5s}")
    pools = pool_ratios(rounds)
    if pools:
        lines.append("jobq's process pool against its thread pool (jobq-worker-proc / jobq-worker, "
                     "median of the rounds' ratios): "
                     + ", ".join(f"{m} {fmt_ratio(x)}x" for m, x in pools.items()))
    lines.append("dup/lost/errs are drain1/drain4 (worst round).")
    return lines
