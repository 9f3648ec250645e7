"""Every store's test adapter (``tests/stores``) is what the tests take it for: mypy checks
each one in ``ADAPTERS`` against the ``StoreAdapter`` protocol, so that a third store's
adapter that lacks a member, or gives one the wrong shape, fails here and not in the middle
of the contract suite."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # mypy over jobq_core's imports: seconds without its cache
def test_every_store_adapter_meets_the_protocol():
    proc = subprocess.run([sys.executable, "-m", "mypy", "tests/stores"], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"},
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
