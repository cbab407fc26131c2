"""The tree search on exactly solvable games, the solver, and tree reuse."""

from __future__ import annotations

import threading
import time

import chess
import pytest

from engine.evaluators.base import Evaluator, Leaf
from engine.evaluators.rollout import RolloutEvaluator
from engine.board.game import ChessGame
from engine.params import Params
from engine.search.search import Search
from engine.search.timeman import Limits
from engine.search.tree import DRAW, LOSS, WIN, Tree
from toy_games import connect2, tictactoe

# Leaves a batch gathers (MinibatchSize) in the tests whose evaluators take batches.
BATCH = 16


class UniformRollout(RolloutEvaluator):
    """Uniform priors with a random playout, but searched with PUCT instead of UCB1."""

    uct = False


def search(game, state, evaluator, simulations, **params):
    tree = Tree(game)
    tree.set_position(0, [state], [])
    s = Search(game, tree, evaluator, Params(simulations=simulations, **params))
    best, _ = s.run(Limits())
    return best, tree.root, s


def minimax_best_moves(game, state):
    value = game.minimax(state)
    return {m for m in game.legal_moves(state) if -game.minimax(game.play(state, m)) == value}


@pytest.mark.parametrize("make_evaluator", [RolloutEvaluator, UniformRollout])
def test_connect2_every_state(make_evaluator):
    """From every non-terminal Connect2 state the search finds a best move and the exact value."""
    game = connect2()
    checked = 0
    for state in game.states():
        moves = game.legal_moves(state)
        if game.result(state, moves) is not None:
            continue
        best, root, _ = search(game, state, make_evaluator(game), 400)
        assert best in minimax_best_moves(game, state), state
        # The solver settles every Connect2 position: the root's value is exact.
        assert root.proven is not None and -root.proven == game.minimax(state), state
        checked += 1
    assert checked > 10


TICTACTOE_POSITIONS = [
    # (cells, player): 1 = X, -1 = O
    ((1, 1, 0, -1, -1, 0, 0, 0, 0), 1),     # X wins at once with 2
    ((1, 1, 0, -1, 0, 0, 0, 0, 0), -1),     # O must block at 2
    ((1, 0, 0, 0, -1, 0, 0, 0, 1), -1),     # O must take an edge, not a corner
    ((0, 0, 0, 0, 1, 0, 0, 0, 0), -1),      # O must take a corner
    ((1, 0, 0, 0, 0, 0, 0, 0, 0), -1),      # O must take the centre
]


@pytest.mark.parametrize("state", TICTACTOE_POSITIONS)
@pytest.mark.parametrize("make_evaluator", [RolloutEvaluator, UniformRollout])
def test_tictactoe_best_move_and_value(state, make_evaluator):
    game = tictactoe()
    best, root, _ = search(game, state, make_evaluator(game), 6000)
    assert best in minimax_best_moves(game, state)
    exact = game.minimax(state)
    best_child = root.ranked_children()[0]
    assert abs(best_child.q - exact) < 0.25, (best_child.q, exact)


def test_tictactoe_value_converges_with_more_simulations():
    game = tictactoe()
    state = TICTACTOE_POSITIONS[3][0], -1
    errors = []
    for sims in (300, 20000):
        _, root, _ = search(game, state, RolloutEvaluator(game, seed=1), sims)
        errors.append(abs(root.ranked_children()[0].q - game.minimax(state)))
    assert errors[1] < 0.1 and errors[1] <= errors[0]


class Scripted(Evaluator):
    """Heuristic-free chess evaluator: uniform priors, value 0; lets tests see the search alone."""

    name = "scripted"

    def evaluate(self, leaves: list[Leaf]) -> None:
        for leaf in leaves:
            leaf.priors = [1.0 / len(leaf.moves)] * len(leaf.moves)
            leaf.value = 0.0


def child_of(node, move):
    """The child of ``node`` reached by the chess move ``move`` (nodes name moves by id)."""
    return node.child(ChessGame.move_ids([move])[0])


def chess_search(fen, simulations, evaluator=None, moves=()):
    game = ChessGame()
    board = chess.Board(fen)
    states = [board.copy(stack=False)]
    for m in moves:
        states.append(game.play(states[-1], chess.Move.from_uci(m)))
    tree = Tree(game)
    tree.set_position(fen, states, [chess.Move.from_uci(m) for m in moves])
    # The tree's own mechanisms: no root probe taking a share of the simulations (tests/test_tactics.py has it).
    s = Search(game, tree, evaluator or Scripted(), Params(minibatch_size=BATCH, simulations=simulations,
                                                           tactical_probe_share=0.0))
    best, ponder = s.run(Limits())
    return best, tree, s


def test_solver_proves_mate_in_two_and_reports_it():
    best, tree, s = chess_search("r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 10", 3000)
    assert best == chess.Move.from_uci("d5f6")
    assert tree.root.proven == LOSS  # lost for the player who moved into the root: White wins
    line = s.lines()[0]
    assert line.mate == 2 and [m.uci() for m in line.pv[:3]] == ["d5f6", "g7f6", "c4f7"]


def test_solver_defends_against_mate_and_reports_being_mated():
    # Black's only move Kb8 is met by Rh8#: being mated is reported as a negative mate.
    best, tree, s = chess_search("k7/8/1K6/8/8/8/8/7R b - - 0 1", 2000)
    assert best == chess.Move.from_uci("a8b8")
    assert tree.root.proven == WIN  # won for White, who moved into the root
    assert s.lines()[0].mate == -1


def test_stalemate_and_repetition_are_draws():
    game = ChessGame()
    stalemate = chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    assert game.result(stalemate, game.legal_moves(stalemate)) == 0.0
    board = chess.Board("7k/7p/8/8/8/8/8/K6R w - - 0 1")   # (a lone king's ending would steer away from a1b1)
    moves = ["a1b1", "h8g8", "b1a1", "g8h8"]
    best, tree, s = chess_search(board.fen(), 200, moves=moves)
    # Playing a1b1 again repeats a position of the game: that child is a proven draw.
    child = child_of(tree.root, chess.Move.from_uci("a1b1"))
    assert child is not None and child.proven == DRAW and child.terminal


def test_fifty_move_rule_and_insufficient_material_are_terminal():
    game = ChessGame()
    b = chess.Board("8/8/4k3/8/8/4K3/8/8 w - - 0 1")
    assert game.result(b, game.legal_moves(b)) == 0.0
    b = chess.Board("8/8/4k3/8/8/4K3/4P3/8 w - - 100 80")
    assert game.result(b, game.legal_moves(b)) == 0.0
    b = chess.Board("8/8/4k3/8/8/4K3/4P3/8 w - - 99 80")
    assert game.result(b, game.legal_moves(b)) is None


def test_tree_reuse_keeps_the_subtree():
    game = ChessGame()
    tree = Tree(game)
    start = chess.Board()
    tree.set_position(start.fen(), [start.copy(stack=False)], [])
    s = Search(game, tree, Scripted(), Params(simulations=2000))
    best, ponder = s.run(Limits())
    child = child_of(tree.root, best)
    grandchild = child_of(child, ponder)
    kept = grandchild.n
    states = [start.copy(stack=False), game.play(start, best)]
    states.append(game.play(states[-1], ponder))
    reused = tree.set_position(start.fen(), states, [best, ponder])
    assert reused == kept > 0 and tree.root is grandchild and tree.root.move is None
    # A position that does not extend the game starts a fresh tree.
    other = chess.Board()
    other.push_uci("a2a3")
    assert tree.set_position(start.fen(), [start.copy(stack=False), other.copy(stack=False)],
                             [chess.Move.from_uci("a2a3")]) == 0
    assert tree.root.n == 0


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

    class Batching(Scripted):
        batch_size = 16
        sizes: list = []

        def evaluate(self, leaves):
            self.sizes.append(len(leaves))
            super().evaluate(leaves)

    ev = Batching()
    best, tree, s = chess_search("r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 10", 3000, ev)
    assert best == chess.Move.from_uci("d5f6")
    assert max(ev.sizes) > 1

    def walk(node):
        assert node.in_flight == 0
        for c in node.children:
            walk(c)
    walk(tree.root)


def fresh_tree(fen: str = chess.STARTING_FEN) -> tuple[ChessGame, Tree]:
    game = ChessGame()
    tree = Tree(game)
    tree.set_position(fen, [chess.Board(fen)], [])
    return game, tree


def assert_nothing_in_flight(node):
    assert node.in_flight == 0
    for c in node.children:
        assert_nothing_in_flight(c)


class StopDuringEvaluation(Scripted):
    """A batching evaluator that raises ``stop`` while the search waits for batch ``stop_at``,
    having gathered the next one meanwhile (the search's k-th wait is for the k-th batch), and
    finishes that batch only once the search has given up waiting: however the threads are
    scheduled, the stop lands during the wait."""

    batch_size = 16

    def __init__(self, stop_at: int) -> None:
        self.stop_at, self.batches, self.stop = stop_at, 0, threading.Event()
        self.waits = 0
        self.waiting, self.gave_up = threading.Event(), threading.Event()

    def watch(self, search: Search) -> None:
        self.stop = search.stop_event
        wait = search._wait

        def counted(future):
            self.waits += 1
            if self.waits == self.stop_at:
                self.waiting.set()
            finished = wait(future)
            if not finished:
                self.gave_up.set()
            return finished
        search._wait = counted

    def run(self, prepared):
        self.batches += 1
        if self.batches == self.stop_at:
            self.waiting.wait(5.0)
            self.stop.set()
            self.gave_up.wait(5.0)
        return super().run(prepared)


@pytest.mark.parametrize("stop_at", [1, 2, 7])
def test_stop_during_an_evaluation_leaves_nothing_in_flight(stop_at):
    """A stop that arrives while the network works drops both the batch it works on and the one
    gathered meanwhile, so the kept tree has no visits stuck in flight: they would count as
    collisions in every later search and block those lines for good."""
    game, tree = fresh_tree()
    ev = StopDuringEvaluation(stop_at)
    # The batch runs on its own thread.
    s = Search(game, tree, ev, Params(minibatch_size=BATCH, tactical_probe_share=0, threads=2))
    ev.watch(s)
    s.run(Limits(infinite=True))
    assert ev.batches == stop_at and ev.waits == stop_at
    assert_nothing_in_flight(tree.root)
    assert s.playouts == tree.root.n


class StopInsideEvaluation(Scripted):
    """A batching evaluator that raises ``stop`` inside its ``stop_at``-th batch and records the threads it ran on."""

    batch_size = 16

    def __init__(self, stop_at: int) -> None:
        self.stop_at, self.batches, self.stop, self.threads = stop_at, 0, threading.Event(), set()

    def run(self, prepared):
        self.batches += 1
        self.threads.add(threading.get_ident())
        if self.batches == self.stop_at:
            self.stop.set()
        return super().run(prepared)


@pytest.mark.parametrize("stop_at", [1, 2, 7])
def test_threads_1_evaluates_on_the_search_thread_and_stops_clean(stop_at):
    """Threads=1: every batch runs on the search's own thread (no second core), and a stop raised during one
    still leaves nothing in flight."""
    game, tree = fresh_tree()
    ev = StopInsideEvaluation(stop_at)
    s = Search(game, tree, ev, Params(minibatch_size=BATCH, tactical_probe_share=0, threads=1))
    ev.stop = s.stop_event
    s.run(Limits(infinite=True))
    assert ev.threads == {threading.get_ident()}
    assert ev.batches == stop_at
    assert_nothing_in_flight(tree.root)
    assert s.playouts == tree.root.n


class InFlightAtEachBatch(Scripted):
    """A batching evaluator that records, as each batch is prepared (on the search's thread, so no race with the
    backup of the one before), its size and the visits in flight at the root."""

    batch_size = 16

    def __init__(self) -> None:
        self.root, self.seen = None, []

    def prepare(self, leaves):
        self.seen.append((len(leaves), self.root.in_flight))
        return super().prepare(leaves)


@pytest.mark.parametrize("threads, held_back", [(1, False), (2, True)])
def test_one_core_backs_up_each_batch_before_gathering_the_next(threads, held_back):
    """On one core a batch is evaluated where it is gathered, so it is backed up before the next is gathered:
    only its own leaves are in flight. Overlapped (two cores), the next batch is gathered while one runs."""
    game, tree = fresh_tree()
    ev = InFlightAtEachBatch()
    ev.root = tree.root
    params = Params(minibatch_size=BATCH, tactical_probe_share=0, threads=threads, simulations=400)
    Search(game, tree, ev, params).run(Limits())
    assert len(ev.seen) > 10
    if held_back:
        assert any(in_flight > size for size, in_flight in ev.seen[1:])
    else:
        assert all(in_flight == size for size, in_flight in ev.seen)
    assert_nothing_in_flight(tree.root)


class CountingBatches(Scripted):
    """A batching evaluator that counts its batches and can take ``seconds`` over each."""

    batch_size = 16

    def __init__(self, seconds: float = 0.0) -> None:
        self.seconds, self.batches = seconds, 0

    def run(self, prepared):
        self.batches += 1
        time.sleep(self.seconds)
        return super().run(prepared)


def test_spent_clock_answers_without_a_batch():
    """Below MoveOverhead the plan is zero: the move comes from the root's priors at once, not
    after a network batch that costs more than a small increment gives back."""
    ev = CountingBatches()
    game, tree = fresh_tree()
    best, _ = Search(game, tree, ev, Params(minibatch_size=BATCH)).run(Limits(wtime=20, btime=20, winc=10, binc=10))
    assert best in chess.Board().legal_moves and ev.batches == 0


def test_hard_limit_does_not_wait_for_a_slow_batch():
    """A batch still on the network at the hard limit is dropped, not waited for."""
    ev = CountingBatches(seconds=2.0)
    game, tree = fresh_tree()
    # The batch runs on its own thread.
    s = Search(game, tree, ev, Params(minibatch_size=BATCH, tactical_probe_share=0, threads=2))
    start = time.monotonic()
    best, _ = s.run(Limits(movetime=100))
    assert time.monotonic() - start < 1.0 and ev.batches >= 1
    assert best in chess.Board().legal_moves
    assert_nothing_in_flight(tree.root)
    s.close()


class SlowLeaves(Scripted):
    """A batching evaluator whose every leaf costs ``seconds``, batch or not; records its batch sizes."""

    batch_size = 16

    def __init__(self, seconds: float) -> None:
        self.seconds, self.sizes = seconds, []

    def evaluate(self, leaves):
        time.sleep(self.seconds * len(leaves))
        super().evaluate(leaves)

    def run(self, prepared):
        self.sizes.append(len(prepared))
        return super().run(prepared)


def test_threads_1_sizes_batches_to_the_time_left():
    """Threads=1 runs a batch on the search thread, where it cannot be dropped at the hard limit: with 40 ms a
    leaf, a full batch (0.64 s) would overrun a 300 ms move, so batches shrink to what the clock has left."""
    ev = SlowLeaves(0.04)
    game, tree = fresh_tree()
    s = Search(game, tree, ev, Params(minibatch_size=BATCH, tactical_probe_share=0, threads=1))
    start = time.monotonic()
    best, _ = s.run(Limits(movetime=300))
    elapsed = time.monotonic() - start
    assert best in chess.Board().legal_moves
    assert ev.sizes and max(ev.sizes) < ev.batch_size
    assert elapsed < 0.3 + 0.2, elapsed  # at most about one leaf past the limit, with room for a busy machine
    assert_nothing_in_flight(tree.root)


def test_gather_ends_when_no_descent_needs_the_network():
    """Three plies before the fifty-move rule nearly every descent ends in a draw. A gather still
    ends after a batch's room of such visits, so the clock is looked at between gathers (it
    used to gather until the root was proven: 88,000 visits and half a second, a lost game at
    10 s + 0.1 s)."""
    game, tree = fresh_tree("7B/1Nk5/8/2K5/8/8/8/8 w - - 97 112")
    ev = CountingBatches()
    s = Search(game, tree, ev, Params(minibatch_size=BATCH))
    s.run(Limits(nodes=2500))  # deep enough that most descents end in a draw
    for _ in range(50):
        before = s.playouts
        batch = s._gather(ev.batch_size)
        assert s.playouts - before <= 2 * ev.batch_size  # network leaves and settled visits
        s._abandon([path for path, _ in batch])


def test_batched_search_ends_when_the_root_is_proven():
    """A mate in one is proven at the root's expansion; gathering must not spin on it."""

    class Batching(Scripted):
        batch_size = 16

    best, tree, s = chess_search("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1", 800, Batching())
    assert best == chess.Move.from_uci("d1d8") and tree.root.proven == LOSS


def test_batches_fill_when_the_policy_favours_one_line():
    """A collision keeps its in-flight visits until the gather ends, so the next descents turn
    elsewhere and the batch fills; released at once, every later descent repeated it."""

    class Peaked(Scripted):
        batch_size = 16
        sizes: list = []

        def evaluate(self, leaves):
            self.sizes.append(len(leaves))
            for leaf in leaves:
                rest = 0.7 / max(1, len(leaf.moves) - 1)
                leaf.priors = [0.3] + [rest] * (len(leaf.moves) - 1)
                leaf.value = 0.0

    ev = Peaked()
    chess_search(chess.STARTING_FEN, 800, ev)
    assert sum(ev.sizes) / len(ev.sizes) > 12, ev.sizes
