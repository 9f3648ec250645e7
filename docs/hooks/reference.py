"""MkDocs hook: the reference pages' generated parts, read from the code itself.

``<!-- jobq:cli -->`` becomes the reference of every ``jobq`` command, walked from the
Typer app (``typer.main.get_command``): its usage line, its help, and every argument and
option with its help and default, as ``--help`` prints them; then ``jobq-tui``'s own help.

``<!-- jobq:api NAME -->`` becomes the reference of ``jobq_core.NAME``: a class's
signature and docstring, a record's fields, an enum's values, a function's signature, a
constant's value. ``<!-- jobq:api NAME: m1 m2 -->`` renders only those methods of the
class (for grouping a large class under headings of the page's own).

A page that uses ``jobq:api`` must account for the whole public API: a name of
``jobq_core.__all__``, or a public method or property of a class, that none of its markers
renders is a warning, so ``mkdocs build --strict`` fails when the API grows undocumented.
"""
from __future__ import annotations

import argparse
import dataclasses
import enum
import html
import inspect
import logging
import re

import click
import typer

import jobq_core
from jobq_cli.main import app
from jobq_tui.main import parser as tui_parser

log = logging.getLogger("mkdocs.plugins.jobq")

MARKER = re.compile(r"<!-- jobq:(cli|api)(?: ([A-Za-z_]+)(?::([a-z_ ]+))?)? -->")


def on_page_markdown(markdown: str, page, config, files) -> str:
    covered: dict[str, set[str] | None] = {}

    def render(m: re.Match) -> str:
        if m.group(1) == "cli":
            return cli_reference()
        name, members = m.group(2), m.group(3)
        if name not in jobq_core.__all__:
            log.warning("%s: jobq:api %s is not a public name of jobq_core", page.file.src_uri,
                        name)
            return ""
        wanted = members.split() if members else None
        seen = covered.setdefault(name, set())
        if wanted is None:
            covered[name] = None  # the whole object
        elif seen is not None:
            seen.update(wanted)
        return api_reference(name, wanted, page.file.src_uri)

    markdown = MARKER.sub(render, markdown)
    if covered:
        _check_covered(covered, page.file.src_uri)
    return markdown


def _check_covered(covered: dict[str, set[str] | None], where: str) -> None:
    for name in jobq_core.__all__:
        if name not in covered:
            log.warning("%s: public name jobq_core.%s is not documented", where, name)
        elif covered[name] is not None:
            missing = set(public_members(getattr(jobq_core, name))) - covered[name]
            for member in sorted(missing):
                log.warning("%s: %s.%s is not documented", where, name, member)


# --- the jobq command ---------------------------------------------------------------------

def cli_reference() -> str:
    group = typer.main.get_command(app)
    root = click.Context(group, info_name="jobq")
    out = [_text(group.help or ""), "",
           "Every command takes `--help`. Durations are seconds (`90`, `1.5`) or a number with "
           "a unit (`90s`, `15m`, `12h`, `7d`, `2w`, `1h30m`).", ""]
    for name, command in group.commands.items():
        ctx = click.Context(command, parent=root, info_name=name)
        out += [f"## jobq {name}", "", "```text", command.get_usage(ctx).removeprefix("Usage: "),
                "```", "", _text(command.help or ""), ""]
        arguments, options = [], []
        for param in command.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None or "--help" in getattr(param, "opts", ()):
                continue
            help_text, extras = _split_extras(record[1])
            if param.param_type_name == "argument":
                arguments.append((param.metavar or param.name.upper(), help_text, extras))
            else:
                options.append((record[0], help_text, extras))
        for title, rows in (("Argument", arguments), ("Option", options)):
            if not rows:
                continue
            out += [f"| {title} | What it does | Default |", "| --- | --- | --- |"]
            for flag, help_text, extras in rows:
                default = extras.pop("default", "")
                notes = "; ".join(f"{k}: {v}" if v else k for k, v in extras.items())
                cell = _cell(help_text) + (f" ({_cell(notes)})" if notes else "")
                out.append(f"| `{flag}` | {cell} | {f'`{default}`' if default else ''} |")
            out.append("")
    tui = tui_parser()
    tui.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=88)  # not $COLUMNS
    out += ["## jobq-tui", "", "The monitor's own command (`jobq tui --db DATABASE` passes these "
            "options on to it):", "", "```text", tui.format_help().rstrip(), "```", ""]
    return "\n".join(out)


def _split_extras(help_text: str) -> tuple[str, dict[str, str]]:
    """Click appends ``  [default: 8; x>=1]`` to an option's help: split it off."""
    text, sep, extra = help_text.rpartition("  [")
    if not sep or not extra.endswith("]"):
        return help_text, {}
    extras: dict[str, str] = {}
    for item in extra[:-1].split("; "):
        key, _, value = item.partition(": ")
        extras[key] = value
    return text, extras


def _text(text: str) -> str:
    """Help text as Markdown paragraphs, shown literally."""
    paragraphs = [p for p in re.split(r"\n\s*\n", text.replace("\b", "")) if p.strip()]
    return "\n\n".join(_escape(" ".join(p.split())) for p in paragraphs)


def _cell(text: str) -> str:
    return _escape(" ".join(text.split())).replace("|", "\\|")


def _escape(text: str) -> str:
    text = html.escape(text, quote=False)
    return re.sub(r"([\\`*_\[\]])", r"\\\1", text)


# --- the Python API -----------------------------------------------------------------------

def public_members(obj) -> list[str]:
    """The public methods and properties a class defines (records' fields are listed with
    the record, enums' values with the enum)."""
    if not inspect.isclass(obj) or dataclasses.is_dataclass(obj) or issubclass(obj, enum.Enum):
        return []
    names = []
    for name, value in inspect.getmembers(obj):
        if name.startswith("_"):
            continue
        if inspect.isfunction(value) or isinstance(value, property):
            names.append(name)
    return names


def api_reference(name: str, members: list[str] | None, where: str) -> str:
    """A top-level name under a level-3 heading, its members under level-4 ones."""
    obj = getattr(jobq_core, name)
    if members is not None:
        return _members(obj, members, where)
    if inspect.isclass(obj) and issubclass(obj, enum.Enum):
        values = ", ".join(f"`{m.value}`" for m in obj)
        return _entry(3, name, "", _doc(obj), f"Values: {values}.")
    if dataclasses.is_dataclass(obj):
        rows = ["| Field | Type | Default |", "| --- | --- | --- |"]
        for f in dataclasses.fields(obj):
            if f.name.startswith("_"):
                continue
            default = "" if f.default is dataclasses.MISSING else f"`{f.default!r}`"
            rows.append(f"| `{f.name}` | `{f.type}` | {default} |")  # a | in code is kept
        return "\n\n".join([_entry(3, name, "", _doc(obj), "\n".join(rows)),
                             _members(obj, _own_methods(obj), where)]).rstrip()
    if inspect.isclass(obj):
        signature = _signature(obj)
        protocol = getattr(obj, "_is_protocol", False)  # an interface: made by no one
        head = "" if protocol or signature == "(...)" else f"{name}{signature}"
        return "\n\n".join([_entry(3, name, head, _doc(obj)),
                             _members(obj, public_members(obj), where)]).rstrip()
    if callable(obj):
        return _entry(3, name, f"{name}{_signature(obj)}", _doc(obj))
    return _entry(3, name, f"{name} = {_value(obj)}", "")


def _value(value) -> str:
    """A constant as it reads in code: a tuple of statuses as their strings, an object as
    its class (its repr would carry a memory address, different in every build)."""
    if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
        return repr(tuple(str(v) for v in value))
    if isinstance(value, (int, float, str, bool, type(None))):
        return repr(value)
    return f"{type(value).__name__}()"


def _own_methods(cls) -> list[str]:
    return [n for n, v in vars(cls).items()
            if not n.startswith("_") and (inspect.isfunction(v) or isinstance(v, property))]


def _members(cls, names: list[str], where: str) -> str:
    parts = []
    for member in names:
        value = inspect.getattr_static(cls, member, None)
        title = f"{cls.__name__}.{member}"
        if value is None:
            log.warning("%s: %s has no member %r", where, cls.__name__, member)
        elif isinstance(value, property):
            parts.append(_entry(4, title, f"{title}  # property", _doc(value.fget)))
        else:
            function = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
            parts.append(_entry(4, title, f"{title}{_signature(function)}", _doc(function)))
    return "\n\n".join(parts)


def _signature(obj) -> str:
    """The signature without annotations, which the prose explains; the return type kept."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return "(...)"
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()
              if p.name != "self"]
    text = str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))
    text = re.sub(r"<[\w.]*?(\w+) object at 0x[0-9a-f]+>", r"\1()", text)  # no addresses
    returns = sig.return_annotation
    if returns is not inspect.Signature.empty and not inspect.isclass(obj):
        text += f" -> {returns if isinstance(returns, str) else inspect.formatannotation(returns)}"
    return text


def _doc(obj) -> str:
    """The object's own docstring: not one inherited from a base, nor the one a dataclass
    makes up from its fields."""
    if not inspect.isclass(obj):
        return inspect.getdoc(obj) or ""
    doc = inspect.cleandoc(vars(obj).get("__doc__") or "")
    return "" if doc.startswith(f"{obj.__name__}(") else doc


def _entry(level: int, title: str, code: str, doc: str, extra: str = "") -> str:
    """One name: a heading (its anchor, e.g. ``#queueenqueue``), its signature as code, its
    docstring (RST's ``x`` reads as Markdown code) and what the kind of object adds."""
    parts = [f"{'#' * level} {title}"]
    if code:
        parts.append(f"```python\n{code}\n```")
    parts += _docstring(doc)
    if extra:
        parts.append(extra)
    return "\n\n".join(parts)


def _docstring(doc: str) -> list[str]:
    return [html.escape(" ".join(p.split()), quote=False).replace("*", "\\*")
            for p in re.split(r"\n\s*\n", doc) if p.strip()]
