"""Who may act: the token (bearer, or the login form's session with its CSRF field),
read-only dashboards, escaping of hostile text, the headers, and refusing to listen on a
public address without a token."""
from __future__ import annotations

import subprocess
import sys

import pytest
from starlette.testclient import TestClient

from jobq_web import create_app

from .conftest import HOSTILE, TOKEN, login

BEARER = {"Authorization": f"Bearer {TOKEN}"}


def actions(seeded):
    """Every action, as (path, form)."""
    return [
        (f"/jobs/{seeded['dead1']}/retry", {}),
        (f"/jobs/{seeded['pending']}/cancel", {}),
        ("/queues/mail/pause", {}),
        ("/queues/mail/resume", {}),
        ("/queues/mail/limits", {"concurrency": "3", "rate": "5/s"}),
        ("/queues/mail/limits/clear", {}),
        ("/dead/retry", {"q": "kind:boom"}),
        ("/workers/forget-lost", {}),
    ]


def test_every_action_without_the_token_is_401_and_changes_nothing(client, seeded, queue):
    for path, form in actions(seeded):
        r = client.post(path, data=form)
        assert r.status_code == 401, (path, r.text)
    assert queue.get(seeded["dead1"]).status == "dead"
    assert not queue.queues()["mail"].paused


def test_a_wrong_bearer_token_is_401(client, seeded):
    r = client.post(f"/jobs/{seeded['dead1']}/retry", headers={"Authorization": "Bearer no"})
    assert r.status_code == 401


def test_every_action_with_the_bearer_token_acts(client, seeded, queue):
    for path, form in actions(seeded):
        r = client.post(path, data=form, headers=BEARER)
        assert r.status_code == 200, (path, r.text)
    assert queue.get(seeded["dead1"]).status == "pending"
    assert queue.get(seeded["pending"]).status == "cancelled"
    assert queue.get(seeded["dead2"]).status == "pending"  # retried with kind:boom
    assert queue.queues()["mail"].concurrency is None  # set, then cleared


def test_an_action_on_a_job_in_the_wrong_state_is_409_with_the_reason(client, seeded):
    r = client.post(f"/jobs/{seeded['pending']}/retry", headers=BEARER)
    assert r.status_code == 409 and r.json()["error"]


def test_bad_limits_are_refused_in_one_line(client):
    r = client.post("/queues/mail/limits", data={"concurrency": "0"}, headers=BEARER)
    assert r.status_code == 400 and "at least 1" in r.json()["error"]
    r = client.post("/queues/mail/limits", data={"rate": "fast"}, headers=BEARER)
    assert r.status_code == 400


def test_the_login_form_sets_a_session_and_forms_need_its_csrf_field(client, seeded, queue):
    csrf = login(client)
    cookie = client.cookies.get("jobq_session")
    assert cookie
    job = seeded["dead1"]
    assert client.post(f"/jobs/{job}/retry", data={}).status_code == 403  # no CSRF
    assert client.post(f"/jobs/{job}/retry", data={"csrf": "x" + csrf[1:]}).status_code == 403
    assert queue.get(job).status == "dead"
    r = client.post(f"/jobs/{job}/retry", data={"csrf": csrf, "next": "/dead"},
                    follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/dead?done=")
    assert queue.get(job).status == "pending"


def test_a_forged_session_cookie_is_not_a_login(client, seeded):
    client.cookies.set("jobq_session", "abc.def")
    assert client.post(f"/jobs/{seeded['dead1']}/retry", data={"csrf": "x"}).status_code == 401


def test_a_wrong_login_is_refused(client):
    r = client.post("/login", data={"token": "guess"})
    assert r.status_code == 401 and client.cookies.get("jobq_session") is None


def test_a_redirect_after_an_action_never_leaves_the_dashboard(client, seeded):
    csrf = login(client)
    r = client.post(f"/jobs/{seeded['dead1']}/retry",
                    data={"csrf": csrf, "next": "//evil.example/x"}, follow_redirects=False)
    assert r.status_code == 303 and not r.headers["location"].startswith("//")


def test_without_a_token_the_dashboard_is_read_only(readonly, seeded, queue):
    page = readonly.get("/dead").text
    assert "retry" not in page.split("<table", 1)[1] and "read-only" in page
    r = readonly.post(f"/jobs/{seeded['dead1']}/retry", headers=BEARER)
    assert r.status_code == 403 and queue.get(seeded["dead1"]).status == "dead"
    assert readonly.post("/login", data={"token": TOKEN}).status_code == 401


def test_read_only_with_a_token_acts_on_nothing(db, seeded, queue):
    with TestClient(create_app(db, token=TOKEN, read_only=True)) as c:
        r = c.post(f"/jobs/{seeded['dead1']}/retry", headers=BEARER)
        assert r.status_code == 403
    assert queue.get(seeded["dead1"]).status == "dead"


def test_hostile_text_is_escaped_everywhere(client, seeded):
    job = seeded["hostile"]
    for path in ("/dead", "/dead?jobs=1", "/all", f"/jobs/{job}", "/all?q=alert"):
        page = client.get(path).text
        assert "<script>alert" not in page and "<b>B</b>" not in page, path
        assert "\x1b" not in page and "\x07" not in page and "\u202e" not in page, path
    detail = client.get(f"/jobs/{job}").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in detail
    assert len(detail) < 200_000  # the 1 MB error is cut on the page
    data = client.get(f"/api/jobs/{job}")
    assert data.content.isascii()
    assert len(data.json()["error"]) > 1_000_000  # whole in the JSON twin
    assert HOSTILE in data.json()["payload"]["note"]


def test_every_page_forbids_inline_script(client):
    r = client.get("/running")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert r.headers["x-frame-options"] == "DENY"
    assert "<script>" not in r.text and " on" not in r.text.split("<body>", 1)[1].split("=")[0]


def jobq(*args, env=None):
    return subprocess.run([sys.executable, "-m", "jobq_cli.main", *args], capture_output=True,
                          text=True, timeout=60, env=env)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "example.com", "::"])
def test_jobq_web_refuses_a_public_address_without_a_token(db_path, host):
    import os
    env = {k: v for k, v in os.environ.items() if k != "JOBQ_WEB_TOKEN"}
    r = jobq("web", "--db", str(db_path), "--host", host, env=env)
    assert r.returncode == 2 and "--token" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_jobq_web_reports_a_missing_database_in_one_line(tmp_path):
    r = jobq("web", "--db", str(tmp_path / "nope.db"))
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1


def test_retrying_a_dead_group_retries_exactly_its_jobs(client, seeded, queue):
    group = next(g for g in client.get("/api/dead").json() if g["kind"] == "boom")
    r = client.post("/dead/retry", data={"of": str(group["last_id"])}, headers=BEARER)
    assert r.status_code == 200 and r.json()["retried"] == 2
    assert queue.get(seeded["dead1"]).status == queue.get(seeded["dead2"]).status == "pending"
    assert queue.get(seeded["hostile"]).status == "dead"


def test_terminate_cancels_a_running_job_at_once_and_fences_its_run(client, queue):
    """The job page's terminate button: ``terminate=1`` on the cancel action."""
    from jobq_core import LeaseLost

    job_id = queue.enqueue("ok", queue="long")
    run = queue.claim("w", queues=["long"])
    assert run is not None and run.id == job_id
    login(client)  # the page's forms are for a logged-in session
    page = client.get(f"/jobs/{job_id}").text
    assert 'name="terminate" value="1"' in page
    r = client.post(f"/jobs/{job_id}/cancel", data={"terminate": "1"}, headers=BEARER)
    assert r.status_code == 200 and r.json()["status"] == "cancelled", r.text
    assert "run stopped" in r.json()["said"]
    assert queue.get(job_id).status == "cancelled"
    with pytest.raises(LeaseLost):
        queue.complete(run.id, run.token)
