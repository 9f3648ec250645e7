"""Containers that draw nothing themselves (``Widget.BLANK``: no border, no padding, no
content of their own), so a screen update does not walk their lines.

Textual redraws every widget whose parent's area meets the update, each line of it, even
where the container is covered by its children: a table whose countdowns tick under five
such containers paid for the five once a second (``bench/tui_cpu.py``). Only for
containers the stylesheet gives no border or padding.
"""
from __future__ import annotations

from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import TabbedContent, TabPane


class BlankScreen(Screen):
    """The monitor's own screen: its widgets cover all of it (its background is solid;
    the modal screens over it are other screens)."""

    BLANK = True


class BlankRow(Horizontal):
    BLANK = True


class BlankColumn(Vertical):
    BLANK = True


class BlankPane(TabPane):
    BLANK = True


class BlankTabs(TabbedContent):
    """Its ``ContentSwitcher`` (made by ``TabbedContent`` itself) is left as Textual
    makes it: marked blank, by a flag set on that instance, it saved nothing measurable
    (``bench/tui_tricks.py`` at ff54f58, 200x50: idle 0.99 % of a core with the flag,
    0.96 % without; in a drain 2.79 % and 2.68 %)."""

    BLANK = True
