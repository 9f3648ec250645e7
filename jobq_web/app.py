"""The dashboard as an ASGI application (Starlette): its routes, the pages' handlers and
the live feed; the responses and the headers every one follows are ``dashboard``'s and
``security``'s, the actions ``actions``'.

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
from functools import partial
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from jobq_core import Queue
from jobq_core.presentation.views.filters import job_ref

from . import actions, pages
from .dashboard import Dashboard, root, run
from .data import Database, Unreachable
from .html import json_bytes
from .security import HEADERS, Guard

STATIC = os.path.join(os.path.dirname(__file__), "static")
Handler = Callable[[Request], Awaitable[Response]]


async def view(d: Dashboard, request: Request) -> Response:
    path = request.url.path.rstrip("/").rsplit("/", 1)[-1] or "running"
    api = request.scope.get("jobq_api", False)
    text = request.query_params.get("q", "")
    ref = job_ref(text)
    if ref is not None and not api:
        return RedirectResponse(f"{root(request)}/jobs/{ref}", 303)
    jobs = request.query_params.get("jobs") == "1"
    name = pages.VIEW_PAGES[path]

    def read(q: Queue) -> tuple[pages.ViewPage, Any, Any]:
        page = pages.view_page(q, name, text, jobs=jobs, payloads=api)
        return page, (pages.view_json(page) if api else None), None

    try:
        page, data, _ = await run(d.db.reading, read)
    except Unreachable as e:
        return d.unreachable(request, e, api)
    if api:
        return d.json(data if not page.error else {"error": page.error})
    return d.html(
        request, "view.html", page=page, title=page.view.title, tab=path, text=text,
        now=page.snap.read_at, counts=pages.header(page.snap.stats),
        every=pages.LIVE_EVERY.get(path, 0), fragment=request.query_params.get("live"),
        jobs=jobs, query=urlencode({k: v for k, v in request.query_params.items()
                                    if k in ("q", "jobs")}))


async def keys(d: Dashboard, request: Request) -> Response:
    api = request.scope.get("jobq_api", False)
    try:
        rows, s = await run(d.db.reading, pages.keys_page)
    except Unreachable as e:
        return d.unreachable(request, e, api)
    if api:
        return d.json(pages.keys_json(rows))
    return d.html(request, "keys.html", rows=rows, title="Keys", tab="keys",
                  counts=pages.header(s), fragment=request.query_params.get("live"),
                  every=0, now=s.now, query="")


async def job(d: Dashboard, request: Request) -> Response:
    api = request.scope.get("jobq_api", False)
    try:
        job_id = int(request.path_params["job_id"])
    except ValueError:
        return d.not_found(request, api, "a job id is a number")
    try:
        page = await run(d.db.reading, lambda q: pages.job_page(q, job_id))
    except Unreachable as e:
        return d.unreachable(request, e, api)
    if page is None:
        return d.not_found(request, api, f"job {job_id} does not exist (pruned?)")
    if api:
        return d.json(pages.job_page_json(page))
    return d.html(request, "job.html", p=page, title=f"job {job_id}", tab="",
                  state=pages.job_state(page), can_retry=pages.can_retry(page.job),
                  can_cancel=pages.can_cancel(page.job),
                  fragment=request.query_params.get("live"), every=0, now=page.now,
                  query="")


async def stats(d: Dashboard, request: Request) -> Response:
    from jobq_cli.render import stats_json
    try:
        s = await run(d.db.reading, pages.stats)
    except Unreachable as e:
        return d.unreachable(request, e, True)
    return d.json(stats_json(s))


async def events(d: Dashboard, request: Request) -> Response:
    """Server-sent events: ``change`` when the database may have changed, ``down`` /
    ``up`` when it stops or starts answering, a comment every 15 s to keep proxies
    from closing the stream."""
    changes = d.changes

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
        Route("/events", partial(events, d)),
        Route("/keys", partial(keys, d)),
        Route("/api/keys", api(partial(keys, d))),
        Route("/api/stats", api(partial(stats, d))),
        Route("/jobs/{job_id}", partial(job, d)),
        Route("/api/jobs/{job_id}", api(partial(job, d))),
        *actions.routes(d),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    for path in pages.VIEW_PAGES:
        routes += [Route(f"/{path}", partial(view, d)),
                   Route(f"/api/{path}", api(partial(view, d)))]
    app = Starlette(routes=routes)
    app.state.dashboard = d
    return app
