"""The table's row-diff model, without an app: what changed between two sets of rows."""
from __future__ import annotations

from jobq_core.presentation.views.base import Column, Row
from jobq_core.presentation.views.cells import Cell
from jobq_core.presentation.views.cells import Timed
from jobq_tui.widgets.table_model import ColumnChange, RowModel

COLUMNS = [Column("id", "ID"), Column("kind", "KIND"), Column("age", "AGE")]


def row(key: str, kind: str, born: float | None = None) -> Row:
    age = Cell("-") if born is None else Timed(lambda now: Cell(f"{int(now - born)}s"))
    return Row(key, (Cell(key), Cell(kind), age), (key, kind, born))


def model(*rows: Row, now: float = 100.0) -> RowModel:
    m = RowModel()
    m.set_columns(COLUMNS)
    m.set_rows(list(rows), now)
    return m


def test_new_rows_are_all_changes_and_widths_fit_the_widest_cell():
    m = RowModel()
    assert m.set_columns(COLUMNS) is ColumnChange.NEW
    change = m.set_rows([row("1", "send"), row("2", "build_report")], 100.0)
    assert [(c.index, c.key, c.old) for c in change.changed] == [(0, "1", None), (1, "2", None)]
    assert change.widths and change.order
    assert m.natural == [2, len("build_report"), 3]


def test_the_same_rows_again_change_nothing():
    a, b = row("1", "send"), row("2", "mail")
    m = model(a, b)
    change = m.set_rows([a, b], 100.0)
    assert change.changed == [] and not change.widths and not change.order


def test_an_equal_row_rebuilt_is_not_a_change_but_a_different_cell_is():
    m = model(row("1", "send"), row("2", "mail"))
    change = m.set_rows([row("1", "send"), row("2", "mail!")], 100.0)
    assert [c.key for c in change.changed] == ["2"]
    old, new = change.changed[0].old, change.changed[0].new
    assert old[0] == new[0] and old[1] != new[1]  # only the kind's part differs


def test_a_new_order_is_reported_and_the_index_follows_the_keys():
    a, b = row("1", "send"), row("2", "mail")
    m = model(a, b)
    change = m.set_rows([b, a], 100.0)
    assert change.order and change.changed == []
    assert m.index == {"2": 0, "1": 1}


def test_a_tick_works_out_timed_cells_of_the_rows_in_view_only():
    m = model(row("1", "send", born=90.0), row("2", "mail", born=95.0),
              row("3", "idle"), now=100.0)
    change = m.tick(101.0, 0, 1)  # only the first row is in view
    assert [c.key for c in change.changed] == ["1"]
    assert m.cells(0)[0][2].plain == "11s"
    cells, caught_up = m.cells(1)  # scrolled into view later: it catches up then
    assert cells[2].plain == "6s" and caught_up is not None and caught_up.key == "2"
    assert m.cells(2)[1] is None  # no timed cell: nothing to work out


def test_a_countdown_that_grows_a_digit_moves_the_widths():
    m = model(row("1", "send", born=95.0), now=100.0)  # "5s"
    assert m.natural[2] == 3  # the label AGE
    change = m.tick(200.0, 0, 10)  # "105s"
    assert change.widths and m.natural[2] == 4


def test_a_new_label_keeps_the_rows_and_new_columns_drop_them():
    m = model(row("1", "send"))
    relabelled = [COLUMNS[0], Column("kind", "KIND ▲"), COLUMNS[2]]
    assert m.set_columns(relabelled) is ColumnChange.LABELS
    assert m.rows and m.natural[1] == len("KIND ▲")
    assert m.set_columns(relabelled) is ColumnChange.SAME
    assert m.set_columns(COLUMNS[:2]) is ColumnChange.NEW
    assert m.rows == [] and m.natural == [2, 4]


def test_marks_follow_their_rows_and_go_when_a_row_leaves():
    a, b, c = row("1", "x"), row("2", "y"), row("3", "z")
    m = model(a, b, c)
    assert m.toggle_mark("1") and m.toggle_mark("3") and not m.toggle_mark("9")
    assert [r.key for r in m.marked_rows()] == ["1", "3"]
    m.set_rows([c, b], 100.0)
    assert m.marked == {"3"}
    assert m.clear_marks() == [0] and m.marked == set()
