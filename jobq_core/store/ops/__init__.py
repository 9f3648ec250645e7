"""Every job operation of the ``Store`` contract, written once over a backend and a dialect.

running.py   producing and running jobs: enqueue, claim, heartbeat, complete, fail,
             release, progress, and the reaper's pass
dependencies.py  jobs that wait for others: their start, and what a job's end settles
admin.py     what operators do: retry, retry dead, cancel, prune
copying.py   a copy between stores: pages of the source, the destination's start and pages
reads.py     what the CLI and the monitor read: get, list, count, attempts, stats,
             throughput, dead jobs grouped by error
registry.py  the worker registry, periodic schedules and queue controls

Each module is a mixin of ``store.engine.Engine``; an operation's policy (which outcome,
which error text, what the attempt history records) is here and nowhere else.
"""
