"""The refresh pacer: the interval stretches for refreshes that keep costing, not for the
one costly read every monitor starts with."""
from types import SimpleNamespace

from jobq_tui.pacer import RefreshPacer


def read(cpu: float) -> SimpleNamespace:
    return SimpleNamespace(read_cpu=cpu, reused=False)


def test_the_first_read_after_the_start_does_not_stretch_the_interval():
    p = RefreshPacer(1.0)
    assert p.polled(read(0.1), None) == 1.0  # cold: 0.1 s of CPU once
    assert p.polled(read(0.01), None) == 1.0
    assert p.polled(read(0.01), None) == 1.0


def test_reads_that_keep_costing_stretch_it_and_cheap_ones_bring_it_back():
    p = RefreshPacer(1.0)
    p.polled(read(0.002), None)
    assert p.polled(read(0.1), None) == 1.0  # one costly read among cheap ones: not yet
    assert p.polled(read(0.1), None) == 5.0  # two: 0.1 s of CPU is 2 % of a core every 5 s
    p.polled(read(0.01), None)
    assert p.polled(read(0.01), None) == 1.0
