"""One help format, one error format and one duration format across every ``jobq`` command,
walked from the command group itself (a command or duration option added later is walked
too), each command run as a subprocess at COLUMNS=80."""
from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
import typing

import pytest
import typer

from jobq_cli.common import duration_option
from jobq_cli.main import app
from jobq_core import Queue
from jobq_tui.main import parser as tui_parser

pytestmark = pytest.mark.slow  # every command run as a process: seconds each

GROUP = typer.main.get_command(app)
COMMANDS = sorted(GROUP.commands)
TYPE_LABEL = re.compile(r"<(?:bool|int|float|str|text|list|path|int range|float range)\b[^>]*>")


def jobq(cwd, *args):
    env = {**os.environ, "COLUMNS": "80"}
    env.pop("JOBQ_DB", None)
    return subprocess.run([sys.executable, "-m", "jobq_cli.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def options(command: str) -> dict[str, tuple[object, typer.models.OptionInfo]]:
    """The command's options as its function declares them: name -> (type, OptionInfo)."""
    fn = inspect.unwrap(GROUP.commands[command].callback)
    found = {}
    for name, hint in typing.get_type_hints(fn, include_extras=True).items():
        if typing.get_origin(hint) is typing.Annotated:
            base, *meta = typing.get_args(hint)
            for m in meta:
                if isinstance(m, typer.models.OptionInfo):
                    found[name] = (base, m)
    return found


def flag(name: str, info: typer.models.OptionInfo) -> str:
    return next((d for d in info.param_decls if d.startswith("--")),
                "--" + name.replace("_", "-"))


DURATION_FLAGS = [(command, flag(name, info)) for command in COMMANDS
                  for name, (_, info) in options(command).items()
                  if info.parser is duration_option]


def test_the_walk_finds_every_duration_option_and_no_number_of_seconds_outside_it():
    assert set(DURATION_FLAGS) >= {("enqueue", "--delay"), ("stats", "--window"),
                                   ("prune", "--older-than"), ("run", "--lease"),
                                   ("run", "--grace"), ("demo", "--duration"),
                                   ("metrics", "--beat")}
    for command in COMMANDS:
        for name, (base, info) in options(command).items():
            if base in (float, typing.Optional[float]):  # seconds, in jobq: a duration
                assert info.parser is duration_option, (command, name)
                assert info.metavar == "DURATION", (command, name)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_commands_help_is_plain_fits_80_columns_and_names_each_value(app_dir, command):
    r = jobq(app_dir, command, "--help")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert not TYPE_LABEL.search(r.stdout), r.stdout  # no "<bool>", "ID <int>", "<list[str]>"
    assert not set("╭╮╰╯│") & set(r.stdout), r.stdout
    assert all(len(line) <= 80 for line in r.stdout.splitlines()), r.stdout
    for name, (base, info) in options(command).items():
        if base not in (bool, typing.Optional[bool]) and info.metavar is None:
            pytest.fail(f"jobq {command} {flag(name, info)} takes a value but names none")
    assert re.search(r"default: \d+\.\d+[];]", r.stdout) is None, r.stdout  # 30s, not 30.0


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_option_to_any_command_is_one_line_and_exit_status_2(app_dir, command):
    r = jobq(app_dir, command, "--bogus", "--db", "none.db")
    assert r.returncode == 2, r.stderr
    assert r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"jobq: {command}: ") and "--bogus" in r.stderr
    assert "Traceback" not in r.stderr and "Usage:" not in r.stderr
    assert not (app_dir / "none.db").exists()


@pytest.mark.parametrize("command, option", DURATION_FLAGS)
def test_every_duration_option_takes_every_form_and_refuses_others_in_one_line(
        app_dir, command, option):
    cmd = GROUP.commands[command]
    for text, seconds in (("90", 90.0), ("1.5", 1.5), ("90s", 90.0), ("15m", 900.0),
                          ("1h30m", 5400.0), ("7d", 604800.0), ("2w", 1209600.0)):
        ctx = cmd.make_context(command, [option, text], resilient_parsing=True)
        name = next(p.name for p in cmd.params if option in getattr(p, "opts", ()))
        assert ctx.params[name] == seconds, (command, option, text)
    r = jobq(app_dir, command, option, "ninety", "--db", "none.db")
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.startswith(f"jobq: {command}: ") and r.stderr.count("\n") == 1, r.stderr
    assert "bad duration 'ninety'" in r.stderr and "1h30m" in r.stderr
    assert not (app_dir / "none.db").exists()


@pytest.mark.parametrize("option", ["--interval", "--beat"])
def test_the_monitors_duration_options_take_the_same_forms(app_dir, db, option):
    assert getattr(tui_parser().parse_args(["x.db", option, "1m"]),
                   option[2:]) == 60.0
    assert getattr(tui_parser().parse_args(["x.db", option, "2"]), option[2:]) == 2.0
    Queue(db).close()
    r = jobq(app_dir, "tui", "--db", db, option, "ninety")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("jobq: tui: ") and "bad duration 'ninety'" in r.stderr


@pytest.mark.parametrize("args", [
    ["show", "7"], ["retry", "7"], ["cancel", "7"], ["schedules", "--forget", "nokey"],
])
def test_an_error_that_is_not_a_usage_error_is_one_line_and_exit_status_1(app_dir, db, args):
    Queue(db).close()
    r = jobq(app_dir, *args, "--db", db)
    assert r.returncode == 1 and r.stdout == "", r.stderr
    assert r.stderr.startswith("jobq: ") and r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args, message", [
    (["enqueue"], "give a KIND (or --stdin)"),
    (["list", "--status", "done"], "unknown status 'done'"),
    (["retry"], "give a job ID or --all-dead (not both)"),
    (["limit", "mail"], "give --concurrency N"),
    (["limit", "mail", "--rate", "5/week"], "a rate is N/s, N/m or N/h"),
    (["copy", "--from", "a.db", "--to", "a.db"], "--from and --to name the same database"),
    (["run", "--app", "taskapp", "--lease", "0"], "--lease must be > 0 seconds"),
    (["demo", "--duration", "0"], "--duration must be more than 0 seconds"),
    (["bench", "--jobs", "0"], "--jobs must be >= 1"),
    (["metrics", "--beat", "0"], "--beat must be more than 0 seconds"),
])
def test_a_commands_own_usage_error_is_said_as_clicks_are_naming_the_command(app_dir, db,
                                                                              args, message):
    command = args[0]
    r = jobq(app_dir, *args, *([] if command in ("copy", "bench") else ["--db", db]))
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.startswith(f"jobq: {command}: {message}"), r.stderr
    assert r.stderr.endswith(f" (see jobq {command} --help)\n") and r.stderr.count("\n") == 1


CLI_PAGE = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "reference", "cli.md")


def documented_synopses() -> dict[str, set[str]]:
    """The flags each command's synopses in the CLI reference's hand-written table of
    commands name (the rest of that page is generated from the app, so cannot drift)."""
    text = open(CLI_PAGE, encoding="utf-8").read()
    section = text[text.index("## Commands at a glance"):text.index("## Conventions")]
    named: dict[str, set[str]] = {}
    for row in section.splitlines():
        if not row.startswith("| `jobq "):
            continue
        synopses = row.split(" | ")[0]
        for synopsis in re.findall(r"`(jobq [^`]+)`", synopses):
            command = synopsis.split()[1]
            named.setdefault(command, set()).update(re.findall(r"--[a-z][a-z-]*", synopsis))
    return named


def test_the_docs_table_of_commands_names_every_command_and_option_there_is():
    named = documented_synopses()
    assert set(named) == set(COMMANDS)
    for command, flags in named.items():
        if command == "tui":  # its options are jobq-tui's, passed on
            real = {o for a in tui_parser()._actions for o in a.option_strings} | {"--db"}
        else:
            real = {o for p in GROUP.commands[command].params
                    for o in [*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ())]
                    if o.startswith("-")}
        assert flags <= real, (command, flags - real)  # no option the command lacks
        # --version: jobq's own (`jobq --version`), said once above the table
        assert real - flags <= {"--help", "-h", "--db", "--json", "--version"}, (
            command, real - flags)
