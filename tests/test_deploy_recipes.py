"""The Deploying guide's recipes (contrib/deploy/): each is in the guide as it is in its
file, parses, runs only commands and options jobq has, probes paths a worker serves, and
gives the worker's grace the time it needs before the supervisor's SIGKILL."""
from __future__ import annotations

import configparser
import re
import shlex
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from jobq_cli.main import app
from jobq_core.common.time_text import parse_duration

ROOT = Path(__file__).parent.parent
DEPLOY = ROOT / "contrib" / "deploy"
GUIDE = (ROOT / "docs" / "guides" / "deploying.md").read_text()
runner = CliRunner()


def options_of(command: str) -> set[str]:
    """The long options ``jobq COMMAND --help`` lists."""
    done = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    return set(re.findall(r"--[a-z][a-z-]*", done.output))


def check_command(argv: list[str]) -> dict[str, str]:
    """``argv`` (``jobq SUB ...``) uses a command and options jobq has; its options' values."""
    assert Path(argv[0]).name == "jobq", argv
    known = options_of(argv[1])
    values: dict[str, str] = {}
    for i, arg in enumerate(argv[2:], start=2):
        if arg.startswith("--"):
            assert arg in known, f"jobq {argv[1]} has no option {arg}"
            if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                values[arg] = argv[i + 1]
    return values


@pytest.mark.parametrize("name", sorted(p.name for p in DEPLOY.iterdir()))
def test_each_recipe_is_in_the_guide_as_it_is_in_its_file(name):
    assert (DEPLOY / name).read_text().rstrip() in GUIDE


def test_the_systemd_unit_stops_the_worker_alone_after_its_grace_and_restarts_it():
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str
    unit.read(DEPLOY / "jobq-worker.service")
    service = unit["Service"]
    assert service["KillMode"] == "mixed" and service["Restart"] == "always"
    run = check_command(shlex.split(service["ExecStart"]))
    check_command(shlex.split(service["ExecStartPre"]))
    assert float(service["TimeoutStopSec"]) > parse_duration(run["--grace"])


def test_the_dockerfile_runs_the_worker_in_exec_form():
    cmd = next(line for line in (DEPLOY / "Dockerfile").read_text().splitlines()
               if line.startswith("CMD "))
    argv = yaml.safe_load(cmd[4:])  # a JSON array: the exec form
    assert isinstance(argv, list)
    check_command(argv)


def test_kubernetes_probes_ask_the_workers_health_paths_and_the_grace_fits():
    docs = list(yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text()))
    kinds = {d["kind"]: d for d in docs}
    assert set(kinds) == {"Job", "Deployment", "ScaledObject"}
    check_command(kinds["Job"]["spec"]["template"]["spec"]["containers"][0]["command"])
    pod = kinds["Deployment"]["spec"]["template"]["spec"]
    [worker] = pod["containers"]
    run = check_command(worker["command"])
    assert pod["terminationGracePeriodSeconds"] > parse_duration(run["--grace"])
    port = worker["ports"][0]
    assert (port["containerPort"], port["name"]) == (int(run["--metrics-port"]), "metrics")
    assert worker["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert worker["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert worker["resources"]["limits"]["memory"]
    source = Path(ROOT / "jobq_core" / "observability" / "prometheus.py").read_text()
    assert '"/healthz", "/readyz"' in source  # the paths the worker's server answers
    [trigger] = kinds["ScaledObject"]["spec"]["triggers"]
    assert "jobq_queue_lag_seconds" in trigger["metadata"]["query"]
    assert kinds["ScaledObject"]["spec"]["scaleTargetRef"]["name"] == \
        kinds["Deployment"]["metadata"]["name"]


def test_pgbouncer_runs_in_transaction_mode():
    ini = configparser.ConfigParser()
    ini.read(DEPLOY / "pgbouncer.ini")
    assert ini["pgbouncer"]["pool_mode"] == "transaction"
    assert "poll_only=true" in GUIDE
