"""In a real browser (Debian's chromium, driven by Playwright): the dashboard shows a job
enqueued by another process without a reload, opens its page, and retries a dead job,
which goes pending. Slow: a server process and a browser.

``JOBQ_WEB_SCREENSHOTS=DIR`` also saves the main pages' screenshots there (the docs' are
made so: ``JOBQ_WEB_SCREENSHOTS=docs/images pytest tests/web/test_browser.py -n 0``)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobq_core import Queue

from .conftest import TOKEN

CHROMIUM = "/usr/bin/chromium"
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                 reason="needs Debian's chromium (apt-get install chromium)")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(db, seeded):
    port = free_port()
    code = ("import sys, uvicorn; from jobq_web import create_app; "
            "uvicorn.run(create_app(sys.argv[1], token=sys.argv[2]), host='127.0.0.1', "
            "port=int(sys.argv[3]), log_level='warning')")
    proc = subprocess.Popen([sys.executable, "-c", code, db, TOKEN, str(port)])
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def page():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("dialog", lambda d: d.accept())  # each action's confirmation
        yield page
        browser.close()
        assert not [e for e in errors if "Content Security Policy" in e], errors


def test_a_job_enqueued_elsewhere_appears_without_a_reload_and_a_dead_one_is_retried(
        server, page, db, seeded):
    page.goto(f"{server}/all")
    page.wait_for_selector("#live table")
    subprocess.run([sys.executable, "-c",
                    "import sys; from jobq_core import Queue; q = Queue(sys.argv[1]); "
                    "print(q.enqueue('report.build', {'from': 'elsewhere'}, queue='reports'))",
                    db], check=True, capture_output=True, text=True)
    page.get_by_text("report.build").wait_for(timeout=5000)  # no reload: the live feed

    page.get_by_role("link", name="log in to act").click()
    page.fill("input[name=token]", TOKEN)
    page.get_by_role("button", name="log in").click()
    page.goto(f"{server}/jobs/{seeded['dead1']}")
    assert "INV-59476" in page.content()
    page.get_by_role("button", name="retry").click()
    page.wait_for_url("**done=*")
    page.locator("h1 .state").filter(has_text="pending").wait_for(timeout=5000)
    with Queue(db) as q:
        assert q.get(seeded["dead1"]).status == "pending"

    shots = os.environ.get("JOBQ_WEB_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        for path, name in (("/dead", "dead"), ("/queues", "queues"), ("/all", "all"),
                           (f"/jobs/{seeded['dead2']}", "job")):
            page.goto(server + path)
            page.wait_for_selector("#live")
            page.screenshot(path=str(Path(shots) / f"web-{name}.png"))
