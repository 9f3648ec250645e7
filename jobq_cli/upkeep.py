"""Commands for keeping a database healthy: migrate, retention, health. Their ``--json``
keys are documented in docs/reference/cli.md."""
from __future__ import annotations

from types import EllipsisType
from typing import Annotated, Any, Optional

import typer

from jobq_core import JobqError, Queue, Retention, SchemaOutdated
from jobq_core.common.time_text import duration, parse_duration

from . import render
from .common import DEFAULT_DB, DbOption, JsonOption, fail, friendly, open_queue, print_json, usage


@friendly
def migrate(
    check: Annotated[bool, typer.Option(
        "--check", help="Change nothing: exit 1 when a migration is pending, saying which.")
    ] = False,
    db: DbOption = DEFAULT_DB, as_json: JsonOption = False,
) -> None:
    """Create jobq's tables, or bring them to this jobq's schema version.

    Deploy pipelines run it before they roll workers started with --no-migrate. Safe to
    run from several processes at once: the schema is migrated once."""
    try:
        with open_queue(db, create=not check, migrate=not check) as q:
            installed, newest = q.schema_version()
    except SchemaOutdated as e:
        if as_json:
            print_json({"current": False, "installed": e.installed, "newest": e.newest,
                        "pending": list(range(e.installed + 1, e.newest + 1))})
            raise typer.Exit(1) from None
        fail(str(e).replace("run `jobq migrate` first", "`jobq migrate` applies it"))
    if as_json:
        print_json({"current": True, "installed": installed, "newest": newest, "pending": []})
    else:
        render.console().print(f"jobq schema version {installed}: current")


def _term(option: str, text: str | None) -> float | None | EllipsisType:
    """A retention option: a duration, or never/forever/none for no limit; ... when absent."""
    if text is None:
        return ...
    if text.strip().lower() in ("never", "forever", "none", "off"):
        return None
    try:
        return parse_duration(text)
    except ValueError as e:
        usage(f"{option}: {e} (or 'forever')")


def retention_json(r: Retention) -> dict[str, Any]:
    return {**r.terms(), "set": list(r.set)}


@friendly
def retention(
    succeeded: Annotated[Optional[str], typer.Option(
        metavar="DURATION", help="Keep succeeded jobs this long after they finished "
        "(7d, 12h; 'forever': never delete them).")] = None,
    cancelled: Annotated[Optional[str], typer.Option(
        metavar="DURATION", help="Keep cancelled jobs this long.")] = None,
    dead: Annotated[Optional[str], typer.Option(
        metavar="DURATION", help="Keep dead jobs this long.")] = None,
    db: DbOption = DEFAULT_DB, as_json: JsonOption = False,
) -> None:
    """Show how long finished jobs are kept, by status, or set it.

    Workers delete older ones (one worker, the maintenance leader, every minute, in small
    batches); a job another job still waits on is kept. Defaults: succeeded and
    cancelled 7d, dead 30d."""
    terms = {"succeeded": _term("--succeeded", succeeded),
             "cancelled": _term("--cancelled", cancelled), "dead": _term("--dead", dead)}
    setting = any(t is not ... for t in terms.values())
    with open_queue(db, create=setting) as q:
        r = _apply(q, terms) if setting else q.retention()
    if as_json:
        print_json(retention_json(r))
        return
    console = render.console()
    for status, term in r.terms().items():
        said = "forever" if term is None else duration(term)
        default = "" if status in r.set else "  (default)"
        console.print(f"{status:<10} {said}{default}")


def _apply(q: Queue, terms: dict[str, Any]) -> Retention:
    return q.set_retention(**{k: v for k, v in terms.items() if v is not ...})


@friendly
def health(db: DbOption = DEFAULT_DB, as_json: JsonOption = False) -> None:
    """Exit 0 when the database answers (within 2 s) and its jobq schema is current, 1
    otherwise: a probe for scripts and orchestrators. Also says which worker leads."""
    from jobq_core.observability.health import Health, outdated, readiness

    leader = None
    try:
        with open_queue(db, read_only=True, busy_timeout=2.0, migrate=False) as q:
            result = readiness(q)
            if result.ok:
                lead = q.leader()
                now = q.clock.now()
                leader = lead.worker if lead is not None and lead.expires_at > now else None
    except SchemaOutdated as e:
        result = outdated(e)
    except JobqError as e:
        result = Health(False, {"database": {"ok": False, "error": str(e)[:500]}})
    if as_json:
        print_json({**result.json(), "leader": leader})
    else:
        for name, check in result.checks.items():
            said = check.get("error") or ("ok" if check["ok"] else "failing")
            typer.echo(f"{name:<9} {said}", err=not check["ok"])
        if result.ok:
            typer.echo(f"leader    {leader or 'none (no worker leads now)'}")
    if not result.ok:
        raise typer.Exit(1)
