"""The type checker passes: mypy over jobq_core, jobq_cli and jobq_web (pyproject.toml's
[tool.mypy] ``files``, with its per-module strictness) and over every store's test adapter
(``tests/stores``). A misspelt attribute, a missing argument or a function that no longer
returns what its callers expect fails here, not at run time; so does a third store's adapter
that lacks a member of the ``StoreAdapter`` protocol, or gives one the wrong shape, instead
of failing in the middle of the contract suite.

One mypy run checks all of it: two runs (one of the packages, one of ``tests/stores``, which
follows its imports into jobq_core) each checked jobq_core from scratch on a fresh clone,
side by side on one ``.mypy_cache``: 10.4 s + 8.5 s of CPU cold, against 13.8 s for one."""
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ADAPTERS = "tests/stores"
# A statement name misspelt on purpose (``FENCE`` is one): the check must catch it.
MISSPELT = '''\
from jobq_core.store.statements import Statements


def fence(statements: Statements) -> None:
    print(statements.FENCES)
'''


@pytest.mark.slow  # 14 s of CPU from a fresh clone (no .mypy_cache); about 1 s with it
@pytest.mark.timeout(300)  # as its mypy run: cold, beside a second suite, over 120 s
def test_mypy_finds_no_errors_but_a_misspelt_statement_name(tmp_path):
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    probe = tmp_path / "misspelt_statement.py"
    probe.write_text(MISSPELT)
    proc = subprocess.run([sys.executable, "-m", "mypy", *packages, ADAPTERS, str(probe)],
                          cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1"}, timeout=300)
    errors = [line for line in proc.stdout.splitlines() if re.search(r": error: ", line)]
    # (mypy names the probe by the path it had when its cache entry was written)
    elsewhere = [line for line in errors if not re.match(rf"\S*\b{probe.name}:", line)]
    assert not elsewhere, proc.stdout + proc.stderr
    assert proc.returncode == 1 and len(errors) == 1, proc.stdout + proc.stderr
    assert '"Statements" has no attribute "FENCES"' in errors[0], errors
