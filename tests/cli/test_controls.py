"""Pause, limits and periodic schedules with real ``jobq run`` processes, and the commands
that set and show them."""
from __future__ import annotations

import json
import os
import shutil
import signal
import time

import pytest
from typer.testing import CliRunner

from jobq_cli.main import app
from jobq_core import Queue

from .conftest import HERE, wait_for

runner = CliRunner()


def jobq(*args):
    return runner.invoke(app, list(args), catch_exceptions=False, env={"COLUMNS": "160"})


@pytest.fixture
def ctl_dir(app_dir):
    shutil.copy(HERE / "ctlapp.py", app_dir / "ctlapp.py")
    return app_dir


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request, db):
    """The database of a worker-process test: each guarantee holds on both stores."""
    return db if request.param == "sqlite" else request.getfixturevalue("pg_url")


@pytest.fixture
def tq(target):
    with Queue(target) as q:
        q.check()  # jobq's tables exist before the first command (PostgreSQL opens lazily)
        yield q


def workers(procs, db, n, *args, every=None):
    if every is not None:
        os.environ["CTLAPP_EVERY"] = str(every)
    try:
        return [procs.start("run", "--app", "ctlapp", "--lease", "5", *args, "--db", db)
                for _ in range(n)]
    finally:
        os.environ.pop("CTLAPP_EVERY", None)


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop(procs, ps):
    # A worker that has not registered yet may not have its SIGTERM handler either (a
    # loaded machine starts a process in seconds): the default action would kill it.
    for p in ps:
        db = p.args[p.args.index("--db") + 1]
        with Queue(db) as q:
            wait_for(lambda: p.poll() is not None or p.pid in {w.pid for w in q.workers()},
                     timeout=30)
    for p in ps:
        p.send_signal(signal.SIGTERM)
    for p in ps:
        assert p.wait(20) == 0, procs.log(p)


def spans(log) -> list[tuple[int, float, float, int]]:
    out = []
    for line in open(log):
        job_id, start, end, pid = line.split()
        out.append((int(job_id), float(start), float(end), int(pid)))
    return sorted(out, key=lambda s: s[1])


# -- the commands ---------------------------------------------------------------------------

def test_pause_limit_and_queues_show_each_control_in_text_and_json(db, queue):
    queue.enqueue("k", queue="api")
    assert jobq("pause", "api", "--db", db).stdout == "queue 'api' paused\n"
    assert jobq("limit", "api", "--concurrency", "3", "--db", db).exit_code == 0
    result = jobq("limit", "api", "--rate", "100/m", "--db", db, "--json")
    assert json.loads(result.stdout) == {"queue": "api", "concurrency": 3, "rate": "100/m",
                                         "key_concurrency": None, "ordered": False}
    [row] = json.loads(jobq("queues", "--db", db, "--json").stdout)
    assert {k: row[k] for k in ("queue", "pending", "running", "paused", "concurrency",
                                "rate")} == {"queue": "api", "pending": 1, "running": 0,
                                             "paused": True, "concurrency": 3, "rate": "100/m"}
    text = jobq("queues", "--db", db).stdout
    assert "⏸ paused" in text and "0/3" in text and "≤3 running · 100/m" in text
    jobq("resume", "api", "--db", db)
    jobq("limit", "api", "--clear", "--db", db)
    [row] = json.loads(jobq("queues", "--db", db, "--json").stdout)
    assert (row["paused"], row["concurrency"], row["rate"]) == (False, None, None)


@pytest.mark.parametrize("args, message", [
    (["limit", "api"], "give --concurrency"),
    (["limit", "api", "--rate", "5/week"], "N/s, N/m or N/h"),
    (["limit", "api", "--concurrency", "0"], "at least 1"),
])
def test_limit_refuses_bad_input_in_one_line_as_a_usage_error(db, queue, args, message):
    result = jobq(*args, "--db", db)
    assert result.exit_code == 2 and message in result.stderr
    assert result.stderr.count("\n") == 1
    assert json.loads(jobq("queues", "--db", db, "--json").stdout) == []


def test_schedules_lists_what_workers_recorded_with_the_next_tick(db, queue):
    from jobq_core import Registry

    s = Registry().periodic("report", cron="0 6 * * *", tz="Europe/Paris")
    queue.register_schedule(s, since=0.0)
    before = time.time()
    [row] = json.loads(jobq("schedules", "--db", db, "--json").stdout)
    after = time.time()
    assert (row["kind"], row["cron"], row["tz"], row["last_job"]) == (
        "report", "0 6 * * *", "Europe/Paris", None)
    # The next 06:00 in Paris after the moment the command read the clock (a 06:00 UTC,
    # a tick a day late or one already past would each be off by an hour or more).
    assert row["next_tick"] in {s.next_tick(before), s.next_tick(after)}
    assert "cron 0 6 * * * tz Europe/Paris" in jobq("schedules", "--db", db).stdout
    result = jobq("schedules", "--forget", "no such key", "--db", db)
    assert result.exit_code == 1 and "no recorded schedule" in result.stderr
    assert json.loads(jobq("schedules", "--forget", s.key, "--db", db, "--json").stdout) == []


def test_jobq_metrics_serves_each_queues_pause_and_limits(db, queue):
    from .test_metrics import parse

    queue.enqueue_many([("k", 1), {"kind": "k", "queue": "api"}])
    queue.pause("held")
    queue.set_limit("api", concurrency=3, rate="120/m")
    m = parse(jobq("metrics", "--db", db).stdout)

    def by_queue(name):
        return {dict(k)["queue"]: v for k, v in m[name].items()}

    assert by_queue("jobq_queue_paused") == {"default": 0, "api": 0, "held": 1}
    assert by_queue("jobq_queue_concurrency_limit") == {"api": 3}
    assert by_queue("jobq_queue_rate_limit") == {"api": 2.0}


# -- with worker processes ------------------------------------------------------------------
# Each runs real `jobq run` processes against the real clock (ticks of 1 s, a rate per
# second, a pause that must hold for 2 s): seconds each, so they are slow.

@pytest.mark.slow
def test_three_workers_enqueue_exactly_one_job_per_tick_of_an_every_1_schedule(
        target, tq, procs, ctl_dir):
    ps = workers(procs, target, 3, every=1)
    wait_for(lambda: len(tq.workers()) == 3, timeout=20)
    wait_for(lambda: tq.count(queue="ticks") >= 10, timeout=30, interval=0.1)  # 10 ticks
    stop(procs, ps)
    jobs = tq.list(queue="ticks", limit=1000)
    # A job's run_at is its tick, but for one a worker claimed as the workers were being
    # stopped: released, it is runnable at once, its run_at the release's time. Every
    # other tick ran.
    runs = sorted(j.run_at for j in jobs if j.status == "succeeded")
    waiting = [j for j in jobs if j.status != "succeeded"]
    assert len(runs) == len(set(runs)), "a tick was enqueued twice"
    assert runs == [runs[0] + i for i in range(len(runs))], "a tick was lost"
    assert len(runs) >= 9
    assert len(waiting) <= 1 and all(
        j.status == "pending" and j.run_at >= runs[-1] + 1 for j in waiting), waiting


@pytest.mark.slow
def test_a_restart_after_downtime_enqueues_one_catch_up_job_and_logs_the_skip(
        target, tq, procs, ctl_dir):
    [a] = workers(procs, target, 1, every=1)
    wait_for(lambda: tq.count(queue="ticks") >= 2, timeout=20)
    stop(procs, [a])
    last = max(j.run_at for j in tq.list(queue="ticks", limit=100))
    wait_for(lambda: time.time() >= last + 4, timeout=10)  # 3 ticks go by with no worker
    restarted = time.time()
    [b] = workers(procs, target, 1, every=1)
    wait_for(lambda: sum(j.run_at > last for j in tq.list(queue="ticks", limit=100)) >= 2,
             timeout=20, interval=0.1)  # the catch-up tick and the one after it
    stop(procs, [b])
    after = sorted(j.run_at for j in tq.list(queue="ticks", limit=100) if j.run_at > last)
    catch_up = after[0]
    assert catch_up - last >= 3  # the missed ticks were not enqueued...
    assert catch_up >= int(restarted) - 1  # ...only the latest one at the restart
    assert after == [catch_up + i for i in range(len(after))]  # then every tick again
    assert "tick(s) missed while no worker ran were skipped" in procs.log(b)


@pytest.mark.slow
def test_a_paused_queue_stays_pending_under_two_busy_workers_and_runs_after_resume(
        target, tq, procs, ctl_dir):
    log = str(ctl_dir / "spans.txt")
    assert jobq("pause", "held", "--db", target).exit_code == 0
    held = tq.enqueue_many([{"kind": "span", "payload": {"log": log}, "queue": "held"}
                               for _ in range(10)])
    tq.enqueue_many([("span", {"log": log, "sleep": 0.01}) for _ in range(80)])
    ps = workers(procs, target, 2, "--concurrency", "4")
    wait_for(lambda: tq.count("succeeded") == 80, timeout=60)
    time.sleep(0.5)  # workers idle and free: still nothing of held
    assert tq.count("pending", queue="held") == 10
    assert not set(held) & {s[0] for s in spans(log)}
    assert jobq("resume", "held", "--db", target).exit_code == 0
    wait_for(lambda: tq.count("succeeded", queue="held") == 10, timeout=10)
    stop(procs, ps)


@pytest.mark.slow
def test_a_concurrency_limit_of_1_under_two_workers_of_4_slots_never_overlaps_two_runs(
        target, tq, procs, ctl_dir):
    log = str(ctl_dir / "spans.txt")
    assert jobq("limit", "api", "--concurrency", "1", "--db", target).exit_code == 0
    # Half fail their first attempt: a failure frees a slot outside a completion (which
    # would claim the next job in its own transaction), so both workers race for it.
    tq.enqueue_many([{"kind": "span" if i % 2 else "flaky_span",
                      "payload": {"log": log, "sleep": 0.05}, "queue": "api"}
                     for i in range(16)])
    # Other queues' jobs keep both workers' slots changing hands, so either may claim.
    tq.enqueue_many([("span", {"log": log, "sleep": 0.03}) for _ in range(48)])
    ps = workers(procs, target, 2, "--concurrency", "4")
    wait_for(lambda: tq.count("succeeded") == 64, timeout=60)
    stop(procs, ps)
    api = {j.id for j in tq.list(queue="api", limit=100)}
    runs = [s for s in spans(log) if s[0] in api]
    assert len(runs) == 16 + 8  # the flaky ones ran twice
    for before, after in zip(runs, runs[1:]):
        assert after[1] >= before[2], f"job {after[0]} started before job {before[0]} ended"


@pytest.mark.slow
def test_a_rate_of_5_per_second_spreads_20_starts_over_about_4_seconds(
        target, tq, procs, ctl_dir):
    log = str(ctl_dir / "spans.txt")
    assert jobq("limit", "api", "--rate", "5/s", "--db", target).exit_code == 0
    ps = workers(procs, target, 2, "--concurrency", "4")
    wait_for(lambda: len(tq.workers()) == 2, timeout=20)
    tq.enqueue_many([{"kind": "span", "payload": {"log": log}, "queue": "api"}
                        for _ in range(20)])
    wait_for(lambda: tq.count("succeeded") == 20, timeout=30)
    stop(procs, ps)
    starts = sorted(j.started_at for j in tq.list(queue="api", limit=100))
    assert 2.9 <= starts[-1] - starts[0] <= 6.0
    # Each worker process reads the time from its own estimate of the server's clock (on
    # SQLite the machine's clock), synced at open: two estimates may differ by a few
    # milliseconds, more on a loaded machine (the sync halves a round trip). A window is
    # judged by the clock of the worker that claims, so starts stamped by two workers may
    # be that much less than a window apart.
    for i in range(len(starts) - 5):
        assert starts[i + 5] - starts[i] >= 0.95, "six starts within one window"


@pytest.mark.slow
def test_a_pause_and_a_limit_set_while_workers_run_take_effect_within_two_seconds(
        target, tq, procs, ctl_dir):
    log = str(ctl_dir / "spans.txt")
    tq.enqueue_many([{"kind": "span", "payload": {"log": log, "sleep": 0.05},
                         "queue": "live"} for _ in range(400)])
    ps = workers(procs, target, 2, "--concurrency", "4")
    wait_for(lambda: tq.count("succeeded", queue="live") >= 10, timeout=20)
    jobq("pause", "live", "--db", target)
    paused = time.time()
    # For 2 s, and until the runs under way at the pause have ended (later on a loaded
    # machine), no job starts. (A claim that began before the pause committed may start
    # a job a moment later; the clocks of the workers and of this test may differ by a
    # few milliseconds.)
    wait_for(lambda: time.time() >= paused + 2.0
             and tq.count("running", queue="live") == 0, timeout=20, interval=0.05)
    late = [j for j in tq.list(queue="live", limit=1000) if j.started_at
            and j.started_at > paused + 0.1]
    assert late == []
    before = {s[0] for s in spans(log)}  # every run so far has ended and logged its span
    left = tq.count("pending", queue="live")
    assert left > 0
    jobq("limit", "live", "--concurrency", "2", "--db", target)
    jobq("resume", "live", "--db", target)
    done = tq.count("succeeded", queue="live")
    wait_for(lambda: tq.count("succeeded", queue="live") >= done + 40, timeout=30)
    stop(procs, ps)
    # Every run after the resume, from the spans the handlers logged: at most two at
    # once, in every instant, and two at once at some point (the limit is 2, not 1).
    after = [s for s in spans(log) if s[0] not in before]
    assert len(after) >= 40
    peak = max(sum(1 for other in after if other[1] <= s[1] < other[2]) for s in after)
    assert peak == 2, f"{peak} runs at once under a limit of 2"


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")
def test_an_idle_worker_with_a_schedule_uses_under_1_percent_of_a_core(db, queue, procs,
                                                                      ctl_dir):
    [p] = workers(procs, db, 1, every=60)
    wait_for(lambda: queue.schedules(), timeout=20)
    # Windows of 3 s, up to three: on a loaded machine the worker's start (imports, first
    # ticks) can spill into the first; idle means the cost of a window once it has settled.
    used = []
    for _ in range(3):
        before, started = cpu_seconds(p.pid), time.monotonic()
        time.sleep(3.0)
        used.append((cpu_seconds(p.pid) - before) / (time.monotonic() - started))
        if used[-1] < 0.01:
            break
    stop(procs, [p])
    assert min(used) < 0.01, ", ".join(f"{u:.2%}" for u in used) + " of a core"
