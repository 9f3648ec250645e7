"""What a new user hit: options that were silently ignored or reported with the wrong exit
status, a pause of a queue no job uses (a typo, most often)."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from jobq_cli.main import app
from jobq_core import Registry

runner = CliRunner()
TOO_BIG = str(2**64)


def jobq(*args):
    return runner.invoke(app, list(args), catch_exceptions=False)


def usage_error(result, contains: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jobq: ") and contains in lines[0], result.stderr


def test_metrics_host_without_metrics_port_is_a_usage_error(db, queue, app_dir):
    queue.enqueue("nap", {})
    usage_error(jobq("run", "--app", "taskapp", "--burst", "--metrics-host", "0.0.0.0",
                     "--db", db), "--metrics-host needs --metrics-port")
    assert queue.get(1).status == "pending" and queue.workers() == []


@pytest.mark.parametrize("value", [TOO_BIG, str(2**63)])
def test_run_with_a_concurrency_beyond_64_bits_is_a_usage_error(db, queue, app_dir, value):
    usage_error(jobq("run", "--app", "taskapp", "--burst", "--concurrency", value,
                     "--db", db), "--concurrency")
    usage_error(jobq("run", "--app", "taskapp", "--burst", "--pool", "process",
                     "--max-jobs-per-child", value, "--db", db), "--max-jobs-per-child")


def test_limit_with_a_concurrency_beyond_64_bits_is_a_usage_error(db, queue):
    usage_error(jobq("limit", "mail", "--concurrency", TOO_BIG, "--db", db), "--concurrency")
    assert "mail" not in queue.queues()


def test_pausing_a_queue_no_job_uses_pauses_it_and_says_so_on_stderr(db, queue):
    queue.enqueue("nap", {}, queue="mail")
    result = jobq("pause", "mial", "--db", db)
    assert result.exit_code == 0, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "'mial'" in lines[0] and "no job" in lines[0], result.stderr
    assert result.stdout.strip() == "queue 'mial' paused"
    assert queue.queues()["mial"].paused
    as_json = jobq("pause", "other", "--json", "--db", db)
    assert json.loads(as_json.stdout) == {"queue": "other", "paused": True}
    assert "'other'" in as_json.stderr


def test_pausing_a_queue_that_has_or_had_jobs_says_nothing_on_stderr(db, queue):
    job_id = queue.enqueue("nap", {}, queue="mail")
    queue.enqueue("nap", {}, queue="done")
    job = queue.claim("w", queues=["done"])
    queue.complete(job.id, job.token, None)  # a queue whose jobs all finished is still used
    queue.set_limit("limited", concurrency=2)
    for name in ("mail", "done", "limited"):
        result = jobq("pause", name, "--db", db)
        assert result.exit_code == 0 and result.stderr == "", result.stderr
    assert queue.get(job_id).status == "pending"


def test_pausing_the_queue_of_a_recorded_schedule_says_nothing_on_stderr(db, queue):
    queue.register_schedule(Registry().periodic("nap", every=60, queue="reports"), since=0.0)
    result = jobq("pause", "reports", "--db", db)
    assert result.exit_code == 0 and result.stderr == "", result.stderr


def test_list_shows_a_retry_not_yet_due_as_retrying_and_no_error_on_a_succeeded_job(db, queue):
    from jobq_cli.main import app
    from typer.testing import CliRunner

    retry = queue.enqueue("flaky", max_attempts=3)
    job = queue.claim("w")
    queue.fail(job.id, job.token, "ValueError: first try", retry_in=600)
    recovered = queue.enqueue("recovers", max_attempts=3)
    job = queue.claim("w")
    queue.fail(job.id, job.token, "OSError: once", retry_in=0)
    job = queue.claim("w")
    queue.complete(job.id, job.token)
    out = CliRunner().invoke(app, ["list", "--db", db], env={"COLUMNS": "120"}).stdout
    rows = {line.split()[0]: line for line in out.splitlines()[2:]}
    assert "↻ retrying" in rows[str(retry)] and "◷" not in rows[str(retry)]
    assert "✓ succeeded" in rows[str(recovered)] and "OSError" not in rows[str(recovered)]


@pytest.mark.parametrize("columns", [44, 80])
@pytest.mark.slow  # seconds of real time (a pilot session, processes or clocks)
def test_worker_log_lines_on_a_terminal_wrap_at_spaces_never_inside_a_word(app_dir, db, columns):
    """The start line's kinds list (``kinds=boom,nap,...``) and the worker id are single
    words longer than the message column Rich's log handler gave them: it cut them."""
    from .terminal import CSI, jobq_tty

    r = jobq_tty(app_dir, "run", "--app", "taskapp", "--burst", "--db", db, columns=columns)
    assert r.returncode == 0 and r.styled, r.stdout
    # a line as the terminal shows it: what follows its last carriage return
    shown = [line.rpartition("\r")[2] for line in CSI.sub("", r.raw).split("\r\n")]
    start = next(i for i, line in enumerate(shown) if " INFO " in line and " worker " in line)
    lines = shown[start:]
    head = lines[0]
    assert all(len(line) <= columns for line in lines[:6]), lines
    indent = head.index(" worker ") + 1
    message = [head[indent:]]
    for line in lines[1:]:  # continuation lines: indented, or a long word on its own
        if not line.strip() or line.startswith(("jobq worker", head[:2])):
            break
        message.append(line.strip())
    words = " ".join(message).split()
    assert "kinds=boom,nap,record,slow,stuck" in words, message
    assert words[2] == "started:" and "concurrency=8" in words, message


def test_try_reads_a_dash_before_the_first_claim_and_the_tasks_limit_after(db, queue, app_dir):
    """``slow`` declares max_attempts=1; enqueued by name it stores the default 20 until a
    worker claims it: TRY read ``0/20``, a figure no run would reach."""
    from jobq_core import Job
    from jobq_core.presentation.views.cells import tries

    job_id = queue.enqueue("slow", {})
    out = jobq("list", "--db", db).stdout
    row = next(line for line in out.splitlines() if line.split()[:1] == [str(job_id)])
    assert "0/–" in row and "0/20" not in row, out
    shown = jobq("show", str(job_id), "--db", db).stdout
    assert "0 of at most 20" in shown and "0 of 20" not in shown, shown
    assert tries(queue.get(job_id)).plain == "0/–"
    assert json.loads(jobq("list", "--json", "--db", db).stdout)[0]["max_attempts"] == 20

    result = jobq("run", "--app", "taskapp", "--burst", "--db", db)
    assert result.exit_code == 0, result.output
    out = jobq("list", "--db", db).stdout
    row = next(line for line in out.splitlines() if line.split()[:1] == [str(job_id)])
    assert " 1/1 " in f"{row} ", out
    assert tries(queue.get(job_id)).plain == "1/1"
    assert isinstance(queue.get(job_id), Job)
