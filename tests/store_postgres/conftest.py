from __future__ import annotations

import logging

import pytest


@pytest.fixture
def jobq_log(caplog, monkeypatch):
    """jobq's log records, whatever an earlier test did to the "jobq" logger (``jobq run``
    in-process gives it a handler of its own and stops propagation)."""
    logger = logging.getLogger("jobq")
    monkeypatch.setattr(logger, "handlers", [])
    monkeypatch.setattr(logger, "propagate", True)
    caplog.set_level(logging.WARNING, logger="jobq")
    return caplog
