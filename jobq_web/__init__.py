"""jobq web: the monitor in a browser (``jobq web``, or ``create_app`` mounted in an
application). Needs the ``web`` extra: ``pip install 'jobq[web]'``."""
from __future__ import annotations

from .app import create_app

__all__ = ["create_app"]
