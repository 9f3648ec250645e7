"""``jobq web``: the web dashboard (``jobq_web``) on uvicorn.

Refuses, in one line and before listening, what would expose actions to a network: a
non-loopback ``--host`` without ``--token`` (or ``$JOBQ_WEB_TOKEN``) unless
``--read-only``."""
from __future__ import annotations

import ipaddress
import socket
from typing import Annotated, Optional

import typer

from jobq_core.presentation.display import masked_url

from .common import DEFAULT_DB, DbOption, fail, friendly, open_queue, usage


def loopback(host: str) -> bool:
    """Whether ``host`` only listens on this machine (``127.0.0.1``, ``::1``,
    ``localhost``); an unknown name counts as public."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@friendly
def web(
    db: DbOption = DEFAULT_DB,
    host: Annotated[str, typer.Option(
        metavar="HOST", help="Address to listen on (a non-loopback one needs --token or "
                             "--read-only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, metavar="PORT",
                                      help="Port to listen on.")] = 8080,
    token: Annotated[Optional[str], typer.Option(
        envvar="JOBQ_WEB_TOKEN", metavar="TOKEN", show_envvar=True,
        help="What every action (retry, cancel, pause, limits) needs: a bearer token, or "
             "typed into the login form (default: $JOBQ_WEB_TOKEN). Without one the "
             "dashboard is read-only.")] = None,
    read_only: Annotated[bool, typer.Option(
        "--read-only", help="Show everything, act on nothing (hides every action).")] = False,
) -> None:
    """Serve the web dashboard: the monitor's views, a page per job, live updates,
    and actions for whoever has the token."""
    if token is not None and not token.strip():
        usage("--token is empty: give a token, or none for a read-only dashboard")
    if not loopback(host) and token is None and not read_only:
        usage(f"--host {host} is reachable from other machines: give --token TOKEN (or "
              "$JOBQ_WEB_TOKEN), or --read-only")
    try:
        import uvicorn

        from jobq_web import create_app
    except ImportError:
        fail("jobq web needs the web extra: pip install 'jobq[web]'")
    with open_queue(db, read_only=True):  # a missing or foreign database: one line, exit 1
        pass
    try:
        with socket.create_server((host.strip("[]"), port),
                                  family=socket.AF_INET6 if ":" in host else socket.AF_INET):
            pass  # the port is free: uvicorn's own error would be a log line and exit 1
    except OSError as e:
        fail(f"cannot listen on {host}:{port} ({e.strerror or e})")
    mode = "read-only" if read_only or token is None else "actions need the token"
    typer.echo(f"jobq web: {masked_url(db)} on http://{host}:{port}/ ({mode})", err=True)
    uvicorn.run(create_app(db, token=token, read_only=read_only), host=host.strip("[]"),
                port=port, log_level="warning", access_log=False)
