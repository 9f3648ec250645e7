"""The import boundaries in pyproject.toml ([tool.importlinter]) hold: the engine never
imports a front end, only jobq_core.store speaks to a database, and the CLI and the
monitor use jobq_core's public names only."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_import_contracts_hold():
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1"}, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
