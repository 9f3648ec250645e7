"""Retry delays: exponential windows up to a cap, with full jitter."""
import statistics

import pytest

from jobq_core import Backoff


def test_backoff_windows_double_up_to_the_cap_and_delays_are_jittered():
    b = Backoff(base=1.0, cap=60.0)
    assert [b.window(n) for n in (1, 2, 3, 6, 7, 1000)] == [1, 2, 4, 32, 60, 60]
    delays = [b.delay(7) for _ in range(2000)]
    assert 0 <= min(delays) and max(delays) <= 60
    assert 25 < statistics.mean(delays) < 35  # full jitter: uniform over the window
    with pytest.raises(ValueError, match="base"):
        Backoff(base=0)
    with pytest.raises(ValueError, match="cap"):
        Backoff(base=10, cap=5)
