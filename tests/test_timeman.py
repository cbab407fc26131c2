"""Time allocation: within the clock, proportionate, and movetime respected."""

import pytest

from engine.search.timeman import Budget, Limits, TimeManager, allocate, moves_left


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


def test_a_game_that_has_gone_on_plans_fewer_moves_left():
    clock = Limits(wtime=10_000, btime=10_000, winc=100, binc=100)
    early, late = allocate(clock, True, 0, fullmove=1), allocate(clock, True, 0, fullmove=80)
    assert late.target > early.target
    assert moves_left(1) > moves_left(80) == moves_left(400) >= 1
    # movestogo from the GUI caps the plan (the control's last moves get the time that is left)
    assert allocate(Limits(wtime=10_000, btime=10_000, movestogo=2), True, 0).target > late.target


def test_time_manager_spends_what_smart_pruning_saved():
    """Searches that stop at a fraction of their plan make the next plans longer, up to a limit, so
    that the clock is spent by the end of the game; movetime and stopped searches teach nothing."""
    clock = Limits(wtime=10_000, btime=10_000, winc=100, binc=100)
    tm = TimeManager()
    first = tm.allocate(clock, True, 100, fullmove=10)
    for _ in range(50):
        tm.record(tm.allocate(clock, True, 100, fullmove=10), elapsed=0.0)
    spent_nothing = tm.allocate(clock, True, 100, fullmove=10)
    assert spent_nothing.target > first.target
    assert spent_nothing.target == allocate(clock, True, 100, fullmove=10, used_share=0.3).target
    assert spent_nothing.hard <= 9.9 * 0.35 + 1e-9
    tm.record(Budget(1.0, 1.0, True), elapsed=0.001)   # movetime: exact by definition
    assert tm.used_share == 0.3
    for _ in range(100):
        b = tm.allocate(clock, True, 100, fullmove=10)
        tm.record(b, elapsed=b.target * 2)   # overran the plan (best move unsettled)
    assert tm.used_share == pytest.approx(1.0, abs=1e-3)
    tm.new_game()
    assert tm.allocate(clock, True, 100, fullmove=10).target == first.target
    # a nearly spent clock still keeps to its share of what is left
    short = TimeManager().allocate(Limits(wtime=500, btime=500), True, 100, fullmove=20)
    assert short.target <= short.hard <= 0.4 * 0.35 + 1e-9


def test_the_search_clock_runs_from_the_go_not_from_the_search_start():
    """A second spent before the search began (a network loading) is the engine's time too, as in Stockfish."""
    import time

    import chess

    from engine.evaluators.heuristic import HeuristicEvaluator
    from engine.params import Params
    from engine.search.search import Search
    from engine.search.tree import Tree
    results = []
    for late in (0.0, 1.0):
        tree = Tree()
        tree.set_position(chess.STARTING_FEN, [chess.Board()], [])
        search = Search(tree, HeuristicEvaluator(), Params(tactical_probe_share=0))
        began = time.monotonic()
        best, _ = search.run(Limits(movetime=1500, received=began - late))
        results.append(time.monotonic() - began)
        search.close()
        assert best in chess.Board().legal_moves
    assert results[0] > 1.0 and results[1] < results[0] - 0.6, results
