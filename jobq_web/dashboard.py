"""One dashboard's state (its database, guard, live feed and templates) and the responses
every handler answers with: an HTML page, JSON, the unreachable banner, not found. The
pages (``app``) and the actions (``actions``) both build on it; neither imports the other.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from . import pages
from .data import Changes, Database, Unreachable
from .html import json_bytes, templates
from .security import COOKIE, HEADERS, Guard


class Dashboard:
    """One dashboard: its database, its guard, its live feed and its templates."""

    def __init__(self, db: Database, guard: Guard):
        self.db = db
        self.guard = guard
        self.changes = Changes(db)
        self.env = templates()

    def html(self, request: Request, template: str, status: int = 200,
             **context: Any) -> Response:
        cookie = request.cookies.get(COOKIE)
        base = {
            "root": root(request), "db": self.db.name, "tabs": pages.TABS,
            "can_act": self.guard.logged_in(cookie) or False,
            "csrf": self.guard.csrf_for(cookie) or "", "token_set": self.guard.token is not None,
            "read_only": self.guard.read_only, "path": request.url.path,
            "done": request.query_params.get("done", ""),
            "failed": request.query_params.get("failed", ""),
        }
        body = self.env.get_template(template).render(**{**base, **context})
        return HTMLResponse(body, status_code=status, headers=HEADERS)

    def json(self, value: Any, status: int = 200) -> Response:
        return Response(json_bytes(value), status_code=status, media_type="application/json",
                        headers=HEADERS)

    def unreachable(self, request: Request, e: Unreachable, api: bool) -> Response:
        if api:
            return self.json({"error": "database unreachable", "detail": str(e)}, 503)
        return self.html(request, "down.html", 503, banner=str(e), title="unreachable")

    def not_found(self, request: Request, api: bool, why: str) -> Response:
        if api:
            return self.json({"error": why}, 404)
        return self.html(request, "down.html", 404, banner=why, title="not found")


def root(request: Request) -> str:
    """Where the dashboard is mounted (``/jobq``), or empty at the root."""
    return str(request.scope.get("root_path", "")).rstrip("/")


async def run(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in Starlette's thread pool: the queue's calls block."""
    from starlette.concurrency import run_in_threadpool
    return await run_in_threadpool(fn, *args)
