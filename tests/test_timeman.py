"""Time allocation: within the clock, proportionate, and movetime respected."""

from engine.timeman import Limits, allocate


def test_budget_never_exceeds_the_clock():
    for clock in (50, 200, 1000, 10_000, 300_000):
        for inc in (0, 10, 100, 2000):
            for mtg in (None, 1, 2, 40):
                b = allocate(Limits(wtime=clock, btime=clock, winc=inc, binc=inc, movestogo=mtg), True, 100)
                assert 0 <= b.target <= b.hard <= max(clock - 100, 0) / 1000 + 1e-9


def test_budget_grows_with_time_and_uses_the_right_clock():
    short = allocate(Limits(wtime=10_000, btime=60_000), True, 0)
    long = allocate(Limits(wtime=60_000, btime=10_000), True, 0)
    black = allocate(Limits(wtime=10_000, btime=60_000), False, 0)
    assert short.target < long.target and abs(black.target - long.target) < 1e-9


def test_movetime_and_unlimited():
    b = allocate(Limits(movetime=1000), True, 100)
    assert b.hard == b.target == 0.9
    assert not b.prune  # UCI: search exactly movetime; smart pruning is for the clock only
    assert allocate(Limits(wtime=60_000, btime=60_000), True, 100).prune
    assert allocate(Limits(), True, 100).hard is None
