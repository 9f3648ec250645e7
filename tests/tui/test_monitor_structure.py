"""The monitor's shape: no import cycle inside jobq_tui (imports under ``TYPE_CHECKING``
count: a type-only cycle points at a type in the wrong module), and no module over 500
lines."""
from __future__ import annotations

from pathlib import Path

import grimp

import jobq_tui

MAX_LINES = 500


def import_cycles(graph, package: str) -> list[list[str]]:
    """Every cycle a depth-first walk of the direct imports meets (one per back edge)."""
    modules = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    state: dict[str, int] = {}  # 1: on the walk's stack, 2: done
    cycles: list[list[str]] = []

    def walk(module: str, stack: list[str]) -> None:
        state[module] = 1
        stack.append(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if state.get(imported) == 1:
                cycles.append(stack[stack.index(imported):] + [imported])
            elif imported not in state:
                walk(imported, stack)
        stack.pop()
        state[module] = 2

    for module in modules:
        if module not in state:
            walk(module, [])
    return cycles


def test_jobq_tui_has_no_import_cycle_not_even_a_type_only_one():
    graph = grimp.build_graph("jobq_tui", include_external_packages=False)
    assert graph.find_modules_directly_imported_by("jobq_tui.widgets.table_model")  # a real graph
    assert import_cycles(graph, "jobq_tui") == []


def test_the_cycle_finder_finds_a_cycle_through_a_type_only_import():
    """The check above can fail: a cycle (source -> views -> the table model -> source,
    the last only under TYPE_CHECKING) is found."""
    graph = grimp.build_graph("jobq_tui", include_external_packages=False)
    graph.add_import(importer="jobq_tui.widgets.table_model", imported="jobq_tui.source")
    graph.add_import(importer="jobq_tui.source", imported="jobq_tui.views")
    graph.add_import(importer="jobq_tui.views", imported="jobq_tui.widgets.table_model")
    cycles = import_cycles(graph, "jobq_tui")
    assert cycles and all(c[0] == c[-1] for c in cycles)
    assert any("jobq_tui.source" in c and "jobq_tui.widgets.table_model" in c for c in cycles)


def test_the_source_does_not_import_the_views_registry():
    graph = grimp.build_graph("jobq_tui", include_external_packages=False)
    assert not graph.chain_exists("jobq_tui.source", "jobq_tui.views")


def test_no_jobq_tui_module_is_over_500_lines():
    root = Path(jobq_tui.__file__).parent
    sizes = {str(p.relative_to(root)): len(p.read_text().splitlines())
             for p in root.rglob("*.py")}
    assert len(sizes) > 20
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_the_models_import_no_textual():
    """What is said to be pure data (rows, their diff, the pacing, the status text, the
    snapshot) stays testable without an app."""
    graph = grimp.build_graph("jobq_tui", "textual", include_external_packages=False)
    for module in ("jobq_tui.widgets.table_model", "jobq_tui.pacer", "jobq_tui.status",
                   "jobq_tui.source", "jobq_tui.views"):
        assert not graph.chain_exists(module, "textual", as_packages=True), module
    assert graph.chain_exists("jobq_tui.widgets.tables", "textual", as_packages=True)
