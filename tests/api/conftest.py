"""The public API's tests (``Queue``'s helpers, tasks, the testing helpers, what
``common/`` and ``presentation/`` decide): a database of each store with a queue on it
(``stores/fixtures.py``), for the tests that read or write one."""
from stores.fixtures import db, producer, queue  # noqa: F401 - fixtures, by name
