"""Maintenance services: each is a class with ``run_once()`` and its own schedule (an
interval and the time it is next due), run by whoever hosts it. Today there is one:

* ``reaper.py`` — ``Reaper``: returns jobs whose lease expired to the queue (or to dead);
  every worker hosts one on its heartbeat thread.
"""
from .reaper import Reaper

__all__ = ["Reaper"]
