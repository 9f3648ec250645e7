"""The command line peers.py, peers_pg.py and peers_brokers.py run (``main``): options,
which systems run, each section measured and printed, the JSON report."""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import shutil
import sqlite3
import sys
import tempfile
import time

from harness.rounds import run_section
from harness.table import hanging, pool_ratios, summarise, table

SECTIONS = ("sqlite", "pg", "brokers")


def versions():
    v = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for dist in ("huey", "litequeue", "persist-queue", "psycopg", "procrastinate", "pgqueuer",
                 "celery", "kombu", "redis", "rq", "dramatiq", "pika", "awa-pg", "chancy"):
        try:
            v[dist] = importlib.metadata.version(dist)
        except Exception:
            v[dist] = None
    try:
        v["jobq_core"] = importlib.metadata.version("jobq_core")
    except Exception:
        v["jobq_core"] = None
    return v


def byte_compile_project():
    """Write the bytecode of jobq's packages, as pip does when it installs a package (the
    peers' libraries have theirs). Without it, where PYTHONDONTWRITEBYTECODE is set or an
    editable checkout was never imported, every process a measurement starts (a drain's
    workers, a process pool's fork server) compiles jobq's modules from source, inside
    the timed window."""
    import compileall
    import importlib.util

    for package in ("jobq_core", "jobq_cli", "jobq_tui"):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.submodule_search_locations:
            for where in spec.submodule_search_locations:
                compileall.compile_dir(where, quiet=2)


def main(argv, *, description, registry, sections="sqlite,pg", pg=None, brokers=None):
    """The command line of peers.py, peers_pg.py and peers_brokers.py: measure
    ``registry``'s systems (name -> System) of the chosen sections and print the tables.
    ``pg`` and ``brokers``: those sections' modules, when the run has them; each has a
    ``header()`` (the line above its table and the servers' settings) and a PROMISES_TITLE,
    and takes its servers' URLs (``use_server``, ``use_servers``) before anything forks."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--n", type=int, default=20000, help="jobs per workload (default 20000)")
    ap.add_argument("--pg-n", type=int, default=10000,
                    help="jobs per workload in the PostgreSQL section (default 10000)")
    ap.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres",
                    help="the PostgreSQL server of that section (a database it may create "
                         "and drop databases from)")
    ap.add_argument("--brokers-n", type=int, default=10000,
                    help="jobs per workload in the brokers section (default 10000: at 2,000 "
                         "a drain lasts 0.1-0.2 s and starting the workers dominates it; RQ's "
                         "forking worker then takes minutes)")
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/13",
                    help="the Redis database of the brokers section (flushed before and after "
                         "each measurement; refused if it holds keys the bench did not write)")
    ap.add_argument("--amqp-url", default="amqp://guest:guest@127.0.0.1:5672/%2F",
                    help="the RabbitMQ server of the brokers section (its queues are named "
                         "after each measurement and deleted after it)")
    ap.add_argument("--sections", default=sections,
                    help=f"which tables to measure, a comma list of {', '.join(SECTIONS)} "
                         f"(default: {sections})")
    ap.add_argument("--batch-size", type=int, default=1000, help="jobs per batch call (default 1000)")
    ap.add_argument("--cpu-n", type=int, default=200,
                    help="CPU-bound jobs of the cpu2 workload (default 200)")
    ap.add_argument("--workers", type=int, default=4, help="worker processes for drain4 (default 4)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds; medians are reported (default 1)")
    ap.add_argument("--systems", default="", help="comma list (default: all available); --list shows names")
    ap.add_argument("--list", action="store_true", help="list systems and exit")
    ap.add_argument("--min-time", type=float, default=1.0,
                    help="repeat a measurement (fresh DB each time) until it has run this long (default 1.0 s)")
    ap.add_argument("--max-reps", type=int, default=5, help="cap on those repetitions (default 5)")
    ap.add_argument("--drain-timeout", type=float, default=300.0, help="seconds before a drain is abandoned")
    ap.add_argument("--tmpdir", default=None, help="where the temporary databases go (default: system temp dir)")
    ap.add_argument("--json", default=None, help="write results as JSON to this path")
    args = ap.parse_args(argv)
    if pg is not None:
        pg.use_server(args.pg_url)
    if brokers is not None:
        brokers.use_servers(args.redis_url, args.amqp_url)
    modules = {"pg": pg, "brokers": brokers}

    if args.list:
        for s in registry.values():
            ok, note = s.available()
            print(f"{s.section:7s} {s.name:22s} {'ok' if ok else 'SKIP: ' + note}")
        return 0

    byte_compile_project()
    sections = [x.strip() for x in args.sections.split(",") if x.strip()]
    for x in sections:
        if x not in SECTIONS:
            ap.error(f"unknown section {x!r}; known: {', '.join(SECTIONS)}")
    wanted = [x.strip() for x in args.systems.split(",") if x.strip()] or [
        name for name, s in registry.items() if s.section in sections]
    for w in wanted:
        if w not in registry:
            ap.error(f"unknown system {w!r}; known: {', '.join(registry)}")
    for baseline in dict.fromkeys(registry[w].baseline for w in list(wanted)):
        if baseline not in wanted:
            wanted.insert(0, baseline)          # ratios need the baseline

    skipped, systems = {}, []
    for name in wanted:
        ok, note = registry[name].available()
        if ok:
            systems.append(registry[name])
        else:
            skipped[name] = note
            print(f"note: {name} skipped - {note}", file=sys.stderr)
    names = [s.name for s in systems]
    for s in list(systems):
        if s.template_from and s.template_from not in names:
            skipped[s.name] = f"needs {s.template_from} in the same run"
            systems.remove(s)

    run_t0 = time.monotonic()
    root = tempfile.mkdtemp(prefix="jobq-peers-", dir=args.tmpdir)
    results = {}
    lines = []
    try:
        for section in SECTIONS:
            members = [s for s in systems if s.section == section]
            if not members:
                continue
            baseline = members[0].baseline
            if baseline not in [s.name for s in members]:
                for s in members:
                    skipped[s.name] = f"its baseline {baseline} cannot run"
                continue
            n = {"pg": args.pg_n, "brokers": args.brokers_n}.get(section, args.n)
            rounds, settings, fsyncs = run_section(members, baseline, args, n, root, run_t0,
                                                   section)
            summary = summarise(members, rounds)
            part = table(members, summary, rounds, baseline, args, n)
            if section == "sqlite":
                part.append("persist-queue/thr = drain4 with threads in one process.")
                part.append("")
                part.append("durability settings as read back from each library's own connection:")
                for s in members:
                    st = settings.get(s.name) or settings.get(s.template_from or "", {})
                    if st:
                        part.append(f"  {s.name:18s} journal_mode={st.get('journal_mode')} "
                                    f"synchronous={st.get('synchronous')} "
                                    f"busy_timeout={st.get('busy_timeout_ms')}ms")
                part.append("disk probe (4 KiB write+fsync, start/after each round): "
                            + ", ".join(f"{x:,.0f}/s" for x in fsyncs))
            else:
                mod = modules[section]
                head, server = mod.header()
                part.insert(0, head)
                part += ["", "settings:"]
                part += [hanging(s.name, s.semantics) for s in members if s.semantics]
                part += ["", mod.PROMISES_TITLE]
                part += [hanging(s.name, s.promises) for s in members if s.promises]
                results[f"{section}_server"] = server
            lines += part + [""]
            results[section] = {
                "n": n, "baseline": baseline, "fsync_per_s": fsyncs, "rounds": rounds,
                "systems": {s.name: {"kind": s.kind, "semantics": s.semantics,
                                     "promises": s.promises, "batch_note": s.batch_note,
                                     "settings": settings.get(s.name),
                                     "summary": summary[s.name]} for s in members},
            }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    total_s = time.monotonic() - run_t0
    for name, note in skipped.items():
        lines.append(f"skipped: {name}: {note}")
    lines.append(f"total run time: {total_s:.1f}s")
    print("\n".join(lines))

    if args.json:
        out = {
            "meta": {
                "n": args.n, "pg_n": args.pg_n, "batch_size": args.batch_size,
                "workers": args.workers, "repeat": args.repeat, "cpu_count": os.cpu_count(),
                "platform": platform.platform(), "versions": versions(),
                "started_unix": time.time() - total_s, "total_s": total_s,
            },
            "sections": results,
            "skipped": skipped,
            "process_pool_ratios": pool_ratios(results.get("sqlite", {}).get("rounds", [])),
            "table": lines,
        }
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
        print(f"wrote {args.json}", file=sys.stderr)
    return 0
