"""The code's shape: no import cycle inside jobq_core or jobq_cli (type-only imports count:
a cycle through ``if TYPE_CHECKING`` still points at a type in the wrong module), and no
module of theirs over 500 lines."""
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 500
# Being rewritten into one engine over a backend seam; they leave this list with it.
TOO_LONG_FOR_NOW = {"jobq_core/store/sqlite/store.py", "jobq_core/store/postgres/store.py"}


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (each holds at
    least one cycle), each sorted, in sorted order. A module importing itself is no cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        # Tarjan's algorithm without recursion: (module, the imports still to visit).
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, imports = work[-1]
            for imported in imports:
                if imported not in index:
                    index[imported] = low[imported] = len(index)
                    stack.append(imported)
                    on_stack.add(imported)
                    work.append((imported, iter(sorted(
                        graph.find_modules_directly_imported_by(imported)))))
                    break
                if imported in on_stack:
                    low[module] = min(low[module], index[imported])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def describe(graph: grimp.ImportGraph, cycles: list[list[str]]) -> str:
    lines = []
    for component in cycles:
        members = set(component)
        lines.append(" <-> ".join(component))
        for importer in component:
            for imported in sorted(graph.find_modules_directly_imported_by(importer) & members):
                for detail in graph.get_import_details(importer=importer, imported=imported):
                    lines.append(f"    {importer}:{detail['line_number']} "
                                 f"{detail['line_contents']}")
    return "\n".join(lines)


def test_the_cycle_finder_finds_a_cycle_and_only_a_cycle():
    graph = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"),
                               ("p.c", "p.d"), ("p.d", "p.e"), ("p.e", "p.d"), ("p.f", "p.a")]:
        graph.add_import(importer=importer, imported=imported)
    assert import_cycles(graph) == [["p.a", "p.b", "p.c"], ["p.d", "p.e"]]
    acyclic = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.a", "p.c"), ("p.b", "p.c")]:
        acyclic.add_import(importer=importer, imported=imported)
    assert import_cycles(acyclic) == []


@pytest.mark.parametrize("package", ["jobq_core", "jobq_cli"])
def test_no_module_imports_itself_back_through_others(package):
    graph = grimp.build_graph(package, include_external_packages=False, cache_dir=None)
    cycles = import_cycles(graph)
    assert not cycles, "import cycles:\n" + describe(graph, cycles)


def test_no_module_runs_past_500_lines():
    too_long = {}
    for package in ("jobq_core", "jobq_cli"):
        for path in sorted((ROOT / package).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_LINES and name not in TOO_LONG_FOR_NOW:
                too_long[name] = lines
    assert not too_long, f"modules over {MAX_LINES} lines: {too_long}"
