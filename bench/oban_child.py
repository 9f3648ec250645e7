"""The Oban peer's side in Oban's own interpreter: Oban for Python needs Python 3.12 or
newer, so pg_oban.py (in the bench's interpreter) runs this script in a virtual
environment of its own (bench/.venv-oban) and talks to it over its standard streams.

  oban_child.py install URL           Oban's tables (oban.schema.install)
  oban_child.py enqueue URL N         N jobs, Oban.enqueue() each; prints {"wall_s": ...}
  oban_child.py batch URL N SIZE      N jobs, Oban.enqueue_many() SIZE at a time; the same
  oban_child.py drain URL SLOTS       a worker (queue 'default', SLOTS at once): prints
                                      "ready", starts on "go" from stdin, prints each job's
                                      number as its no-op handler runs it, stops on "stop"
                                      and prints "end"

It imports only oban (and psycopg, which oban brings), never jobq or the harness.
"""
import asyncio
import json
import os
import sys
import time

from oban import Oban, worker


@worker(queue="default")
class Noop:
    """The no-op job: note its number on stdout (one write per job, as the broker peers'
    handlers write theirs to a file)."""

    async def process(self, job):
        os.write(1, b"%d\n" % job.args["i"])


async def install(url):
    from oban.schema import install as install_schema
    pool = await Oban.create_pool(url)
    try:
        await install_schema(pool)
    finally:
        await pool.close()


async def enqueue(url, n, size=None):
    pool = await Oban.create_pool(url)
    try:
        oban = Oban(pool=pool)
        t0 = time.perf_counter()
        if size is None:
            for i in range(n):
                await oban.enqueue(Noop.new({"i": i}))
        else:
            for lo in range(0, n, size):
                await oban.enqueue_many([Noop.new({"i": i}) for i in range(lo, min(n, lo + size))])
        wall = time.perf_counter() - t0
    finally:
        await pool.close()
    print(json.dumps({"wall_s": wall}), flush=True)


async def drain(url, slots):
    loop = asyncio.get_running_loop()
    pool = await Oban.create_pool(url)
    try:
        oban = Oban(pool=pool, queues={"default": slots})
        print("ready", flush=True)
        await loop.run_in_executor(None, sys.stdin.readline)          # "go"
        await oban.start()
        await loop.run_in_executor(None, sys.stdin.readline)          # "stop"
        await oban.stop()
    finally:
        await pool.close()
    print("end", flush=True)


def main(argv):
    cmd, url = argv[0], argv[1]
    if cmd == "install":
        asyncio.run(install(url))
    elif cmd == "enqueue":
        asyncio.run(enqueue(url, int(argv[2])))
    elif cmd == "batch":
        asyncio.run(enqueue(url, int(argv[2]), int(argv[3])))
    elif cmd == "drain":
        asyncio.run(drain(url, int(argv[2])))
    else:
        raise SystemExit(f"unknown command {cmd!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
