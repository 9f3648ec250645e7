"""A producer process: enqueue_many bursts, logging every acknowledged batch.

    python producer.py DB HISTORY BATCHES BATCH_SIZE
"""
import sys

from history import HistoryWriter

from jobq_core import Queue


def main(db: str, history_path: str, batches: int, size: int) -> None:
    history = HistoryWriter(history_path)
    with Queue(db) as q:
        for b in range(batches):
            ids = q.enqueue_many([("work", {"batch": b, "i": i, "ms": 1}) for i in range(size)])
            history.write("enqueued", ids=ids, batch=b)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
