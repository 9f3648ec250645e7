"""The documentation site builds without a warning, and the README keeps its shape.

``mkdocs build --strict`` fails on a broken link or anchor, on a page left out of the nav,
and (through docs/hooks/reference.py) on a public name of jobq_core that the Python API
page does not place: the docs cannot silently fall behind the code.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

QUICK_START_COMMANDS = [
    "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/jobq demo",
    "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest",
]


def build(tmp_path: Path, root: Path = ROOT) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` (not ``--quiet``: that hides warnings from strict mode)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict",
         "--config-file", str(root / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        cwd=root, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # a whole mkdocs build, seconds
def test_the_site_builds_strictly_with_the_generated_reference(tmp_path):
    r = build(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    site = tmp_path / "site"
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    api = (site / "reference" / "python-api" / "index.html").read_text(encoding="utf-8")
    # generated from the Typer app and from jobq_core, not retyped
    assert 'id="jobq-enqueue"' in cli and "--max-jobs-per-child K" in cli
    assert 'id="queueenqueue"' in api and 'id="jobcontextcomplete"' in api
    assert "<!-- jobq:" not in cli + api


@pytest.mark.slow  # a whole mkdocs build, seconds
def test_a_broken_anchor_or_an_undocumented_public_name_fails_the_build(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy)
    index, api = copy / "docs" / "index.md", copy / "docs" / "reference" / "python-api.md"
    index.write_text(index.read_text(encoding="utf-8") + "\n[gone](concepts.md#no-such-anchor)\n",
                     encoding="utf-8")
    api.write_text(api.read_text(encoding="utf-8").replace("<!-- jobq:api LeaseLost -->", ""),
                   encoding="utf-8")
    r = build(tmp_path, copy)
    assert r.returncode != 0
    assert "no-such-anchor" in r.stderr and "jobq_core.LeaseLost is not documented" in r.stderr


def test_the_readme_is_short_and_its_quick_start_has_exactly_its_two_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    quick_start = text[text.index("## Quick start"):]
    quick_start = quick_start[:quick_start.index("\n## ", 1)]
    commands = re.findall(r"```sh\n(.*?)\n```", quick_start, flags=re.S)
    assert commands == QUICK_START_COMMANDS


def test_ci_runs_the_readmes_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert QUICK_START_COMMANDS[1] in ci
