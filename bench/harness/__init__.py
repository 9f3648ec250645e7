"""harness - what bench/peers.py (SQLite), bench/peers_pg.py (PostgreSQL) and
bench/peers_brokers.py (Redis and RabbitMQ) share, one module per role:

  system.py     the System interface every measured queue implements, and the small
                pieces the adapters share (payloads, pragmas, the batched drain)
  jobq.py       jobq's adapter: its API and its worker, on either store (update here when
                jobq's API changes)
  workloads.py  how one measurement runs: the enqueue loops in this process, the drains
                in forked workers, and their exactly-once checks
  rounds.py     repetitions, rounds and their medians for one section
  table.py      the summary over rounds and the printed table
  command.py    the command line the scripts run (``main``)

peers_pg.py and peers_brokers.py import only this package; peers.py imports it and their
systems, for its one run of every section.
"""
