"""``jobq enqueue --app``: a kind the registry has no handler for is warned about on one
line of stderr; a typed handler's payload is checked before anything is written."""
from __future__ import annotations

import textwrap

from typer.testing import CliRunner

from jobq_cli.main import app
from jobq_core import Queue

runner = CliRunner()

TYPED_APP = textwrap.dedent('''
    import dataclasses
    from jobq_core import Registry

    registry = Registry()

    @dataclasses.dataclass
    class Email:
        to: str

    @registry.task("email.send")
    def send(email: Email):
        return email.to
''')


def jobq(*args, input=None):
    return runner.invoke(app, list(args), input=input, catch_exceptions=False)


def test_an_unknown_kind_is_enqueued_with_a_one_line_warning(db):
    result = jobq("enqueue", "email.sned", "{}", "--app", "taskapp", "--db", db)
    assert result.exit_code == 0 and result.stdout == "1\n"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jobq: warning: taskapp has no handler "
                                                   "for 'email.sned'"), result.stderr
    with Queue(db) as q:
        assert q.get(1).kind == "email.sned"


def test_a_known_kind_enqueues_silently(db):
    result = jobq("enqueue", "record", '{"log": "x"}', "--app", "taskapp", "--db", db)
    assert result.exit_code == 0 and result.stdout == "1\n" and result.stderr == ""


def test_without_app_no_kind_is_checked(db):
    result = jobq("enqueue", "email.sned", "--db", db)
    assert result.exit_code == 0 and result.stderr == ""


def test_stdin_lines_with_unknown_kinds_are_named_once_on_one_line(db):
    lines = '{"kind": "nope"}\n{"kind": "record", "payload": {"log": "x"}}\n{"kind": "nope"}\n' \
            '{"kind": "nada"}\n'
    result = jobq("enqueue", "--stdin", "--app", "taskapp", "--db", db, input=lines)
    assert result.exit_code == 0 and result.stdout == "1\n2\n3\n4\n"
    warning = result.stderr.strip().splitlines()
    assert len(warning) == 1 and "'nada', 'nope'" in warning[0], result.stderr


def test_a_typed_payload_that_does_not_fit_writes_nothing(app_dir, db):
    (app_dir / "typedapp.py").write_text(TYPED_APP)
    bad = jobq("enqueue", "email.send", '{"too": "a@example.com"}', "--app", "typedapp",
               "--db", db)
    assert bad.exit_code == 1 and "no field 'too'" in bad.stderr
    good = jobq("enqueue", "email.send", '{"to": "a@example.com"}', "--app", "typedapp",
                "--db", db)
    assert good.exit_code == 0 and good.stdout == "1\n"
    with Queue(db) as q:
        assert q.count() == 1
