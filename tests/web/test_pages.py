"""Every page and its JSON twin, on each store: what it shows, and that the JSON says what
``jobq ... --json`` says."""
from __future__ import annotations

import pytest

PAGES = ["/running", "/queues", "/workers", "/retries", "/dead", "/dead?jobs=1", "/all",
         "/schedules", "/keys"]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_and_its_json_twin_answer(client, path):
    page = client.get(path)
    assert page.status_code == 200, page.text[:300]
    assert page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    twin = client.get("/api" + path)
    assert twin.status_code == 200, twin.text[:300]
    assert isinstance(twin.json(), list)


def test_the_root_opens_the_running_page(client):
    r = client.get("/", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].endswith("/running")


def test_dead_jobs_are_grouped_by_error_with_a_count(client, seeded):
    groups = client.get("/api/dead").json()
    boom = next(g for g in groups if g["kind"] == "boom")
    assert boom["count"] == 2 and boom["queues"] == ["billing"]
    page = client.get("/dead").text
    assert "HTTP 502 for invoice" in page
    jobs = {j["id"] for j in client.get("/api/dead?jobs=1").json()}
    assert {seeded["dead1"], seeded["dead2"], seeded["hostile"]} <= jobs


def test_all_jobs_take_the_monitors_filter_language(client, seeded):
    ids = [j["id"] for j in client.get("/api/all", params={"q": "queue:billing"}).json()]
    assert sorted(ids) == sorted([seeded["dead1"], seeded["dead2"]])
    ids = [j["id"] for j in client.get("/api/all", params={"q": "status:pending"}).json()]
    assert seeded["pending"] in ids and seeded["dead1"] not in ids
    ids = [j["id"] for j in client.get("/api/all", params={"q": "INV-59480"}).json()]
    assert ids == [seeded["dead2"]]
    bad = client.get("/all", params={"q": "status:bogus"})
    assert bad.status_code == 200 and "status must be one of" in bad.text


def test_a_job_reference_in_the_filter_opens_its_page(client, seeded):
    r = client.get("/all", params={"q": f"#{seeded['dead1']}"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].endswith(f"/jobs/{seeded['dead1']}")


def test_a_jobs_page_shows_its_payload_attempts_and_why(client, seeded):
    job_id = seeded["dead1"]
    page = client.get(f"/jobs/{job_id}").text
    assert "INV-59476" in page and "#1" in page and "why" in page
    data = client.get(f"/api/jobs/{job_id}").json()
    assert data["status"] == "dead" and data["payload"] == {"invoice": "INV-59476"}
    assert data["history"][0]["outcome"] and "INV-59476" in data["history"][0]["error"]
    assert data["why"]["reason"] == "dead" and data["waits_on"] == []


def test_an_unknown_job_is_a_404_on_the_page_and_its_twin(client):
    assert client.get("/jobs/999999").status_code == 404
    assert client.get("/api/jobs/999999").json() == {"error": "job 999999 does not exist "
                                                               "(pruned?)"}
    assert client.get("/jobs/abc").status_code == 404


def test_queues_show_their_limits_and_the_twin_is_jobq_queues_json(client, queue):
    from jobq_cli.controls import queue_json
    stats = queue.stats(window=1.0)
    twin = client.get("/api/queues").json()
    expected = [queue_json(n, qs, stats.now) for n, qs in stats.queues.items()]
    strip = [{k: v for k, v in q.items() if k != "oldest_pending_age"} for q in twin]
    assert strip == [{k: v for k, v in q.items() if k != "oldest_pending_age"}
                     for q in expected]
    assert "≤2 running" in client.get("/queues").text


def test_the_stats_twin_is_jobq_stats_json(client):
    data = client.get("/api/stats").json()
    assert data["dead"] == 3 and set(data["queues"]) == {"mail", "billing"}


def test_an_unreachable_database_is_a_plain_banner_not_a_traceback(tmp_path):
    from starlette.testclient import TestClient

    from jobq_core import Queue
    from jobq_web import create_app
    path = tmp_path / "gone.db"
    Queue(str(path)).close()
    with TestClient(create_app(str(path))) as c:
        assert c.get("/running").status_code == 200
        for f in tmp_path.iterdir():
            f.unlink()
        r = c.get("/running")
        assert r.status_code == 503 and 'class="banner"' in r.text
        assert "Traceback" not in r.text
        assert c.get("/api/running").json()["error"] == "database unreachable"


def test_a_postgresql_urls_password_is_never_shown(pg_url):
    from starlette.testclient import TestClient

    from jobq_core import Queue
    from jobq_web import create_app
    Queue(pg_url).check()
    secret = pg_url.replace("postgresql://", "postgresql://jobq:hunter2@", 1) \
        if "@" not in pg_url else pg_url
    with TestClient(create_app(secret)) as c:
        for path in ("/running", "/queues"):
            assert "hunter2" not in c.get(path).text


def test_a_text_search_says_it_read_the_newest_jobs_and_scope_all_reads_every_one(
        client, seeded):
    searched = client.get("/all", params={"q": "invoice"}).text
    assert "Searched the newest 50,000 jobs" in searched and "scope:all" in searched
    everything = client.get("/all", params={"q": "invoice scope:all"})
    assert everything.status_code == 200 and "Searched the newest" not in everything.text
    assert "Searched the newest" not in client.get("/all", params={"q": "queue:billing"}).text
    ids = {j["id"] for j in client.get("/api/all", params={"q": "invoice scope:all"}).json()}
    assert {seeded["dead1"], seeded["dead2"]} <= ids
