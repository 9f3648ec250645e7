"""The dashboard's actions, each a ``POST`` (``security.Guard.may_act`` decides who may):
retry, take back and cancel a job, pause and resume a queue, set and clear its limits,
retry the dead jobs of a group or a filter, forget lost workers; and the login form.

A browser's form gets a redirect back to the page it came from (``next``, a path of this
dashboard only), saying what was done (``?done=``) or what failed (``?failed=``); a script
(``Authorization: Bearer``, or ``Accept: application/json``) gets JSON. Each form is
confirmed in the page before it is sent (``static/app.js``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from jobq_core import FORGET_AFTER, InvalidState, JobNotFound, JobqError, Queue, Rate
from jobq_core.common.error_groups import group_dead
from jobq_core.presentation.views.filters import group_filter, parse_filter
from jobq_core.presentation.views.reading import dead_group_ids

from .dashboard import Dashboard, root, run
from .data import Unreachable
from .security import COOKIE, HEADERS

MAX_FORM = 64 * 1024  # bytes of a form: the largest holds a filter and a few numbers


class Refused(Exception):
    """The action cannot be done as asked; the message says why (status 400/409)."""

    def __init__(self, message: str, status: int = 409):
        super().__init__(message)
        self.status = status


async def form(request: Request) -> dict[str, str]:
    """A url-encoded form's fields (the last of each name)."""
    body = await request.body()
    if len(body) > MAX_FORM:
        raise Refused("the form is too large", 413)
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True)
    except (UnicodeDecodeError, ValueError):
        raise Refused("the form is not readable", 400) from None
    return {k: v[-1] for k, v in fields.items()}


def routes(d: Dashboard) -> list[Route]:
    def post(path: str, act: Callable[[Request, dict[str, str], Queue], dict[str, Any]]
             ) -> Route:
        async def endpoint(request: Request) -> Response:
            return await perform(d, request, act)
        return Route(path, endpoint, methods=["POST"])

    async def login(request: Request) -> Response:
        fields = await form(request)
        if d.guard.read_only or not d.guard.token_ok(fields.get("token", "")):
            return d.html(request, "login.html", 401, title="log in", tab="",
                          failed="wrong token" if not d.guard.read_only else
                          "this dashboard is read-only", now=0, every=0, query="")
        r = RedirectResponse(local(request, fields.get("next", "")) or f"{root(request)}/",
                             303, headers=HEADERS)
        r.set_cookie(COOKIE, d.guard.new_session(), httponly=True, samesite="strict",
                     secure=request.url.scheme == "https", path=f"{root(request)}/")
        return r

    async def login_form(request: Request) -> Response:
        return d.html(request, "login.html", title="log in", tab="", now=0, every=0,
                      query="", next=request.query_params.get("next", ""))

    async def logout(request: Request) -> Response:
        r = RedirectResponse(f"{root(request)}/", 303, headers=HEADERS)
        r.delete_cookie(COOKIE, path=f"{root(request)}/")
        return r

    return [
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        post("/jobs/{job_id}/retry", retry),
        post("/jobs/{job_id}/cancel", cancel),
        post("/queues/{name:path}/pause", pause),
        post("/queues/{name:path}/resume", resume),
        post("/queues/{name:path}/limits", set_limits),
        post("/queues/{name:path}/limits/clear", clear_limits),
        post("/dead/retry", retry_dead),
        post("/workers/forget-lost", forget_lost),
    ]


async def perform(d: Dashboard, request: Request,
                  act: Callable[[Request, dict[str, str], Queue], dict[str, Any]]) -> Response:
    wants_json = bool(request.headers.get("authorization")) or "application/json" in (
        request.headers.get("accept", ""))
    try:
        fields = await form(request)
    except Refused as e:
        return d.json({"error": str(e)}, e.status)
    verdict = d.guard.may_act(request.headers.get("authorization"),
                              request.cookies.get(COOKIE), fields.get("csrf"))
    if not verdict.ok:
        return d.json({"error": verdict.reason}, verdict.status)
    try:
        said = await run(d.db.acting, lambda q: act(request, fields, q))
    except Refused as e:
        return answer(request, fields, wants_json, d, {"error": str(e)}, e.status)
    except (InvalidState, JobNotFound) as e:
        return answer(request, fields, wants_json, d, {"error": str(e)}, 409)
    except Unreachable as e:
        return answer(request, fields, wants_json, d, {"error": f"database unreachable: {e}"},
                      503)
    except (JobqError, ValueError) as e:
        return answer(request, fields, wants_json, d, {"error": d.db.plain(e)}, 400)
    return answer(request, fields, wants_json, d, said, 200)


def answer(request: Request, fields: dict[str, str], wants_json: bool, d: Dashboard,
           said: dict[str, Any], status: int) -> Response:
    if wants_json:
        return d.json(said, status)
    back = local(request, fields.get("next", "")) or str(request.url.path)
    word = "failed" if "error" in said else "done"
    text = said.get("error") or said.get("said", "done")
    sep = "&" if "?" in back else "?"
    return RedirectResponse(f"{back}{sep}{urlencode({word: text})}", 303, headers=HEADERS)


def local(request: Request, path: str) -> str:
    """``path`` if it is a page of this dashboard (never another site: ``//evil``)."""
    base = root(request)
    if not path.startswith(f"{base}/") or path.startswith("//") or "\\" in path:
        return ""
    return path


# -- the actions --------------------------------------------------------------------------

def _job_id(request: Request) -> int:
    try:
        return int(request.path_params["job_id"])
    except ValueError:
        raise Refused("a job id is a number", 400) from None


def retry(request: Request, fields: dict[str, str], q: Queue) -> dict[str, Any]:
    """A dead or cancelled job back to pending; ``force=1`` takes a running one back."""
    job_id = _job_id(request)
    q.retry(job_id, force=fields.get("force") == "1")
    return {"id": job_id, "status": "pending", "said": f"job {job_id} retried"}


def cancel(request: Request, fields: dict[str, str], q: Queue) -> dict[str, Any]:
    """Cancel a job; ``terminate=1`` also stops a running one's run (``Queue.cancel``)."""
    job_id = _job_id(request)
    terminate = fields.get("terminate") == "1"
    status = q.cancel(job_id, terminate=terminate)
    said = (f"job {job_id} cancelled" + (" and its run stopped" if terminate else "")
            if str(status) == "cancelled" else f"job {job_id} asked to stop")
    return {"id": job_id, "status": str(status), "said": said}


def pause(request: Request, fields: dict[str, str], q: Queue) -> dict[str, Any]:
    name = request.path_params["name"]
    q.pause(name)
    return {"queue": name, "paused": True, "said": f"queue {name} paused"}


def resume(request: Request, fields: dict[str, str], q: Queue) -> dict[str, Any]:
    name = request.path_params["name"]
    q.resume(name)
    return {"queue": name, "paused": False, "said": f"queue {name} resumed"}


def _count(fields: dict[str, str], name: str) -> int | None:
    raw = fields.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1 or int(raw) > 2**63 - 1:
        raise Refused(f"{name.replace('_', ' ')} must be a whole number of at least 1, "
                      f"got {raw[:40]!r}", 400)
    return int(raw)


def set_limits(request: Request, fields: dict[str, str], q: Queue) -> dict[str, Any]:
    """As ``jobq limit``: the limits given are set, the others kept."""
    name = request.path_params["name"]
    concurrency = _count(fields, "concurrency")
    key_concurrency = _count(fields, "key_concurrency")
    rate_text = fields.get("rate", "").strip()
    try:
        rate = Rate.parse(rate_text) if rate_text else None
    except ValueError as e:
        raise Refused(str(e), 400) from None
    ordered = {"1": True, "0": False}.get(fields.get("ordered", ""))
    current = q.queues().get(name)
    if current is not None:
        concurrency = concurrency if concurrency is not None else current.concurrency
        rate = rate or current.rate
        key_concurrency = (key_concurrency if key_concurrency is not None
                           else current.key_concurrency)
        ordered = current.ordered if ordered is None else ordered
    q.set_limit(name, concurrency=concurrency, rate=rate, key_concurrency=key_concurrency,
                ordered=bool(ordered))
    return {"queue": name, "concurrency": concurrency,
            "rate": None if rate is None else str(rate), "key_concurrency": key_concurrency,
            "ordered": bool(ordered), "said": f"queue {name}: limits set"}


def clear_limits(request: Request, fields: dict[str, str], q: Queue) -> dict[str, Any]:
    name = request.path_params["name"]
    q.set_limit(name)
    return {"queue": name, "concurrency": None, "rate": None, "key_concurrency": None,
            "ordered": False, "said": f"queue {name}: no limits"}


def retry_dead(request: Request, fields: dict[str, str], q: Queue) -> dict[str, Any]:
    """The dead jobs of one error group (``of``: a dead job of the group, as its row's
    form names it; exactly that group's jobs, as the monitor's ``R`` on a group), or those
    the filter ``q`` selects; its free words narrow a group too."""
    try:
        filt = parse_filter(fields.get("q", ""))
    except ValueError as e:
        raise Refused(str(e), 400) from None
    if fields.get("of"):
        if not fields["of"].isdigit():
            raise Refused("of: a job id is a number", 400)
        job = q.get(int(fields["of"]))
        if job is None or str(job.status) != "dead":
            raise Refused(f"job {fields['of']} is no longer dead: reload the page")
        group = group_dead([(job.kind, job.error or "", 1, job.finished_at or 0.0, job.id,
                             [job.queue])], 1)[0]
        n = 0
        for job_id in dead_group_ids(q, group_filter(group, filt.words)):
            try:
                q.retry(job_id)
                n += 1
            except (InvalidState, JobNotFound):
                pass  # retried by someone else meanwhile
        return {"retried": n, "said": f"{n} dead job{'s' * (n != 1)} retried"}
    n = q.retry_dead(queue=filt.queue, kind=filt.kind, error_contains=filt.error,
                     prefix=filt.prefix, search=filt.words)
    return {"retried": n, "said": f"{n} dead job{'s' * (n != 1)} retried"}


def forget_lost(request: Request, fields: dict[str, str], q: Queue) -> dict[str, Any]:
    """As ``jobq workers --forget-lost``: workers silent for ``FORGET_AFTER`` or lost."""
    from jobq_core import DEFAULT_BEAT, WorkerState
    now = q.clock.now()
    lost = [w for w in q.workers() if w.state(now, DEFAULT_BEAT) == WorkerState.LOST]
    n = q.forget_workers(lost)
    return {"forgotten": n, "said": f"{n} lost worker{'s' * (n != 1)} forgotten",
            "after": FORGET_AFTER}
