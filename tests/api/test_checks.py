"""Argument checks (jobq_core/common/checks.py): each refuses with the name of the argument and the
value that was wrong, TypeError for a wrong type and ValueError for a value out of range."""
import pytest

from jobq_core import PoolKind, Rate
from jobq_core.common.checks import (
    check_attempt_limits, check_buckets, check_claim, check_fraction, check_pool, check_queues,
    check_rate, check_status, check_term, check_words,
)


@pytest.mark.parametrize("call, error, message", [
    (lambda: check_claim("", 1, None, 30, 1), ValueError, "worker_id .* got ''"),
    (lambda: check_claim("w", 0, None, 30, 1), ValueError, "limit must be an integer >= 1, got 0"),
    (lambda: check_claim("w", 1, None, 0, 1), ValueError, "lease must be > 0 seconds, got 0"),
    (lambda: check_queues(["a", ""]), ValueError, "queue must be a non-empty string, got ''"),
    (lambda: check_attempt_limits({"k": 0}), ValueError, "attempt limit .* >= 1, got 0"),
    (lambda: check_attempt_limits({"": 2}), ValueError, "kind must be a non-empty string"),
    (lambda: check_words(["ok", ""]), ValueError, "search words .* got ''"),
    (lambda: check_status("finished"), ValueError, "unknown status 'finished'; expected one"),
    (lambda: check_fraction("progress fraction", 1.5), ValueError, "between 0 and 1, got 1.5"),
    (lambda: check_rate(5), TypeError, "rate must be like '5/s' or a Rate, got 5"),
    (lambda: check_rate(Rate(0, 1.0)), ValueError, "rate limit must be an integer >= 1, got 0"),
    (lambda: check_buckets(5, 10), ValueError, "bucket=10, span=5"),
    (lambda: check_term("beat_interval", -1), ValueError, "beat_interval .* got -1"),
    (lambda: check_pool("fork"), ValueError, "pool must be 'thread' or 'process', got 'fork'"),
])
def test_a_wrong_argument_is_refused_with_its_name_and_value(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_a_right_argument_comes_back_in_the_form_the_store_takes():
    assert check_queues("emails") == ["emails"] and check_queues(None) is None
    assert check_claim("w", 0, "emails", 30, 0) == ["emails"]
    assert check_attempt_limits({}) is None and check_attempt_limits({"k": 2}) == {"k": 2}
    assert check_words("timeout") == ("timeout",) and check_words(["a", "b"]) == ("a", "b")
    assert check_fraction("f", 1) == 1.0 and check_fraction("f", None) is None
    assert check_rate("5/s") == Rate(5, 1.0) and check_rate(None) is None
    assert check_term("lease", 60) == 60.0 and check_term("lease", None) is None
    assert check_pool("process") is PoolKind.PROCESS
    assert check_pool(PoolKind.THREAD) is PoolKind.THREAD
