"""What jobq reads of a server database's URL, whatever the store: its own options in the
query (``poll_only=true``), taken out before the driver sees the URL, its hosts checked so
that a typo is one clear line before any connection, and the URL as shown in messages
(never with the password)."""
from __future__ import annotations

from collections.abc import Collection
from urllib.parse import unquote

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def jobq_options(query: str, names: Collection[str]) -> tuple[list[str], dict[str, bool]]:
    """(the query's other parameters, exactly as written; jobq's options ``names`` found
    in it, each true or false). ``ValueError`` for an option that is neither."""
    kept, ours = [], {}
    for param in query.split("&") if query else []:
        key, _, value = (unquote(x) for x in param.partition("="))
        if key in names:
            if value.lower() not in _TRUE | _FALSE:
                raise ValueError(f"the URL option {key} takes true or false, got {value!r}")
            ours[key] = value.lower() in _TRUE
        else:
            kept.append(param)
    return kept, ours


def check_hosts(hosts: str, url: str) -> None:
    """Each ``host[:port]`` of a URL's comma-separated host list: ``[v6]`` closed, the
    port a number."""
    for host in hosts.split(",") if hosts else []:
        if host.startswith("["):
            address, close, port = host[1:].partition("]")
            if not close or (port and not port.startswith(":")):
                raise ValueError(f"bad host {host!r} in the database URL {redact(url)!r}")
            port = port[1:]
        else:
            port = host.rpartition(":")[2] if ":" in host else ""
        if port and not (port.isascii() and port.isdigit() and int(port) <= 65535):
            raise ValueError(f"bad port {port!r} in the database URL {redact(url)!r}")


def redact(url: str) -> str:
    """``url`` without its user, password and query: safe in any message."""
    scheme, _, rest = url.partition("://")
    netloc, slash, path = rest.partition("?")[0].partition("/")
    return f"{scheme}://{netloc.rpartition('@')[2]}{slash}{path}"
