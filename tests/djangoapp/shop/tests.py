"""Django's own test runner on the shop (``manage.py test shop``, run by
tests/contrib/test_django.py on both stores): a ``TestCase`` wraps each test in a
transaction it rolls back, and the backend's queue, on Django's connection, sees and runs
the jobs the test enqueued inside it."""
try:
    from django.tasks import default_task_backend
    from django.tasks.base import TaskResultStatus
except ImportError:
    from django_tasks import default_task_backend
    from django_tasks.base import TaskResultStatus

from django.test import TestCase, TransactionTestCase

from jobq_core.contrib.django.worker import registry
from jobq_core.testing import assert_enqueued, drain, enqueued

from .models import Order
from .tasks import notify, ship


class EnqueueInATestCase(TestCase):
    def test_the_job_a_test_enqueues_is_seen_by_assert_enqueued(self):
        order = Order.objects.create()
        result = ship.enqueue(order.id)
        jobs = assert_enqueued(default_task_backend.queue, "shop.tasks.ship",
                               payload={"args": [order.id], "kwargs": {}}, count=1)
        self.assertEqual(result.id, str(jobs[0].id))
        self.assertEqual(default_task_backend.get_result(result.id).status,
                         TaskResultStatus.READY)

    def test_drain_runs_it_in_the_tests_transaction(self):
        order = Order.objects.create()
        result = ship.enqueue(order.id)
        notify.enqueue(order.id, channel="sms")
        ran = drain(default_task_backend.queue, registry)
        self.assertEqual(sorted(r.kind for r in ran), ["shop.tasks.notify", "shop.tasks.ship"])
        order.refresh_from_db()
        self.assertEqual(order.state, "shipped")
        result.refresh()
        self.assertEqual(result.status, TaskResultStatus.SUCCESSFUL)
        self.assertEqual(result.return_value, {"shipped": order.id})

    def test_each_test_starts_with_no_job_of_an_earlier_one(self):
        self.assertEqual(enqueued(default_task_backend.queue), [])


class EnqueueOutsideATransaction(TransactionTestCase):
    def test_an_enqueue_outside_atomic_commits_at_once(self):
        from django.db import transaction

        result = notify.enqueue(7)
        with transaction.atomic():
            doomed = notify.enqueue(8)
            transaction.set_rollback(True)
        self.assertEqual([j.payload["args"] for j in enqueued(default_task_backend.queue)],
                         [[7]])
        self.assertEqual(default_task_backend.get_result(result.id).status,
                         TaskResultStatus.READY)
        self.assertNotEqual(doomed.id, result.id)
