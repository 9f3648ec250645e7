from __future__ import annotations

import logging
import os
import tempfile

import pytest
from stores import ADAPTERS, fresh_database
from stores.adapter import skip_or_fail

from jobq_core import Queue
from jobq_core.testing import FakeClock


def pytest_xdist_auto_num_workers(config):
    """How many test processes ``-n auto`` (the default, see pyproject) starts. The fast
    tier (``-m "not slow"``) keeps the 2 cores busy with work of its own: 4 processes ran
    it in 79-84 s where 6 took 95 s (each starts a PostgreSQL cluster). The full suite
    spends much of its time waiting on worker processes and real clocks: 6."""
    return 4 if "not slow" in (config.getoption("markexpr") or "") else 6


def _bytecode_cached_outside_the_tree() -> None:
    """Where ``PYTHONDONTWRITEBYTECODE`` is set (it is on the 2-core machine the suite is
    measured on), no process the tests start finds jobq's modules compiled: each ``jobq``
    subprocess, worker process and instruction-count child compiled every module it imported
    from source, 0.3 s of CPU for ``import jobq_cli.main`` against 0.17 s from bytecode, in a
    suite that starts hundreds of them. The variable is there to keep ``__pycache__``
    directories out of the source tree, so the bytecode goes to a cache of its own instead
    (``PYTHONPYCACHEPREFIX``), outside the tree; set here, before the xdist workers start,
    every process of the run inherits it (installed packages are compiled there too, once).
    A cache prefix chosen by the caller is left as it is, even an empty one (none: the old
    way)."""
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and "PYTHONPYCACHEPREFIX" not in os.environ:
        os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(
            tempfile.gettempdir(), f"jobq-tests-pycache-{os.getuid()}")
        del os.environ["PYTHONDONTWRITEBYTECODE"]


def pytest_configure(config):
    _bytecode_cached_outside_the_tree()
    config.addinivalue_line(
        "markers", "stores(*names, why): run this test on these stores only (of "
                   "tests/stores' ADAPTERS), for the reason given")
    config.addinivalue_line(
        "markers", "slow_on(*names, why): this test's runs on these stores are slow-tier "
                   "(the others stay in the fast tier), for the reason given")


def _named(marker, nodeid: str) -> list[str]:
    assert marker.kwargs.get("why") or not marker.args, f"{nodeid}: say why in {marker.name}(why=)"
    unknown = set(marker.args) - {a.name for a in ADAPTERS}
    assert not unknown, f"{nodeid}: {marker.name} names no adapter {sorted(unknown)}"
    return list(marker.args)


def pytest_generate_tests(metafunc):
    """A test that takes ``adapter`` (or ``database``, or a fixture made from them) runs
    once per store of ``stores.ADAPTERS``, or on those its ``stores`` marker names; its
    runs on the stores its ``slow_on`` marker names are marked ``slow``."""
    if "adapter" not in metafunc.fixturenames:
        return
    nodeid = metafunc.definition.nodeid
    chosen = ADAPTERS
    if (only := metafunc.definition.get_closest_marker("stores")) is not None:
        names = _named(only, nodeid)
        assert names, f"{nodeid}: stores() names no store"
        chosen = [a for a in ADAPTERS if a.name in names]
    slow = metafunc.definition.get_closest_marker("slow_on")
    slow_names = _named(slow, nodeid) if slow is not None else []
    metafunc.parametrize("adapter", [
        pytest.param(a, id=a.name, marks=[pytest.mark.slow] if a.name in slow_names else [])
        for a in chosen], indirect=True)


@pytest.fixture
def adapter(request):
    """The store this run of the test is on (see ``tests/stores``)."""
    why = request.param.unavailable()
    if why:
        skip_or_fail(why)
    return request.param


@pytest.fixture
def database(adapter, tmp_path):
    """A new database of the test's store, for this test only; afterwards the store's
    integrity check must still say "ok"."""
    yield from fresh_database(adapter, tmp_path)


def pytest_addoption(parser):
    parser.addoption("--soak", type=float, default=0.0, metavar="SECONDS",
                     help="run the chaos scenarios' fault injection for this long (default: "
                          "a short run)")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "jobs.db"


@pytest.fixture
def queue(db_path, clock):
    q = Queue(db_path, clock=clock)
    yield q
    q.close()


# The suite's longest tests (by node id prefix) and the seconds each run of them took in a
# whole-suite run on the 2-core machine, loaded by other work (546 s in all). Under xdist
# each starts at the head of a worker's share, so that none starts last (see below).
LONG_TESTS = {
    "tests/perf/test_instructions.py::": 51,
    "tests/cli/test_controls.py::test_three_workers_enqueue_exactly_one_job_per_tick": 36,
    "tests/cli/test_processes.py::test_a_job_that_kills_its_thread_pool_worker_goes": 31,
    "tests/cli/test_demo.py::test_what_the_demo_says_of_a_killed_worker": 30,
    "tests/test_docs.py::test_a_broken_anchor_or_an_undocumented_public_name": 30,
    "tests/test_docs.py::test_the_site_builds_strictly": 30,
    "tests/store_contract/test_multiprocess.py::test_four_processes_complete": 29,
    "tests/worker/test_maintenance.py::test_retention_deletes_in_batches": 29,
    "tests/tui/test_bad_rows.py::test_every_view_and_every_detail_survive_foreign": 26,
    "tests/cli/test_bench.py::test_every_workload": 25,
    "tests/tui/test_demo_truth.py::": 20,
    "tests/web/test_browser.py::test_a_job_enqueued_elsewhere_appears": 20,
    "tests/worker/test_health.py::test_readyz": 19,
    "tests/cli/test_demo.py::test_the_demo_runs_worker_processes": 17,
    "tests/cli/test_controls.py::test_a_restart_after_downtime": 16,
    "tests/store_postgres/test_table_care.py::test_a_running_worker_vacuums": 16,
    "tests/tui/test_app.py::test_the_footer_offers_each_action_key": 15,
    "tests/tui/test_postgres.py::test_every_view_shows_the_same_rows": 15,
    "tests/chaos/test_exactly_once.py::": 13,
    "tests/cli/test_bulk_load.py::test_an_interrupted_load_prints_exactly": 13,
}


def _long_tests_at_the_heads_of_the_shares(items: list, workers: int) -> None:
    """xdist's ``worksteal`` hands each worker an equal run of the collection, in order, and a
    worker that has run out takes the far end of another's; a long test is never taken, and
    runs where its share puts it. Collected in file order, the long ones fell where they
    fell: the instruction guard, the longest, was the last test of a whole-suite run, alone
    for its last 20 s. Here the long ones are dealt out, longest first, each to the share
    with the least long work yet (LPT), and each share begins with its own."""
    sizes, left = [], len(items)
    for i in range(workers):  # the split of worksteal's first schedule, share by share
        sizes.append(left // (workers - i))
        left -= sizes[-1]
    long = sorted(((seconds, n) for n, item in enumerate(items)
                   for prefix, seconds in LONG_TESTS.items()
                   if item.nodeid.startswith(prefix)), reverse=True)
    heads: list[list[int]] = [[] for _ in sizes]
    load = [0] * workers
    for seconds, n in long:
        share = min((s for s in range(workers) if len(heads[s]) < sizes[s]),
                    key=lambda s: load[s])
        heads[share].append(n)
        load[share] += seconds
    taken = {n for head in heads for n in head}
    rest = iter(n for n in range(len(items)) if n not in taken)
    order = [n for share, head in enumerate(heads)
             for n in head + [next(rest) for _ in range(sizes[share] - len(head))]]
    items[:] = [items[n] for n in order]


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected what they leave out
def pytest_collection_modifyitems(config, items):
    soak = config.getoption("--soak")
    if soak:  # a soak runs as long as asked: lift the per-test timeout for it
        for item in items:
            item.add_marker(pytest.mark.timeout(soak + 600))
    # Each xdist worker collects, and all must order alike (their option --dist reads "no"
    # by then: the order is made for pyproject's worksteal, and harmless under another).
    workers = getattr(config, "workerinput", {}).get("workercount", 0)
    if workers > 1:
        _long_tests_at_the_heads_of_the_shares(items, workers)


# -- PostgreSQL (see pgserver.py for where the server comes from) -------------------------


@pytest.fixture(scope="session")
def pg_server():
    import pgserver

    try:
        return pgserver.server()
    except pgserver.Unavailable as e:
        skip_or_fail(str(e))


@pytest.fixture
def own_pg_cluster():
    """A PostgreSQL cluster for this test alone, which it may stop and start; stopped after
    it."""
    import pgserver

    try:
        server = pgserver.own_cluster()
    except pgserver.Unavailable as e:
        skip_or_fail(str(e))
        raise
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server):
    """The URL of a new, empty database on the tests' server, dropped afterwards."""
    name, url = pg_server.create_database()
    yield url
    pg_server.drop_database(name)


@pytest.fixture
def pg_queue(pg_url, clock):
    q = Queue(pg_url, clock=clock)
    q.check()  # connected (a queue connects on first use): jobq's tables are there
    yield q
    q.close()


@pytest.fixture(autouse=True)
def _jobq_logger_restored():
    """An in-process ``jobq run`` or ``jobq demo`` sets the "jobq" logger up for a terminal
    (its own handler, no propagation): put it back after each test, so that a later test's
    ``caplog`` sees jobq's records whatever ran before it."""
    log = logging.getLogger("jobq")
    handlers, level, propagate = log.handlers[:], log.level, log.propagate
    yield
    log.handlers[:] = handlers
    log.setLevel(level)
    log.propagate = propagate
