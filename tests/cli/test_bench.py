"""``jobq bench`` at tiny sizes: its JSON keys and its correctness checks. No timing
assertions: the figures depend on the machine."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from jobq_cli import bench_runs
from jobq_cli.main import app

runner = CliRunner()
TINY = ["--jobs", "200", "--scale-jobs", "2000", "--samples", "10"]
ROWS = ["enqueue", "batch", "drain_api_1", "drain_api_n", "drain_worker_1", "drain_worker_n",
        "pool_noop", "pool_cpu", "latency", "scale_backlog", "scale_history", "limits"]
TOP_KEYS = {"jobq", "python", "sqlite", "platform", "cpus", "filesystem", "synchronous", "jobs",
            "processes", "scale_jobs", "samples", "ok", "results"}
ROW_KEYS = {"jobs", "processes", "seconds", "rate", "ok", "expected", "counted", "duplicates",
            "redelivered", "lost", "errors"}
EXTRA_KEYS = {
    "drain_worker_1": {"ratio_to_api"}, "drain_worker_n": {"ratio_to_api"},
    **{key: {"concurrency", "rounds", "rate_thread", "ratio_to_thread", "startup_ms",
             "startup_ms_thread"} for key in ("pool_noop", "pool_cpu")},
    "latency": {"samples", "p50_ms", "p99_ms", "max_ms", "idle_cpu_percent"},
    "scale_backlog": {"backlog_small", "backlog_large", "rate_small", "rate_large", "ratio"},
    "scale_history": {"finished", "rate_empty", "rate_full", "ratio", "stats_ms_empty",
                      "stats_ms_full", "stats_ratio"},
    "limits": {"rate_none", "rate_other_limited", "rate_own_limited", "ratio", "ratio_own"},
}


def test_every_workload_reports_its_documented_keys_and_every_job_ran_exactly_once(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "jobq_cli.main", "bench", *TINY, "--processes", "2", "--json",
         "--db-dir", str(tmp_path), "--synchronous", "full"],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert set(report) == TOP_KEYS
    assert (report["jobs"], report["processes"], report["synchronous"]) == (200, 2, "FULL")
    assert list(report["results"]) == ROWS
    for key, row in report["results"].items():
        assert set(row) == ROW_KEYS | EXTRA_KEYS.get(key, set()), key
        assert row["ok"] is True, (key, row)
        assert row["counted"] == row["expected"] > 0, (key, row)
        assert row["duplicates"] == row["redelivered"] == row["lost"] == row["errors"] == 0
    results = report["results"]
    assert results["drain_api_n"]["processes"] == results["drain_worker_n"]["processes"] == 2
    assert results["latency"]["samples"] == 10
    assert (results["pool_noop"]["concurrency"], results["pool_cpu"]["concurrency"]) == (8, 2)
    assert results["pool_noop"]["counted"] == 6 * 200 and results["pool_cpu"]["jobs"] == 10
    assert results["scale_backlog"]["backlog_large"] == results["scale_history"]["finished"] == 2000
    assert report["ok"] is True
    assert len(done.stderr.strip().splitlines()) == len(ROWS)  # one plain line per row
    assert list(tmp_path.iterdir()) == []  # its databases are gone


def test_without_json_it_prints_a_table_and_one_process_skips_the_multiprocess_rows(tmp_path):
    result = runner.invoke(app, ["bench", *TINY, "--processes", "1", "--only", "enqueue, DRAIN",
                                 "--db-dir", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "jobq bench" in result.stdout and "jobs/s" in result.stdout
    lines = result.stderr.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["[1/2] enqueue", "[2/2] drain_api_1"]
    assert all(line.endswith("ok 200") for line in lines)


def test_a_failed_check_still_reports_every_result_and_exits_1(tmp_path, monkeypatch):
    def lossy(s, note):
        return bench_runs.row(s.jobs, 1, 0.5, expected=s.jobs, counted=s.jobs - 3, duplicates=1)

    monkeypatch.setattr(bench_runs, "batch", lossy)
    result = runner.invoke(app, ["bench", *TINY, "--only", "enqueue,batch", "--json",
                                 "--db-dir", str(tmp_path)])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["results"]["enqueue"]["ok"] is True
    assert report["results"]["batch"]["lost"] == 3
    assert result.stderr.strip().splitlines()[-1] == (
        "jobq: correctness check failed: batch (FAILED: 3 lost, 1 duplicates)")


@pytest.mark.parametrize("args, message", [
    (["--jobs", "-5"], "--jobs must be >= 1, got -5"),
    (["--processes", "0"], "--processes must be >= 1, got 0"),
    (["--scale-jobs", "9"], "--scale-jobs must be >= 10, got 9"),
    (["--only", "enqueue,bogus"], "unknown workload 'bogus' in --only"),
    (["--only", ","], "--only names no workload"),
    (["--synchronous", "off"], "--synchronous must be NORMAL or FULL, got 'off'"),
    (["--db-dir", "no/such/dir"], "--db-dir 'no/such/dir' is not an existing directory"),
])
def test_bad_options_end_with_one_line_and_status_2_before_anything_runs(args, message, tmp_path,
                                                                         monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["bench", *args])
    assert result.exit_code == 2
    assert result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("jobq: ") and message in line
    assert "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []
