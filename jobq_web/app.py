"""The dashboard as an ASGI application (Starlette): its routes, the live feed, and the
headers and rules every response follows (``security``).

A page is one URL (``/running``, ``/dead?q=kind:send``, ``/jobs/42``) with a JSON twin
under ``/api/`` (``/api/running``, ``/api/jobs/42``). Pages are whole HTML documents: a
page's table (``#live``) is fetched again by htmx when the live feed (``/events``,
server-sent events) says the database changed, or once a second on pages whose cells
count down. Reads run in Starlette's thread pool (the queue's calls block).
"""
from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from jobq_core import Queue
from jobq_core.presentation.views.filters import job_ref

from . import actions, pages
from .data import Changes, Database, Unreachable
from .html import json_bytes, templates
from .security import COOKIE, HEADERS, Guard

STATIC = os.path.join(os.path.dirname(__file__), "static")
Handler = Callable[[Request], Awaitable[Response]]


class Dashboard:
    """One dashboard: its database, its guard, its live feed and its templates."""

    def __init__(self, db: Database, guard: Guard):
        self.db = db
        self.guard = guard
        self.changes = Changes(db)
        self.env = templates()

    # -- responses ------------------------------------------------------------------------

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

    # -- pages ----------------------------------------------------------------------------

    async def view(self, request: Request) -> Response:
        path = request.url.path.rstrip("/").rsplit("/", 1)[-1] or "running"
        api = request.scope.get("jobq_api", False)
        text = request.query_params.get("q", "")
        ref = job_ref(text)
        if ref is not None and not api:
            return RedirectResponse(f"{root(request)}/jobs/{ref}", 303)
        jobs = request.query_params.get("jobs") == "1"
        name = pages.VIEW_PAGES[path]

        def read(q: Queue) -> tuple[pages.ViewPage, Any, Any]:
            page = pages.view_page(q, name, text, jobs=jobs)
            return page, (pages.view_json(q, page) if api else None), None

        try:
            page, data, _ = await run(self.db.reading, read)
        except Unreachable as e:
            return self.unreachable(request, e, api)
        if api:
            return self.json(data if not page.error else {"error": page.error})
        return self.html(
            request, "view.html", page=page, title=page.view.title, tab=path, text=text,
            now=page.snap.read_at, counts=pages.header(page.snap.stats),
            every=pages.LIVE_EVERY.get(path, 0), fragment=request.query_params.get("live"),
            jobs=jobs, query=urlencode({k: v for k, v in request.query_params.items()
                                        if k in ("q", "jobs")}))

    async def keys(self, request: Request) -> Response:
        api = request.scope.get("jobq_api", False)
        try:
            rows, s = await run(self.db.reading, pages.keys_page)
        except Unreachable as e:
            return self.unreachable(request, e, api)
        if api:
            return self.json(pages.keys_json(rows))
        return self.html(request, "keys.html", rows=rows, title="Keys", tab="keys",
                         counts=pages.header(s), fragment=request.query_params.get("live"),
                         every=0, now=s.now, query="")

    async def job(self, request: Request) -> Response:
        api = request.scope.get("jobq_api", False)
        try:
            job_id = int(request.path_params["job_id"])
        except ValueError:
            return self.not_found(request, api, "a job id is a number")
        try:
            page = await run(self.db.reading, lambda q: pages.job_page(q, job_id))
        except Unreachable as e:
            return self.unreachable(request, e, api)
        if page is None:
            return self.not_found(request, api, f"job {job_id} does not exist (pruned?)")
        if api:
            return self.json(pages.job_page_json(page))
        return self.html(request, "job.html", p=page, title=f"job {job_id}", tab="",
                         state=pages.job_state(page), can_retry=pages.can_retry(page.job),
                         can_cancel=pages.can_cancel(page.job),
                         fragment=request.query_params.get("live"), every=0, now=page.now,
                         query="")

    async def stats(self, request: Request) -> Response:
        from jobq_cli.render import stats_json
        try:
            s = await run(self.db.reading, pages.stats)
        except Unreachable as e:
            return self.unreachable(request, e, True)
        return self.json(stats_json(s))

    def not_found(self, request: Request, api: bool, why: str) -> Response:
        if api:
            return self.json({"error": why}, 404)
        return self.html(request, "down.html", 404, banner=why, title="not found")

    async def events(self, request: Request) -> Response:
        """Server-sent events: ``change`` when the database may have changed, ``down`` /
        ``up`` when it stops or starts answering, a comment every 15 s to keep proxies
        from closing the stream."""
        changes = self.changes

        async def stream() -> AsyncIterator[bytes]:
            seen = changes.listen()
            down = changes.error
            quiet = 0.0
            yield b"retry: 2000\n\n"
            while not await request.is_disconnected():
                await asyncio.sleep(0.2)
                quiet += 0.2
                now = changes.listen()
                if changes.error != down:
                    down = changes.error
                    yield (b"event: down\ndata: " + json_bytes(down) + b"\n\n" if down
                           else b"event: up\ndata: {}\n\n")
                if now != seen:
                    seen, quiet = now, 0.0
                    yield b"event: change\ndata: " + str(now).encode() + b"\n\n"
                elif quiet >= 15:
                    quiet = 0.0
                    yield b": idle\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={**HEADERS, "X-Accel-Buffering": "no"})


def root(request: Request) -> str:
    """Where the dashboard is mounted (``/jobq``), or empty at the root."""
    return str(request.scope.get("root_path", "")).rstrip("/")


async def run(fn: Callable[..., Any], *args: Any) -> Any:
    from starlette.concurrency import run_in_threadpool
    return await run_in_threadpool(fn, *args)


def api(handler: Handler) -> Handler:
    """The JSON twin of a page handler."""
    async def twin(request: Request) -> Response:
        request.scope["jobq_api"] = True
        return await handler(request)
    return twin


def create_app(db_or_queue: str | os.PathLike[str] | Queue, *, token: str | None = None,
               read_only: bool = False) -> Starlette:
    """The dashboard as an ASGI app, for ``jobq web`` or to mount in an application
    (``app.mount("/jobq", create_app(queue))``). ``db_or_queue``: a database (path or
    URL: read through a read-only connection, acted on through a short-lived one), or a
    ``Queue`` the application already has. ``token``: what every action needs (a bearer
    token, or the login form's); None makes the dashboard read-only, as ``read_only``
    does."""
    d = Dashboard(Database(db_or_queue), Guard(token, read_only))
    routes: list[Route | Mount] = [
        Route("/", lambda r: RedirectResponse(f"{root(r)}/running", 303)),
        Route("/events", d.events),
        Route("/keys", d.keys),
        Route("/api/keys", api(d.keys)),
        Route("/api/stats", api(d.stats)),
        Route("/jobs/{job_id}", d.job),
        Route("/api/jobs/{job_id}", api(d.job)),
        *actions.routes(d),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    for path in pages.VIEW_PAGES:
        routes += [Route(f"/{path}", d.view), Route(f"/api/{path}", api(d.view))]
    app = Starlette(routes=routes)
    app.state.dashboard = d
    return app
