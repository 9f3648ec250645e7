"""Who may act, and the headers every response carries.

Rules (the web guide states them for users):

* Reading needs nothing. Acting (every ``POST`` but the login) needs the token: either
  ``Authorization: Bearer TOKEN`` (scripts), or the session cookie the login form sets
  together with the form's CSRF field (browsers). No token configured, or ``read_only``:
  nothing acts (403), and the pages show no action.
* The session cookie is ``HttpOnly``, ``SameSite=Strict``, scoped to the dashboard's path,
  and holds a random session id signed with a secret made at start-up (a restart logs
  everyone out). The CSRF field is an HMAC of the session id under the same secret: a page
  of another site can neither read it nor make it.
* Tokens and signatures are compared in constant time (``hmac.compare_digest``).
* Every response forbids inline script and framing (``HEADERS``): the pages load their
  script and style from the dashboard itself, so a string from the database that got
  through as markup still could not run.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

COOKIE = "jobq_session"

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
       "object-src 'none'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True)
class Verdict:
    """Whether a request may act; ``status`` and ``reason`` when it may not."""

    ok: bool
    status: int = 200
    reason: str = ""


class Guard:
    def __init__(self, token: str | None, read_only: bool):
        if token is not None and not token.strip():
            raise ValueError("the token is empty: give a token, or none for a read-only "
                             "dashboard")
        self.token = token
        self.read_only = read_only or token is None
        self._secret = secrets.token_bytes(32)

    # -- sessions -------------------------------------------------------------------------

    def new_session(self) -> str:
        """A cookie value: a random id and its signature."""
        sid = secrets.token_urlsafe(24)
        return f"{sid}.{self._sign('session', sid)}"

    def session_id(self, cookie: str | None) -> str | None:
        """The session id in a valid cookie, else None."""
        if not cookie or "." not in cookie:
            return None
        sid, _, sig = cookie.rpartition(".")
        return sid if hmac.compare_digest(sig, self._sign("session", sid)) else None

    def csrf_for(self, cookie: str | None) -> str | None:
        """The CSRF field a page's forms carry for this session (None: not logged in)."""
        sid = self.session_id(cookie)
        return None if sid is None else self._sign("csrf", sid)

    def token_ok(self, given: str) -> bool:
        return self.token is not None and hmac.compare_digest(
            given.encode("utf-8", "surrogatepass"), self.token.encode("utf-8", "surrogatepass"))

    # -- the rule -------------------------------------------------------------------------

    def may_act(self, authorization: str | None, cookie: str | None,
                csrf: str | None) -> Verdict:
        if self.read_only:
            return Verdict(False, 403, "this dashboard is read-only"
                           + ("" if self.token else " (start it with a token to act)"))
        if authorization:
            scheme, _, given = authorization.partition(" ")
            if scheme.lower() == "bearer" and self.token_ok(given.strip()):
                return Verdict(True)
            return Verdict(False, 401, "wrong token")
        expected = self.csrf_for(cookie)
        if expected is None:
            return Verdict(False, 401, "log in first (or send Authorization: Bearer TOKEN)")
        if not csrf or not hmac.compare_digest(csrf, expected):
            return Verdict(False, 403, "the form's CSRF field is missing or wrong: reload "
                           "the page and try again")
        return Verdict(True)

    def logged_in(self, cookie: str | None) -> bool:
        return not self.read_only and self.session_id(cookie) is not None

    def _sign(self, purpose: str, value: str) -> str:
        return hmac.new(self._secret, f"{purpose}:{value}".encode(), hashlib.sha256).hexdigest()
