"""Task: what ``@registry.task(...)`` returns. Still the function (calling it calls the
handler, in this process, with no job), plus ``enqueue`` and ``enqueue_many`` (and their
coroutines ``aenqueue``, ``aenqueue_many``) with the task's kind, queue, priority and
attempts filled in.

The worker reads the same record: ``fn`` is the handler as written, ``load`` rebuilds a
typed payload (``payloads.py``) before the call, ``wants_context`` says whether it also
takes a ``JobContext``.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .backoff import Backoff
from .api.payloads import PayloadType

if TYPE_CHECKING:
    from .api.async_queue import AsyncQueue
    from .queue import Queue

Handler = Callable[..., Any]
_UNSET: Any = object()


class Task:
    """A registered handler and its per-kind settings (None: the worker's default, or
    for ``queue``/``priority``/``max_attempts`` at enqueue, ``Queue.enqueue``'s).

    ``max_attempts`` does two things: a job enqueued through the task gets it as its own
    limit, and a worker caps every job of the kind at it (the lower limit wins), however
    the job was enqueued.
    """

    def __init__(self, kind: str, fn: Handler, max_attempts: int | None, lease: float | None,
                 timeout: float | None, backoff: Backoff | None, is_async: bool,
                 wants_context: bool, *, queue: str | None = None, priority: int = 0,
                 payload: PayloadType | None = None, registry: Any = None,
                 retry_on: tuple[type[BaseException], ...] | None = None,
                 no_retry_on: tuple[type[BaseException], ...] | None = None):
        self.kind = kind
        self.fn = fn
        self.max_attempts = max_attempts
        self.lease = lease
        self.timeout = timeout
        self.backoff = backoff
        self.is_async = is_async
        self.wants_context = wants_context
        self.queue = queue
        self.priority = priority
        self.payload_type = payload
        # The worker's hook, None for an untyped payload (the common case: nothing to call).
        self.load: Callable[[Any], Any] | None = None if payload is None else payload.load
        # Which exceptions retry (at most one of the two is set; None: every one does).
        self.retry_on = retry_on
        self.no_retry_on = no_retry_on
        self._registry = registry
        # Its registry's hooks around runs (``Registry.hooks``); None: none, and a run
        # costs one test of it.
        self.hooks: Any = None
        functools.update_wrapper(self, fn, updated=())

    def not_retried(self, e: BaseException) -> str | None:
        """Why the handler's exception ``e`` ends its job dead at once under the task's
        ``retry_on`` / ``no_retry_on`` (``ValueError is not in retry_on``); None when it
        is retried as usual."""
        name = type(e).__name__
        if self.retry_on is not None and not isinstance(e, self.retry_on):
            return f"{name} is not in retry_on"
        if self.no_retry_on is not None and isinstance(e, self.no_retry_on):
            return f"{name} is in no_retry_on"
        return None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def enqueue(self, q: Queue | Any = _UNSET, payload: Any = _UNSET, **options: Any) -> int:
        """Add a job of this task's kind to ``q`` and return its id: ``Queue.enqueue``
        with the task's ``queue``, ``priority`` and ``max_attempts`` as defaults (given
        ``options`` win). ``q`` may be left out when the registry was made with
        ``Registry(queue=...)``: ``task.enqueue(payload)``. A typed payload is checked
        (and converted) here, before anything is written."""
        queue, payload = self._queue_and(q, payload, "payload")
        return queue.enqueue(self.kind, self.dump(None if payload is _UNSET else payload),
                             **self._options(options))

    def enqueue_many(self, q: Queue | Any = _UNSET, payloads: Any = _UNSET,
                     **options: Any) -> list[int]:
        """One job of this kind per payload, in one transaction (all or none); the ids in
        order. ``options`` (``Queue.enqueue``'s, ``conn`` included) apply to every job."""
        queue, payloads = self._queue_and(q, payloads, "payloads")
        if payloads is _UNSET:
            raise TypeError(f"{self.kind}.enqueue_many() needs the payloads")
        conn = options.pop("conn", None)
        common = self._options(options)
        items = [{"kind": self.kind, "payload": self.dump(p), **common} for p in payloads]
        return queue.enqueue_many(items, conn=conn)

    async def aenqueue(self, payload: Any = None, *, q: AsyncQueue | None = None,
                       **options: Any) -> int:
        """``enqueue`` as a coroutine (``AsyncQueue.enqueue``): into ``q``, an
        ``AsyncQueue``, or else the registry's queue (``Registry(queue=...)``). ``conn``
        may be the application's asyncio connection (see ``AsyncQueue.enqueue``)."""
        return await self._async_queue(q).enqueue(self.kind, self.dump(payload),
                                                  **self._options(options))

    async def aenqueue_many(self, payloads: Iterable[Any], *, q: AsyncQueue | None = None,
                            **options: Any) -> list[int]:
        """``enqueue_many`` as a coroutine (``AsyncQueue.enqueue_many``), into ``q`` or
        the registry's queue as ``aenqueue``."""
        conn = options.pop("conn", None)
        common = self._options(options)
        items = [{"kind": self.kind, "payload": self.dump(p), **common} for p in payloads]
        return await self._async_queue(q).enqueue_many(items, conn=conn)

    def _async_queue(self, q: AsyncQueue | None) -> AsyncQueue:
        from .api.async_queue import AsyncQueue

        if q is not None:
            if not isinstance(q, AsyncQueue):
                raise TypeError(f"{self.kind}.aenqueue: q= must be an AsyncQueue, got "
                                f"{type(q).__name__}")
            return q
        default = None if self._registry is None else self._registry.default_queue
        if default is None:
            raise TypeError(f"{self.kind}.aenqueue needs q= an AsyncQueue (or make the "
                            "registry with Registry(queue=...))")
        return AsyncQueue(default)  # a view of the registry's Queue: it never closes it

    def dump(self, payload: Any) -> Any:
        """``payload`` checked against the handler's payload type and made JSON-ready;
        unchanged for an untyped handler. Raises ``TypeError``/``ValueError``."""
        if self.payload_type is None:
            return payload
        return self.payload_type.dump(payload)

    def _queue_and(self, q: Any, rest: Any, name: str) -> tuple[Queue, Any]:
        from .queue import Queue

        if isinstance(q, Queue):
            return q, rest
        default = None if self._registry is None else self._registry.default_queue
        if default is None:
            raise TypeError(f"{self.kind}.enqueue needs a Queue first (or make the registry "
                            f"with Registry(queue=...)), got {type(q).__name__}")
        if q is _UNSET:
            return default, rest
        if rest is not _UNSET:
            raise TypeError(f"{self.kind}: give the {name} once (the registry's queue is used "
                            f"when no Queue comes first)")
        return default, q

    def _options(self, options: dict[str, Any]) -> dict[str, Any]:
        if self.queue is not None:
            options.setdefault("queue", self.queue)
        if self.priority:
            options.setdefault("priority", self.priority)
        if self.max_attempts is not None:
            options.setdefault("max_attempts", self.max_attempts)
        return options

    def __repr__(self) -> str:
        return f"Task({self.kind!r}, {getattr(self.fn, '__qualname__', self.fn)!r})"


def open_default(queue: Any) -> Any:
    """``Registry(queue=...)``'s value: a ``Queue`` as it is, a path or URL opened as one."""
    from .queue import Queue

    if queue is None or isinstance(queue, Queue):
        return queue
    if isinstance(queue, (str, os.PathLike)):
        return Queue(queue)
    raise TypeError(f"queue must be a jobq Queue or a database path or URL, got {queue!r:.80}")

