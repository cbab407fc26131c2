"""The tree search: the solver, finished games, tree reuse, batches and their in-flight visits, stopping."""

from __future__ import annotations

import threading
import time

import chess
import numpy as np
import pytest

from engine.board import convert
from engine.evaluators.rollout import RolloutEvaluator
from engine.params import Params
from engine.search.search import Search
from engine.search.timeman import Limits
from engine.search.tree import DRAW, LOSS, WIN, Batch, Tree
from fakes import Batching, Scripted, UniformNetwork

# Leaves a batch gathers (MinibatchSize) in the tests whose evaluators take batches.
BATCH = 16


def fresh_tree(fen: str = chess.STARTING_FEN, moves: tuple = ()) -> Tree:
    board = chess.Board(fen)
    states = [board.copy(stack=False)]
    for m in moves:
        board.push_uci(m)
        states.append(board.copy(stack=False))
    tree = Tree()
    tree.set_position(fen, states, [chess.Move.from_uci(m) for m in moves])
    return tree


def chess_search(fen, simulations, evaluator=None, moves=(), **params):
    tree = fresh_tree(fen, moves)
    # The tree's own mechanisms: no root probe taking a share of the simulations (tests/test_tactics.py has it).
    s = Search(tree, evaluator or Scripted(), Params(minibatch_size=BATCH, simulations=simulations,
                                                     tactical_probe_share=0.0, **params))
    best, ponder = s.run(Limits())
    return best, tree, s


def child_of(tree, node, move):
    """The child of ``node`` reached by the python-chess ``move`` from the root's position."""
    return node.child(convert.core_move(tree.root_state(), move))


def assert_nothing_in_flight(node):
    assert node.in_flight == 0
    for c in node.children:
        assert_nothing_in_flight(c)


def test_solver_proves_mate_in_two_and_reports_it():
    best, tree, s = chess_search("r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 10", 3000)
    assert best == chess.Move.from_uci("d5f6")
    assert tree.root_node.proven == LOSS  # lost for the player who moved into the root: White wins
    line = s.lines()[0]
    assert line.mate == 2 and [m.uci() for m in line.pv[:3]] == ["d5f6", "g7f6", "c4f7"]


def test_solver_defends_against_mate_and_reports_being_mated():
    # Black's only move Kb8 is met by Rh8#: being mated is reported as a negative mate.
    best, tree, s = chess_search("k7/8/1K6/8/8/8/8/7R b - - 0 1", 2000)
    assert best == chess.Move.from_uci("a8b8")
    assert tree.root_node.proven == WIN  # won for White, who moved into the root
    assert s.lines()[0].mate == -1


@pytest.mark.parametrize("fen, best", [
    ("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1", "d1d8"),              # back rank
    ("k7/8/1K6/8/8/8/8/7R w - - 0 1", "h1h8"),                        # rook mate
    ("7k/5Q2/6K1/8/8/8/8/8 w - - 0 1", "f7g7"),                       # not Qf8 stalemate-prone: mate
])
def test_rollouts_find_the_mate_in_one(fen, best):
    """UCB1 with random playouts (the evaluator that knows nothing) finds the mate: the expansion puts it first."""
    found, tree, _ = chess_search(fen, 300, RolloutEvaluator(seed=1))
    assert found == chess.Move.from_uci(best) and tree.root_node.proven == LOSS


def test_stalemate_and_repetition_are_draws():
    # Qg7 stalemates? No: the search must never choose stalemate when mate is there.
    best, tree, _ = chess_search("7k/8/6K1/8/8/8/8/5Q2 w - - 0 1", 1500)
    assert best is not None and tree.root_node.proven == LOSS   # a mate in one or two is found, not a stalemate
    stalemate = child_of(tree, tree.root_node, chess.Move.from_uci("f1f7"))
    assert stalemate is None or stalemate.proven in (None, DRAW)
    # Playing a1b1 again repeats a position of the game: that child is a proven draw.
    moves = ("a1b1", "h8g8", "b1a1", "g8h8")
    best, tree, _ = chess_search("7k/7p/8/8/8/8/8/K6R w - - 0 1", 200, moves=moves)
    child = child_of(tree, tree.root_node, chess.Move.from_uci("a1b1"))
    assert child is not None and child.proven == DRAW and child.terminal


def test_fifty_move_rule_and_insufficient_material_are_terminal():
    # Any move but a capture or pawn move reaches the hundredth half-move: every such child is a proven draw.
    best, tree, _ = chess_search("8/8/4k3/8/8/4K3/4P3/8 w - - 99 80", 300)
    for c in tree.root_node.children:
        move = tree.chess_move(c.move)
        if not tree.root_state().is_zeroing(move) and c.n:
            assert c.proven == DRAW and c.terminal, move
    # KN v K: the capture of the last pawn leaves dead material.
    best, tree, _ = chess_search("8/8/4k3/8/3p4/4K3/8/6N1 w - - 0 1", 300)
    take = child_of(tree, tree.root_node, chess.Move.from_uci("e3d4"))
    assert take is not None and take.proven == DRAW and take.terminal


def test_every_node_s_moves_are_python_chess_s_legal_moves():
    """The compiled board's moves, castling, en passant and promotions among them, read as python-chess's."""
    for fen in ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
                "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
                "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1"):
        _, tree, _ = chess_search(fen, 400, Batching())
        todo = [(tree.root_node, chess.Board(fen))]
        checked = 0
        while todo:
            node, board = todo.pop()
            if node.moves is None:
                continue
            moves = [convert.chess_move(board, m) for m in node.moves]
            assert sorted(m.uci() for m in moves) == sorted(m.uci() for m in board.legal_moves), board.fen()
            checked += 1
            for c in node.children:
                after = board.copy(stack=False)
                after.push(convert.chess_move(board, c.move))
                todo.append((c, after))
        assert checked > 20


def test_tree_reuse_keeps_the_subtree():
    tree = fresh_tree()
    start = chess.Board()
    s = Search(tree, Scripted(), Params(simulations=2000))
    best, ponder = s.run(Limits())
    child = child_of(tree, tree.root_node, best)
    after = start.copy()
    after.push(best)
    grandchild = child.child(convert.core_move(after, ponder))
    kept = grandchild.n
    states = [start.copy(stack=False), after.copy(stack=False)]
    after.push(ponder)
    states.append(after.copy(stack=False))
    reused = tree.set_position(start.fen(), states, [best, ponder])
    assert reused == kept > 0 and tree.root_node == grandchild and tree.root_node.n == kept
    # A position that does not extend the game starts a fresh tree.
    other = chess.Board()
    other.push_uci("a2a3")
    assert tree.set_position(start.fen(), [start.copy(stack=False), other.copy(stack=False)],
                             [chess.Move.from_uci("a2a3")]) == 0
    assert tree.root_node.n == 0


def test_a_reused_tree_frees_the_rest():
    """The subtree kept, every other node goes back to the free list (the tree's memory does not grow move by
    move)."""
    tree = fresh_tree()
    s = Search(tree, Scripted(), Params(simulations=3000, tactical_probe_share=0.0))
    best, ponder = s.run(Limits())
    live_before = tree.nodes.live
    board = chess.Board()
    states = [board.copy(stack=False)]
    board.push(best)
    states.append(board.copy(stack=False))
    tree.set_position(chess.STARTING_FEN, states, [best])
    count = 0
    todo = [tree.root_node]
    while todo:
        node = todo.pop()
        count += 1
        todo.extend(node.children)
    assert tree.nodes.live == count < live_before


def test_tree_reuse_through_uci(raw):
    raw.send("position startpos")
    raw.send("go nodes 3000")
    lines = raw.read_until("bestmove")
    bestmove = lines[-1].split()
    assert bestmove[2] == "ponder"
    raw.send(f"position startpos moves {bestmove[1]} {bestmove[3]}")
    raw.send("go nodes 100")
    lines = raw.read_until("bestmove")
    reused = [line for line in lines if line.startswith("info string reused")]
    assert reused and int(reused[0].split()[3]) > 0
    raw.send("ucinewgame")
    raw.send(f"position startpos moves {bestmove[1]} {bestmove[3]}")
    raw.send("go nodes 100")
    lines = raw.read_until("bestmove")
    assert not any(line.startswith("info string reused") for line in lines)


def test_batched_search_matches_contract():
    """A batching evaluator gets batches, in-flight counts return to zero, and the result is sound."""
    ev = Batching()
    best, tree, s = chess_search("r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 10", 3000, ev)
    assert best == chess.Move.from_uci("d5f6")
    assert max(ev.sizes) > 1
    assert_nothing_in_flight(tree.root_node)


def test_a_network_search_counts_every_visit_once():
    ev = UniformNetwork()
    best, tree, s = chess_search(chess.STARTING_FEN, 1000, ev)
    assert tree.root_node.n == s.playouts == 1000
    assert max(ev.sizes) > 1
    assert_nothing_in_flight(tree.root_node)


class StopDuringEvaluation(UniformNetwork):
    """A network that raises ``stop`` inside its ``stop_at``-th batch after the root's, and holds that batch until the
    search has answered: however the threads are scheduled, the stop lands with batches out."""

    def __init__(self, stop_at: int) -> None:
        super().__init__()
        self.stop_at, self.stop, self.answered = stop_at, threading.Event(), threading.Event()
        self.started = 0
        self.lock = threading.Lock()

    def run_planes(self, planes):
        with self.lock:
            self.started += 1
            held = self.started == self.stop_at + 1   # (the first batch is the root's own evaluation)
        if held:
            self.stop.set()
            self.answered.wait(5.0)
        return super().run_planes(planes)


@pytest.mark.parametrize("stop_at", [1, 2, 7])
def test_stop_during_an_evaluation_leaves_nothing_in_flight(stop_at):
    """A stop that arrives while the network works drops the batches out, so the kept tree has no visits stuck in
    flight: they would count as collisions in every later search and block those lines for good. The evaluation that
    comes back after the search answered changes nothing."""
    tree = fresh_tree()
    ev = StopDuringEvaluation(stop_at)
    # Two cores: the batches run on threads of their own.
    s = Search(tree, ev, Params(minibatch_size=BATCH, tactical_probe_share=0, threads=2))
    ev.stop = s.stop_event
    s.run(Limits(infinite=True))
    assert_nothing_in_flight(tree.root_node)
    visits = tree.root_node.n
    assert s.playouts == visits
    ev.answered.set()
    time.sleep(0.2)
    assert tree.root_node.n == visits
    assert_nothing_in_flight(tree.root_node)
    s.close()


class StopInsideEvaluation(UniformNetwork):
    """A network that raises ``stop`` inside its ``stop_at``-th batch and records the threads it ran on."""

    def __init__(self, stop_at: int) -> None:
        super().__init__()
        self.stop_at, self.stop, self.threads = stop_at, threading.Event(), set()

    def run_planes(self, planes):
        self.threads.add(threading.get_ident())
        if self.batches == self.stop_at:   # (the first batch is the root's own evaluation, before the loop)
            self.stop.set()
        return super().run_planes(planes)


@pytest.mark.parametrize("stop_at", [1, 2, 7])
def test_threads_1_evaluates_on_the_search_thread_and_stops_clean(stop_at):
    """Threads=1: every batch runs on the search's own thread (no second core), and a stop raised during one
    still leaves nothing in flight."""
    tree = fresh_tree()
    ev = StopInsideEvaluation(stop_at)
    s = Search(tree, ev, Params(minibatch_size=BATCH, tactical_probe_share=0, threads=1))
    ev.stop = s.stop_event
    s.run(Limits(infinite=True))
    assert ev.threads == {threading.get_ident()}
    assert ev.batches == stop_at + 1
    assert_nothing_in_flight(tree.root_node)
    assert s.playouts == tree.root_node.n


class InFlightAtEachBatch(UniformNetwork):
    """A network that records, as each batch starts, its size and the visits in flight at the root."""

    def __init__(self, tree: Tree) -> None:
        super().__init__()
        self.tree, self.seen = tree, []

    def run_planes(self, planes):
        self.seen.append((len(planes), self.tree.root_node.in_flight))
        time.sleep(0.005)   # (long enough that the next batch is gathered meanwhile)
        return super().run_planes(planes)


@pytest.mark.parametrize("threads, held_back", [(1, False), (2, True)])
def test_one_core_backs_up_each_batch_before_gathering_the_next(threads, held_back):
    """On one core a batch is evaluated where it is gathered, so it is backed up before the next is gathered:
    only its own leaves are in flight. With two cores, two batches are in flight at once."""
    tree = fresh_tree()
    ev = InFlightAtEachBatch(tree)
    params = Params(minibatch_size=BATCH, tactical_probe_share=0, threads=threads, simulations=400)
    s = Search(tree, ev, params)
    s.run(Limits())
    s.close()
    assert len(ev.seen) > 10
    if held_back:
        assert any(in_flight > size for size, in_flight in ev.seen[1:])
    else:
        assert all(in_flight == size for size, in_flight in ev.seen[1:])
    assert_nothing_in_flight(tree.root_node)


class SlowNetwork(UniformNetwork):
    """A network whose every position costs ``seconds``, batch or not."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds, self.started = seconds, 0

    def run_planes(self, planes):
        self.started += 1
        time.sleep(self.seconds * len(planes))
        return super().run_planes(planes)


def test_spent_clock_answers_without_a_batch():
    """Below MoveOverhead the plan is zero: the move comes from the root's priors at once, not
    after a network batch that costs more than a small increment gives back."""
    ev = UniformNetwork()
    tree = fresh_tree()
    best, _ = Search(tree, ev, Params(minibatch_size=BATCH)).run(Limits(wtime=20, btime=20, winc=10, binc=10))
    assert best in chess.Board().legal_moves and ev.batches == 1   # the root's own evaluation alone


def test_hard_limit_does_not_wait_for_a_slow_batch():
    """A batch still on the network at the hard limit is dropped, not waited for."""
    ev = SlowNetwork(0.15)
    tree = fresh_tree()
    s = Search(tree, ev, Params(minibatch_size=BATCH, tactical_probe_share=0, threads=2))
    start = time.monotonic()
    best, _ = s.run(Limits(movetime=300))
    assert time.monotonic() - start < 1.0 and ev.started >= 2   # the root's batch, and one dropped
    assert best in chess.Board().legal_moves
    assert_nothing_in_flight(tree.root_node)
    s.close()


def test_threads_1_sizes_batches_to_the_time_left():
    """Threads=1 runs a batch on the search thread, where it cannot be dropped at the hard limit: with 40 ms a
    leaf, a full batch (0.64 s) would overrun a 300 ms move, so batches shrink to what the clock has left."""
    ev = SlowNetwork(0.04)
    tree = fresh_tree()
    s = Search(tree, ev, Params(minibatch_size=BATCH, tactical_probe_share=0, threads=1))
    start = time.monotonic()
    best, _ = s.run(Limits(movetime=300))
    elapsed = time.monotonic() - start
    assert best in chess.Board().legal_moves
    assert ev.sizes and max(ev.sizes[1:] or [0]) < BATCH
    assert elapsed < 0.3 + 0.2, elapsed  # at most about one leaf past the limit, with room for a busy machine
    assert_nothing_in_flight(tree.root_node)


def test_gather_ends_when_no_descent_needs_the_network():
    """Three plies before the fifty-move rule nearly every descent ends in a draw. A gather still
    ends after a batch's room of such visits, so the clock is looked at between gathers (it
    used to gather until the root was proven: 88,000 visits and half a second, a lost game at
    10 s + 0.1 s)."""
    tree = fresh_tree("7B/1Nk5/8/2K5/8/8/8/8 w - - 97 112")
    ev = UniformNetwork()
    s = Search(tree, ev, Params(minibatch_size=BATCH))
    s.run(Limits(nodes=2500))  # deep enough that most descents end in a draw
    batch = Batch(BATCH, True)
    for _ in range(50):
        before = tree.playouts
        tree.gather(batch, BATCH)
        assert tree.playouts - before <= 2 * BATCH  # network leaves and settled visits
        tree.abandon(batch)
    assert_nothing_in_flight(tree.root_node)


def test_batched_search_ends_when_the_root_is_proven():
    """A mate in one is proven at the root's expansion; gathering must not spin on it."""
    best, tree, s = chess_search("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1", 800, UniformNetwork())
    assert best == chess.Move.from_uci("d1d8") and tree.root_node.proven == LOSS


def test_a_network_that_answers_nan_leaves_the_tree_searchable():
    """NaN from a net (int8 saturating, a damaged file) compares false with everything: in the tree it left a node
    with no child to choose. A row with NaN counts as an even position with even priors instead."""

    class Overflowing(UniformNetwork):
        def run_planes(self, planes):
            policy, values, draws = super().run_planes(planes)
            policy[::2] = np.nan
            values[1::3], draws[2::3] = np.nan, np.inf
            return policy, values, draws

    best, tree, s = chess_search(chess.STARTING_FEN, 1000, Overflowing())
    root = tree.root_node
    assert best in chess.Board().legal_moves and root.n == s.playouts == 1000
    assert np.isfinite(root.q) and all(np.isfinite(c.q) for c in root.children if c.n)
    assert_nothing_in_flight(root)


def test_batches_fill_when_the_policy_favours_one_line():
    """A collision keeps its in-flight visits until the gather ends, so the next descents turn
    elsewhere and the batch fills; released at once, every later descent repeated it."""

    class Peaked(UniformNetwork):
        def run_planes(self, planes):
            policy, values, draws = super().run_planes(planes)
            return policy + np.linspace(3.0, 0.0, policy.shape[1], dtype=np.float32), values, draws

    ev = Peaked()
    chess_search(chess.STARTING_FEN, 800, ev)
    assert sum(ev.sizes[1:]) / len(ev.sizes[1:]) > 12, ev.sizes


def test_go_nodes_counts_exactly_whatever_the_batch():
    for batch in (1, 7, 16):
        ev = UniformNetwork()
        tree = fresh_tree()
        s = Search(tree, ev, Params(minibatch_size=batch, tactical_probe_share=0))
        s.run(Limits(nodes=333))
        assert s.playouts == 333 == tree.root_node.n
