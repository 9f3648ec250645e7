"""Limits declared in code (``Registry.queue``), on both stores: a worker that starts
applies them, an operator's later change holds until the code declares others and shows
beside the code's, a queue the registry does not declare is left alone, and a bad
declaration is refused when it is made."""
from __future__ import annotations

import pytest

from jobq_core import QueueLimits, Rate, Registry, Worker


def start_and_stop(queue, registry: Registry) -> None:
    """A worker's start (where it applies the registry's limits), and its stop."""
    Worker(queue, registry).run(burst=True, handle_signals=False)


def mail(**limits) -> Registry:
    r = Registry()
    r.queue("mail", **limits)
    return r


def test_a_worker_applies_the_declared_limits_when_it_starts(queue):
    start_and_stop(queue, mail(concurrency=5, rate="100/m", key_concurrency=2))
    qs = queue.queues()["mail"]
    assert (qs.concurrency, qs.rate, qs.key_concurrency, qs.ordered) == (
        5, Rate(100, 60.0), 2, False)
    assert qs.declared == QueueLimits(5, Rate(100, 60.0), 2, False) and not qs.drift
    assert queue.declared_limits() == {"mail": qs.declared}


def test_an_operator_change_holds_until_the_code_declares_others_and_shows_as_drift(queue):
    start_and_stop(queue, mail(concurrency=5))
    queue.set_limit("mail", concurrency=1, rate="5/s")  # jobq limit, in an incident
    qs = queue.queues()["mail"]
    assert qs.drift and qs.declared == QueueLimits(concurrency=5)
    assert qs.limits == QueueLimits(concurrency=1, rate=Rate(5, 1.0))

    start_and_stop(queue, mail(concurrency=5))  # a restart, or one more worker: kept
    qs = queue.queues()["mail"]
    assert (qs.concurrency, qs.rate) == (1, Rate(5, 1.0)) and qs.drift

    start_and_stop(queue, mail(concurrency=8, ordered=True))  # a deploy that changes them
    qs = queue.queues()["mail"]
    assert qs.limits == QueueLimits(concurrency=8, ordered=True) and not qs.drift


def test_a_declaration_of_no_limits_removes_them_and_is_shown_when_they_come_back(queue):
    queue.set_limit("mail", concurrency=3)
    start_and_stop(queue, mail())
    qs = queue.queues()["mail"]  # listed though it has no job and no control: declared
    assert qs.limits == QueueLimits() and qs.declared == QueueLimits() and not qs.drift
    queue.set_limit("mail", concurrency=2)
    assert queue.queues()["mail"].drift


def test_a_worker_leaves_alone_the_queues_its_registry_does_not_declare(queue):
    start_and_stop(queue, mail(concurrency=5))
    queue.set_limit("mail", concurrency=2)
    queue.set_limit("sms", rate="5/s")
    other = Registry()
    other.queue("reports", concurrency=1)
    start_and_stop(queue, other)
    start_and_stop(queue, Registry())  # no declaration at all
    queues = queue.queues()
    assert queues["mail"].limits == QueueLimits(concurrency=2)
    assert queues["mail"].declared == QueueLimits(concurrency=5)  # still recorded: drift
    assert queues["sms"].limits == QueueLimits(rate=Rate(5, 1.0))
    assert queues["sms"].declared is None and not queues["sms"].drift
    assert queues["reports"].limits == QueueLimits(concurrency=1)


@pytest.mark.parametrize("limits, error", [
    ({"concurrency": 0}, "concurrency must be an integer >= 1, got 0"),
    ({"concurrency": "5"}, "concurrency must be an integer, got '5'"),
    ({"rate": "100/d"}, "a rate is N/s, N/m or N/h with N >= 1 (like 5/s), got '100/d'"),
    ({"key_concurrency": -1}, "key_concurrency must be an integer >= 1, got -1"),
    ({"ordered": "yes"}, "ordered must be True or False, got 'yes'"),
])
def test_a_bad_declaration_is_refused_when_it_is_made_in_one_line(limits, error):
    with pytest.raises((TypeError, ValueError)) as e:
        Registry().queue("mail", **limits)
    assert str(e.value) == error


def test_a_queue_declared_twice_or_with_a_bad_name_is_refused():
    r = mail(concurrency=1)
    with pytest.raises(ValueError, match="the limits of queue 'mail' are declared twice"):
        r.queue("mail", concurrency=2)
    with pytest.raises(ValueError, match="queue"):
        r.queue("")


def test_a_recorded_declaration_another_program_garbled_is_ignored(queue):
    queue.store.settings_write({"declared.mail": "not json", "declared.sms": '{"concurrency": 0}'})
    assert queue.declared_limits() == {}
    queue.set_limit("mail", concurrency=2)
    assert queue.queues()["mail"].declared is None
    start_and_stop(queue, mail(concurrency=4))  # what the code declares replaces it
    assert queue.queues()["mail"].limits == QueueLimits(concurrency=4)
    assert queue.forget_declared("mail") and not queue.forget_declared("mail")
    assert queue.queues()["mail"].declared is None
