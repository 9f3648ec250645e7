"""decode_ab.py - what ``store/rows.py``'s ``decode`` saves against plain ``json.loads``.

``decode`` calls the C scanner that ``json.loads`` ends up in directly, and falls back to
``json.loads`` for anything the scanner does not read whole. This times both on the JSON
texts a job typically carries (alternating A B A B, best of the rounds, so the machine's
noise hits both alike) and prints nanoseconds per call and the ratio:

    python bench/decode_ab.py

For a count that does not drift with the machine's load, the instruction guard
(``tests/perf``) shows the effect on a whole job: 8,100 instructions less per job drained
through the API or by a Worker on SQLite (433,600 -> 425,400; 300,300 -> 292,200), 9,100 on
PostgreSQL.
"""
from __future__ import annotations

import json
import timeit

from jobq_core.store.rows import decode

TEXTS = {"null": "null", "small object": '{"i": 12345}',
         "email payload": json.dumps({"to": "ana@example.com", "template": "welcome",
                                      "vars": {"name": "Ana", "plan": "pro"}},
                                     separators=(",", ":")),
         "list of 20 ints": json.dumps(list(range(20)), separators=(",", ":"))}


def best(fn, text: str, number: int = 100_000, rounds: int = 7) -> float:
    return min(timeit.repeat(lambda: fn(text), number=number, repeat=rounds)) / number * 1e9


def main() -> None:
    print(f"{'text':<18}{'json.loads':>12}{'decode':>10}{'ratio':>8}")
    for name, text in TEXTS.items():
        assert decode(text) == json.loads(text)
        a, b = [], []
        for _ in range(3):  # alternate: A B A B A B
            a.append(best(json.loads, text))
            b.append(best(decode, text))
        print(f"{name:<18}{min(a):>10.0f}ns{min(b):>8.0f}ns{min(a) / min(b):>7.2f}x")


if __name__ == "__main__":
    main()
