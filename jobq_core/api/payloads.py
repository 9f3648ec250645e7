"""Typed payloads: a task whose handler annotates its payload with a dataclass, a
``TypedDict`` or a pydantic model has it checked at enqueue and receives it typed.

A ``PayloadType`` does two things, one on each side of the database:

* ``dump(value)`` at enqueue: an instance of the type, or a dict that makes one, checked
  and turned into JSON-ready data; anything else raises ``TypeError``/``ValueError``
  before a job is written (a typo fails at once, not after 20 retries);
* ``load(data)`` in the worker: the stored JSON back to the type, for the handler.

The checks are shallow on purpose: required and unknown keys, and ``isinstance`` against
field annotations that are plain classes (``int``, ``str``, ``list``, another dataclass
...). ``list[int]``, unions and the like are not looked into; pydantic checks everything
its model declares. pydantic is imported only when a handler's annotation is a class
whose module is pydantic's, so the extra costs nothing when absent.
"""
from __future__ import annotations

import dataclasses
import inspect
import sys
import typing
from collections.abc import Callable
from typing import Any

@dataclasses.dataclass(frozen=True, slots=True)
class PayloadType:
    """How one handler's annotated payload type is checked, stored and rebuilt."""

    type: type
    dump: Callable[[Any], Any]
    load: Callable[[Any], Any]


def payload_type(fn: Callable[..., Any]) -> PayloadType | None:
    """The typed payload of handler ``fn``, from its first parameter's annotation; None
    when that is missing or not a dataclass, ``TypedDict`` or pydantic model (the
    handler then gets the decoded JSON as it is)."""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return None
    if not params or params[0].annotation is inspect.Parameter.empty:
        return None
    tp = params[0].annotation
    if isinstance(tp, str):  # ``from __future__ import annotations``
        try:
            tp = typing.get_type_hints(fn).get(params[0].name)
        except Exception:  # noqa: BLE001 - an unresolvable name: treat it as untyped
            return None
    if not isinstance(tp, type):
        return None
    if dataclasses.is_dataclass(tp):
        return PayloadType(tp, lambda v: _dump_dataclass(tp, v), lambda d: _make(tp, d, "payload"))
    if typing.is_typeddict(tp):
        return PayloadType(tp, lambda v: _check_typeddict(tp, v, "payload"),
                           lambda d: _check_typeddict(tp, d, "payload"))
    if _is_pydantic(tp):
        model: Any = tp  # a pydantic model class: model_validate is its own
        return PayloadType(tp, lambda v: _pydantic_dump(model, v),
                           lambda d: model.model_validate(d))
    return None


def _is_pydantic(tp: type) -> bool:
    pydantic = sys.modules.get("pydantic")  # loaded already if tp is one of its models
    return pydantic is not None and issubclass(tp, pydantic.BaseModel)


def _pydantic_dump(tp: Any, value: Any) -> Any:  # tp: a pydantic model class
    model = value if isinstance(value, tp) else tp.model_validate(value)
    return model.model_dump(mode="json")


def _dump_dataclass(tp: type[Any], value: Any) -> Any:
    if isinstance(value, tp):
        _check_fields(tp, {f.name: getattr(value, f.name) for f in dataclasses.fields(tp)},
                      "payload")
        return dataclasses.asdict(value)
    return dataclasses.asdict(_make(tp, value, "payload"))


def _make(tp: type, data: Any, where: str) -> Any:
    """An instance of dataclass ``tp`` from the dict ``data``, nested dataclasses too."""
    if isinstance(data, tp):
        return data
    if not isinstance(data, dict):
        raise TypeError(f"{where} must be a {tp.__name__} or a dict of its fields, got "
                        f"{type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(tp) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"{where}: {tp.__name__} has no field {', '.join(map(repr, unknown))}")
    missing = sorted(n for n, f in fields.items() if n not in data
                     and f.default is dataclasses.MISSING
                     and f.default_factory is dataclasses.MISSING)
    if missing:
        raise ValueError(f"{where}: {tp.__name__} needs {', '.join(map(repr, missing))}")
    hints = _hints(tp)
    values = {}
    for name, value in data.items():
        hint = hints.get(name)
        if isinstance(hint, type) and dataclasses.is_dataclass(hint) and isinstance(value, dict):
            value = _make(hint, value, f"{where}.{name}")
        values[name] = value
    _check_fields(tp, values, where)
    return tp(**values)


def _check_typeddict(tp: Any, data: Any, where: str) -> Any:  # tp: a TypedDict class
    if not isinstance(data, dict):
        raise TypeError(f"{where} must be a dict ({tp.__name__}), got {type(data).__name__}")
    required, optional = tp.__required_keys__, tp.__optional_keys__
    unknown = sorted(set(data) - required - optional)
    if unknown:
        raise ValueError(f"{where}: {tp.__name__} has no key {', '.join(map(repr, unknown))}")
    missing = sorted(required - set(data))
    if missing:
        raise ValueError(f"{where}: {tp.__name__} needs {', '.join(map(repr, missing))}")
    _check_fields(tp, data, where)
    return data


def _check_fields(tp: type, values: dict[str, Any], where: str) -> None:
    """``isinstance`` for each value whose annotation is a plain class (an int passes for
    a float, as JSON cannot tell them apart)."""
    hints = _hints(tp)
    for name, value in values.items():
        hint = hints.get(name)
        if not isinstance(hint, type) or hint is Any or typing.is_typeddict(hint):
            continue
        if hint is float and isinstance(value, int) and not isinstance(value, bool):
            continue
        if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
            raise TypeError(f"{where}.{name} must be {hint.__name__}, got "
                            f"{type(value).__name__} {value!r:.60}")


def _hints(tp: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(tp)
    except Exception:  # noqa: BLE001 - an unresolvable name: check nothing rather than fail
        return {}
