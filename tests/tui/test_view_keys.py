"""The keys that act in one view are declared by the views (``View.keys``); the app's
bindings, the hints and the help screen are made from those declarations."""
from __future__ import annotations

import re

from jobq_tui.app import MonitorApp
from jobq_tui.screens.help import HELP
from jobq_tui.views import VIEW_KEYS, VIEWS, hint, offering, tab_key


def test_every_view_key_is_an_action_of_the_app_bound_to_its_key():
    bound = {(b.key, b.action) for b in MonitorApp.BINDINGS}
    for k in VIEW_KEYS:
        assert callable(getattr(MonitorApp, f"action_{k.action}")), k
        assert (k.key, k.action) in bound
        assert (k.key, f"elsewhere('{k.key}')") in bound


def test_the_number_keys_follow_the_registrys_order():
    views = [b for b in MonitorApp.BINDINGS if b.action.startswith("view(")]
    assert [(b.key, b.action) for b in views] == [
        (str(i + 1), f"view('{name}')") for i, name in enumerate(VIEWS)]


def test_a_hint_names_the_views_and_tab_numbers_of_exactly_those_that_offer_the_key():
    for key in {k.key for k in VIEW_KEYS}:
        first = next(k for k in VIEW_KEYS if k.key == key)
        text = hint(key)
        numbers = set(re.findall(r"\((\d)\)", text))
        assert numbers == {tab_key(v) for v in offering(first)}, text
        assert all(v.title in text for v in offering(first))


def test_the_help_screen_says_which_views_each_view_key_acts_in():
    lines = {line.split()[0]: line for line in HELP.splitlines()
             if line.startswith(" ") and line.split()}
    for k in VIEW_KEYS:
        views = ", ".join(v.title for v in offering(k))
        assert f"{views}: {k.help}" in lines[k.key]
    assert f" 1-{len(VIEWS)} " in HELP
    assert " ".join(v.title for v in VIEWS.values()) in HELP


def test_view_flags_are_read_from_the_declared_keys():
    dead, running = VIEWS["dead"], VIEWS["running"]
    assert dead.groups and dead.retries and not dead.takes_back
    assert running.takes_back and running.cancels and not running.retries
    assert [v.name for v in VIEWS.values() if v.side] == ["queues", "workers"]
