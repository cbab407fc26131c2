"""The root's forcing-line search (engine/tactics/): mates by checks, the alpha-beta probe, and what the tree search
does with them, through UCI as a GUI sees it. tests/test_tactics_core.py checks the probe's board."""

from __future__ import annotations

import threading
import time

import chess
import chess.engine
import pytest

from engine import compiled, tactics
from engine.board import convert
from engine.search import root_probe
from engine.evaluators.base import Evaluator, Leaf
from engine.uci.loading import discover_network
from engine.params import Params
from engine.search.root_probe import TRUST_MIN_DEPTH, ProbeFinds, _vetoed
from engine.tactics import table
from engine.tactics.settings import DEFAULT, ProbeSettings
from engine.board.moves import move_ids
from engine.search import search as search_module
from engine.search.search import PROBE_MIN_SIMULATIONS, PROBE_NODES_PER_SIMULATION, VETO_LAPSE_VISITS, Search
from engine.search.timeman import Limits
from engine.params import ELO_MAX
from engine.search.tree import DRAW, Tree

# Win At Chess positions whose solutions are sacrifices the tree search alone missed.
WAC_004 = "r1bq2rk/pp3pbp/2p1p1pQ/7P/3P4/2PB1N2/PP3PPR/2KR4 w - - 0 1"   # Qxh7+, mate in 2
WAC_088 = "r6k/p1Q4p/2p1b1rq/4p3/B3P3/4P3/PPP3P1/4RRK1 b - - 0 1"       # Rxg2+, mate by checks
BACK_RANK_THREAT = "3r2k1/5ppp/8/8/8/8/5PPP/6K1 w - - 0 1"               # Kh1?? Rd1#
HANGING_QUEEN = "4k3/8/8/3q4/8/8/3R4/4K3 w - - 0 1"
QUIET_MATE_IN_3 = "8/8/7B/8/4K3/8/1R6/6k1 w - - 0 1"   # Kf3!, a quiet move: no mate by checks alone


def far() -> float:
    return time.monotonic() + 30


def alpha_beta(board: chess.Board, settings: ProbeSettings = DEFAULT):
    """The probe's board at ``board`` and an alpha-beta over it, as ``tactics.probe`` makes them."""
    position = convert.core_board(compiled.CORE, board)
    return position, compiled.CORE.alphabeta.AlphaBeta(position, tactics.scoring_tables(board), settings, far())


def ucis(board: chess.Board, moves: list[int]) -> list[str]:
    return [convert.chess_move(board, m).uci() for m in moves]


def mates_in_two(board: chess.Board, move: chess.Move) -> bool:
    """Brute force, independent of find_mate: every reply to ``move`` allows a mate in one."""
    board = board.copy()
    board.push(move)
    for reply in list(board.legal_moves):
        board.push(reply)
        mated = False
        for m in list(board.legal_moves):
            board.push(m)
            mated = board.is_checkmate()
            board.pop()
            if mated:
                break
        board.pop()
        if not mated:
            return False
    return True


def test_find_mate_proves_a_queen_sacrifice():
    board = chess.Board(WAC_004)
    move, n = tactics.find_mate(board, 6, far())
    assert (board.san(move), n) == ("Qxh7+", 2)
    assert mates_in_two(board, move)


def test_find_mate_plays_a_longer_mate_to_the_end():
    """Following find_mate's first move against every defence ends in checkmate."""
    board = chess.Board(WAC_088)
    move, n = tactics.find_mate(board, 6, far())
    assert board.san(move) == "Rxg2+"
    for _ in range(n - 1):
        board.push(move)
        assert not board.is_checkmate()
        board.push(next(iter(board.legal_moves)))  # any defence
        move, left = tactics.find_mate(board, 6, far())
    board.push(move)
    assert board.is_checkmate()


def test_mate_line_plays_the_longest_defence_to_mate():
    """Each defence in the line delays the mate at least as long as any other, and the line ends in checkmate."""
    board = chess.Board(WAC_088)
    move, n = tactics.find_mate(board, 6, far())
    line = tactics.mate_line(board, move, n, far())
    assert board.fen() == WAC_088 and len(line) == 2 * n - 1
    for ply, move in enumerate(line):
        if ply % 2:  # a defence: no other reply lasts longer
            left = (len(line) - ply) // 2
            for other in board.legal_moves:
                board.push(other)
                assert tactics.find_mate(board, 6, far())[1] <= left
                board.pop()
        board.push(move)
    assert board.is_checkmate()


def forces_mate(board: chess.Board, plies: int) -> bool:
    """Brute force, independent of the probe: the side to move mates within ``plies`` plies (odd)."""
    if plies < 1:
        return False
    for move in list(board.legal_moves):
        board.push(move)
        try:
            if board.is_checkmate():
                return True
            replies = list(board.legal_moves)
            if plies >= 3 and replies and all(_mates_after(board, reply, plies - 2) for reply in replies):
                return True
        finally:
            board.pop()
    return False


def _mates_after(board: chess.Board, reply: chess.Move, plies: int) -> bool:
    board.push(reply)
    try:
        return forces_mate(board, plies)
    finally:
        board.pop()


def test_probe_mate_line_writes_out_a_quiet_mate():
    """A mate the alpha-beta proved with a quiet first move: the line ends in checkmate, each defence lasts as long
    as any other (brute force), and the board is left as it was; the same for the side being mated."""
    board = chess.Board(QUIET_MATE_IN_3)
    assert tactics.find_mate(board, 3, far()) is None
    result = tactics.probe(board, far(), max_depth=6)
    move = max(result.scores, key=result.scores.__getitem__)
    plies = tactics.MATE - result.scores[move] - 1
    assert board.san(move) == "Kf3" and plies == 4
    line = tactics.probe_mate_line(board, move, plies, far())
    assert board.fen() == QUIET_MATE_IN_3 and len(line) == plies + 1
    for ply, step in enumerate(line):
        if ply % 2:  # a defence: every reply is mated in the plies left, and none later than this one
            left = len(line) - ply - 1
            assert all(_mates_after(board, other, left) for other in board.legal_moves)
            assert not _mates_after(board, step, left - 2)
        board.push(step)
    assert board.is_checkmate()
    defender = chess.Board(QUIET_MATE_IN_3)
    defender.push(move)
    defence = tactics.probe_mate_line(defender, line[1], plies - 1, far())
    assert defence[:1] == line[1:2] and len(defence) == plies


def test_find_mate_finds_none_where_checks_do_not_mate():
    assert tactics.find_mate(chess.Board(), 6, far()) is None
    assert tactics.find_mate(chess.Board(HANGING_QUEEN), 6, far()) is None


def test_find_mate_refuses_a_line_through_a_repeated_position():
    """A mate in one whose final position counts as already seen is not claimed as a proof
    (the repetition guard is conservative: it may miss a mate, never invent one)."""
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1")
    assert tactics.find_mate(board, 1, far()) == (chess.Move.from_uci("d1d8"), 1)
    after = board.copy()
    after.push_uci("d1d8")
    assert tactics.find_mate(board, 1, far(), earlier=[convert.zobrist(compiled.CORE, after)]) is None


def test_probe_sees_a_free_queen_and_a_move_into_mate():
    board = chess.Board(HANGING_QUEEN)
    result = tactics.probe(board, far(), max_depth=3)
    best = max(result.scores, key=result.scores.get)
    # White ends a rook up (the rook recaptured nothing): its material and placement, about 500 cp.
    assert board.san(best) == "Rxd5" and best in result.exact and result.scores[best] > 400

    board = chess.Board(BACK_RANK_THREAT)
    result = tactics.probe(board, far(), max_depth=3)
    assert result.scores[chess.Move.from_uci("g1h1")] <= -tactics.MATE_BOUND
    assert result.scores[chess.Move.from_uci("h2h3")] > -tactics.MATE_BOUND


def test_probe_updates_its_static_score_move_by_move_as_if_summed_from_scratch():
    """The probe adds each move's gain instead of rescoring the board: over random games that castle, capture en
    passant and promote, the two always agree."""
    import random
    rng = random.Random(7)
    special = {"castling": 0, "en passant": 0, "promotion": 0}
    for fen in (chess.STARTING_FEN, "r3k2r/1P4p1/8/2pP4/8/8/1p4P1/R3K2R w KQkq c6 0 1"):
        for _ in range(12):
            board = chess.Board(fen)
            position, search = alpha_beta(board)
            for _ in range(120):
                moves = position.legal_moves()
                if not moves:
                    break
                for move in moves:
                    played = convert.chess_move(board, move)
                    special["castling"] += board.is_castling(played)
                    special["en passant"] += board.is_en_passant(played)
                    special["promotion"] += played.promotion is not None
                    after = search.make_scored(search.static(), move)
                    assert after == search.static(), (board.fen(), played)
                    position.pop()
                move = rng.choice(moves)
                board.push(convert.chess_move(board, move))
                position.push(move)
    assert all(special.values()), special


def test_probe_generates_each_legal_move_once_in_stages():
    """The probe generates pseudo-legal moves stage by stage (table move, captures, killers, quiet moves, losing
    captures) and drops those that leave the king attacked: over random games with castling, en passant, promotions
    and pins, what survives is exactly the legal moves, each once, with stale killers and the table's move mixed
    in."""
    import random
    rng = random.Random(11)
    for fen in (chess.STARTING_FEN, "r3k2r/1P4p1/8/2pP4/8/8/1p4P1/R3K2R w KQkq c6 0 1",
                "4k3/8/8/1K1Pp2r/8/8/8/8 w - e6 0 1"):  # d5xe6 would leave the king in check
        for _ in range(8):
            board = chess.Board(fen)
            position, search = alpha_beta(board)
            stale = 0  # this side's previous move: a killer from another position
            for ply in range(100):
                legal = position.legal_moves()
                if not legal or board.is_check():
                    break  # evasions come from the legal generator itself
                first, killer = rng.choice(legal), rng.choice(legal)
                search.set_killers(1, killer, stale if stale != killer else 0)  # distinct, as kept
                found = []
                for move in search.ordered_moves(first, 1):
                    position.push(move)
                    if not position.left_in_check():
                        found.append(move)
                    position.pop()
                assert sorted(found) == sorted(legal) and found[0] == first, board.fen()
                assert sorted(ucis(board, legal)) == sorted(m.uci() for m in board.legal_moves)
                stale = position.undo_move[position.ply - 1] if position.ply else 0
                move = rng.choice(legal)
                board.push(convert.chess_move(board, move))
                position.push(move)


def test_captures_come_most_valuable_victim_first_and_the_quiescence_skips_losing_ones():
    """Pawn takes queen, pawn takes knight, rook takes the knight a pawn defends: in that order in the full-width
    search; the quiescence leaves out the rook's capture, which loses the exchange to the recapture."""
    board = chess.Board("4k3/8/4p3/1q1n4/2P5/8/8/3RK3 w - - 0 1")
    _, search = alpha_beta(board)
    assert ucis(board, search.capture_list()[0]) == ["c4b5", "c4d5", "d1d5"]
    assert ucis(board, search.capture_list(quiet_position=True)[0]) == ["c4b5", "c4d5"]
    # Only victims worth more than the least one asked for (the quiescence's delta pruning).
    assert ucis(board, search.capture_list(least_victim=400)[0]) == ["c4b5"]


def test_captures_that_lose_material_come_after_the_quiet_moves():
    """The rook's capture of the knight a pawn defends is searched last in the full-width search, not skipped."""
    board = chess.Board("4k3/8/4p3/1q1n4/2P5/8/8/3RK3 w - - 0 1")
    _, search = alpha_beta(board)
    captures, losing = search.capture_list(keep_losing=True)
    assert ucis(board, captures) == ["c4b5", "c4d5"] and ucis(board, losing) == ["d1d5"]
    order = ucis(board, search.ordered_moves(0, 1))
    assert order[:2] == ["c4b5", "c4d5"] and order[-1] == "d1d5" and len(order) == len(set(order))


def test_quiet_checks_are_quiet_and_give_check_direct_or_discovered():
    board = chess.Board("4k3/8/8/8/4N3/8/2B4P/4RK2 w - - 0 1")  # knight checks, a discovered check, bishop checks
    _, search = alpha_beta(board)
    found = [convert.chess_move(board, m) for m in search.quiet_check_list()]
    assert all(not board.is_capture(m) and board.gives_check(m) for m in found)
    assert {"e4d6", "e4f6", "e4g3", "c2a4"} <= {m.uci() for m in found} and len(found) == len(set(found))
    import random
    rng = random.Random(5)
    board = chess.Board()
    for _ in range(300):   # over a random game: never a capture, a promotion or a move that gives no check
        if board.is_game_over():
            board = chess.Board()
        _, search = alpha_beta(board)
        for move in search.quiet_check_list():
            move = convert.chess_move(board, move)
            assert not board.is_capture(move) and not move.promotion and board.gives_check(move), (board.fen(), move)
        board.push(rng.choice(list(board.legal_moves)))


def test_the_quiescence_sees_a_mate_by_a_quiet_check_just_past_the_horizon():
    """White to move, one ply deep: a queen move that leaves the back rank to ...Re1# loses; only the
    quiescence's quiet checks see it (without them it scores like the move that makes room for the king)."""
    board = chess.Board("4r1k1/5ppp/8/8/8/Q7/5PPP/6K1 w - - 0 1")
    result = tactics.probe(board, far(), max_depth=1)
    assert result.scores[chess.Move.from_uci("a3b3")] <= -tactics.MATE_BOUND
    assert result.scores[chess.Move.from_uci("h2h3")] > -tactics.MATE_BOUND
    result = tactics.probe(board, far(), max_depth=1, settings=ProbeSettings(quiescence_checks=False))
    assert result.scores[chess.Move.from_uci("a3b3")] > -tactics.MATE_BOUND


def test_pieces_that_can_discover_check_are_found():
    board = chess.Board("4k3/8/8/8/4N3/8/2B5/4RK2 w - - 0 1")   # the knight alone stands between rook and king
    position, _ = alpha_beta(board)
    assert position.discoverers() == chess.BB_E4


def test_frontier_pruning_keeps_the_scores_and_saves_nodes():
    """One ply from the quiescence a move that gives no check scores at most the static score it reaches: pruning
    those below alpha changes no score at the same depth, and halves the nodes; with the margin two plies out the
    quiet solutions are still found."""
    positions = QUIET_SOLUTIONS + [(WAC_001, "g3g6")]

    def search_all(futility_depth: int) -> tuple[list, int]:
        # (no late move pruning: it is not exact, and would change the scores compared)
        settings = ProbeSettings(late_move_pruning=(), futility_depth=futility_depth)
        found, nodes = [], 0
        for fen, solution in positions:
            result = tactics.probe(chess.Board(fen), far(), max_depth=4, settings=settings)
            best = max(result.scores, key=result.scores.get)
            assert best.uci() == solution, (fen, futility_depth)
            found.append(result.scores[best])
            nodes += result.nodes
        return found, nodes
    (full, full_nodes), (exact, exact_nodes) = search_all(0), search_all(1)
    assert exact == full and exact_nodes < 0.75 * full_nodes, (exact_nodes, full_nodes)
    assert search_all(2)[1] <= exact_nodes


WAC_001 = "2rr3k/pp3pp1/1nnqbN1p/3pN3/2pP4/2P3Q1/PPB4P/R4RK1 w - - 0 1"  # Qg6!! threatens two mates
# Win At Chess positions whose solutions are quiet moves, which the probe finds at depth 4.
QUIET_SOLUTIONS = [("5rk1/1ppb3p/p1pb4/6q1/3P1p1r/2P1R2P/PP1BQ1P1/5RKN w - - 0 1", "e3g3"),  # WAC.003
                   ("5rk1/1b3p1p/pp3p2/3n1N2/1P6/P1qB1PP1/3Q3P/4R1K1 w - - 0 1", "d2h6"),  # WAC.021
                   ("3r2k1/1p1b1pp1/pq5p/8/3NR3/2PQ3P/PP3PP1/6K1 b - - 0 1", "d7f5"),     # WAC.026
                   ("5rk1/p5pp/8/8/2Pbp3/1P4P1/7P/4RN1K b - - 0 1", "d4c3")]             # WAC.101


def test_late_move_pruning_saves_nodes_and_keeps_the_quiet_solutions():
    """Near the horizon the late quiet moves that give no check are not searched: at the same depth the probe
    visits fewer nodes, and the quiet solutions (checks or early in the order) still come out on top."""
    def search_all(pruning: tuple) -> int:
        nodes = 0
        for fen, solution in QUIET_SOLUTIONS + [(WAC_001, "g3g6")]:
            result = tactics.probe(chess.Board(fen), far(), max_depth=5,
                                   settings=ProbeSettings(late_move_pruning=pruning))
            assert result.depth == 5 or result.scores[max(result.scores, key=result.scores.get)] >= tactics.MATE_BOUND
            assert max(result.scores, key=result.scores.get).uci() == solution, (fen, pruning)
            nodes += result.nodes
        return nodes
    full, pruned = search_all(()), search_all(DEFAULT.late_move_pruning)
    assert pruned < 0.92 * full, (pruned, full)


def test_a_node_with_pruned_late_moves_claims_no_less_than_alpha():
    """The late moves left unsearched are taken to fail low, not to lose: here every move that gives the king air
    comes late and is pruned, and the moves searched all allow the back-rank mate. The node must not report that
    mate (its parent would then prove a win that is not there)."""
    board = chess.Board("r5k1/5ppp/8/1PPPP3/8/8/1PPPPPPP/6K1 w - - 0 1")
    _, search = alpha_beta(board)
    for move in board.legal_moves:  # the history orders the moves that leave the back rank open first
        if move.from_square not in (chess.F2, chess.G2, chess.H2):
            search.set_history(convert.core_move(board, move), 1000)
    assert search.search_node(2, -50, 50, 1) == -50


def test_late_move_reductions_save_nodes_and_keep_the_quiet_solutions():
    """Late quiet moves are searched a ply shorter first: at the same depth the probe visits
    fewer nodes, and a quiet winning move still comes out on top (it is re-searched in full
    once the shorter search shows it beats alpha)."""
    def search_all(reduce: bool) -> int:
        # (no late move pruning: it would prune what is no longer reduced)
        settings = ProbeSettings(late_move_index=3 if reduce else 10_000, late_move_pruning=())
        nodes = 0
        for fen, solution in QUIET_SOLUTIONS:
            result = tactics.probe(chess.Board(fen), far(), max_depth=4, settings=settings)
            assert result.depth == 4
            assert max(result.scores, key=result.scores.get).uci() == solution, (fen, reduce)
            nodes += result.nodes
        return nodes
    full, reduced = search_all(False), search_all(True)
    assert reduced < 0.8 * full, (reduced, full)


def test_probe_scores_the_reference_move_exactly_however_bad():
    board = chess.Board(HANGING_QUEEN)
    blunder = chess.Move.from_uci("d2d1")  # retreats instead of taking the queen
    result = tactics.probe(board, far(), max_depth=3, reference=blunder)
    best = max(result.scores, key=result.scores.get)
    assert board.san(best) == "Rxd5" and blunder in result.exact
    assert result.scores[best] - result.scores[blunder] > tactics.PROBE_WINDOW
    assert not all(m in result.exact for m in result.scores)  # the rest below the window: bounds


def test_probe_sees_a_quiet_mating_threat():
    """WAC.001: Qg6!! threatens Qxg7# and Qh7#; no check, so only the alpha-beta can see it."""
    board = chess.Board(WAC_001)
    result = tactics.probe(board, time.monotonic() + 10, max_depth=5)
    best = max(result.scores, key=result.scores.get)
    assert board.san(best) == "Qg6" and result.scores[best] >= tactics.MATE_BOUND


def test_probe_keeps_its_deadline_and_stop():
    board = chess.Board("r1b2rk1/2q1b1pp/p2ppn2/1p6/3QP3/1BN1B3/PPP3PP/R4RK1 w - - 0 14")
    start = time.monotonic()
    tactics.probe(board, start + 0.05, max_depth=20)
    assert time.monotonic() - start < 1.0
    start = time.monotonic()
    result = tactics.probe(board, start + 30, max_depth=20, stopped=lambda: time.monotonic() > start + 0.05)
    assert time.monotonic() - start < 1.0 and result.depth < 20


def test_a_kept_table_searches_exactly_as_a_fresh_one(monkeypatch):
    """The probe's table is kept between probes and cleared, not allocated afresh: a probe after another one on a
    different position finds the same scores in the same number of positions as on a new table."""
    later = chess.Board("r1b2rk1/2q1b1pp/p2ppn2/1p6/3QP3/1BN1B3/PPP3PP/R4RK1 w - - 0 14")
    monkeypatch.setattr(table, "_spare", {})
    fresh = tactics.probe(later, far(), max_nodes=20_000)
    tactics.probe(chess.Board(WAC_004), far(), max_nodes=20_000)   # fills the table that the next probe gets
    kept = tactics.probe(later, far(), max_nodes=20_000)
    assert len(table._spare) == 1
    assert (kept.depth, kept.nodes, kept.scores, kept.exact) == (fresh.depth, fresh.nodes, fresh.scores, fresh.exact)
    with table.lent(DEFAULT.table_bits) as first, table.lent(DEFAULT.table_bits) as second:
        assert first is not second   # probes at the same time never share one
        assert not any(first.keys) and not any(second.keys)


def test_another_thread_runs_within_milliseconds_while_the_probe_searches():
    """Compiled, the probe holds the interpreter's lock between its looks at the stop flag; letting go of it too often
    once starved the thread that reads 'stop' (a second without an answer). Here the main thread, sleeping and waking
    two hundred times, is that thread."""
    board = chess.Board("r1b2rk1/2q1b1pp/p2ppn2/1p6/3QP3/1BN1B3/PPP3PP/R4RK1 w - - 0 14")
    tactics.probe(board, time.monotonic() + 0.01)   # the tables are filled once, before the measure
    stop = threading.Event()
    search = threading.Thread(target=tactics.probe, args=(board, time.monotonic() + 10),
                              kwargs=dict(max_depth=30, stopped=stop.is_set))
    search.start()
    waits = []
    try:
        for _ in range(200):
            start = time.monotonic()
            time.sleep(0.002)
            waits.append(time.monotonic() - start - 0.002)
    finally:
        stop.set()
        search.join()
    assert max(waits) < 0.5, sorted(waits)[-5:]


def test_isready_and_stop_are_answered_at_once_while_the_probe_searches(raw):
    """Half of a ten-second movetime is the probe's: every isready within it, and stop, answered at once."""
    raw.ask_ready(timeout=60)
    raw.send("position fen r1b2rk1/2q1b1pp/p2ppn2/1p6/3QP3/1BN1B3/PPP3PP/R4RK1 w - - 0 14")
    raw.send("go movetime 10000")
    waits = []
    for _ in range(200):
        time.sleep(0.005)
        start = time.monotonic()
        raw.ask_ready(timeout=10)
        waits.append(time.monotonic() - start)
    start = time.monotonic()
    raw.send("stop")
    raw.read_until("bestmove", timeout=10)
    waits.append(time.monotonic() - start)
    assert max(waits) < 0.5, sorted(waits)[-5:]


def test_go_movetime_reports_the_proven_mate(engine):
    engine.configure({"Evaluator": "heuristic"})
    board = chess.Board(WAC_004)
    result = engine.play(board, chess.engine.Limit(time=1.0), info=chess.engine.INFO_ALL, game="same")
    assert board.san(result.move) == "Qxh7+"
    assert result.info["score"].relative == chess.engine.Mate(2)
    # The whole mate, not the first move alone: the tree stops at once and never searched the line.
    assert board.variation_san(result.info["pv"]) == "1. Qxh7+ Kxh7 2. hxg6#"
    assert result.ponder == chess.Move.from_uci("h8h7")
    # Searched again (the tree kept, its root already proven): the same line, not the first move alone.
    again = engine.play(board, chess.engine.Limit(time=1.0), info=chess.engine.INFO_ALL, game="same")
    assert board.variation_san(again.info["pv"]) == "1. Qxh7+ Kxh7 2. hxg6#" and again.ponder == result.ponder


def test_go_movetime_reports_a_quiet_mate_and_the_longest_defence(engine):
    """A mate the alpha-beta proved (the first move no check) shows its whole line, for the side that mates and,
    with the moves the longest defence allows, for the side that is mated."""
    engine.configure({"Evaluator": "heuristic"})
    board = chess.Board(QUIET_MATE_IN_3)
    result = engine.play(board, chess.engine.Limit(time=1.0), info=chess.engine.INFO_ALL, game="same")
    assert board.san(result.move) == "Kf3" and result.info["score"].relative == chess.engine.Mate(3)
    pv = result.info["pv"]
    assert len(pv) == 5 and result.ponder == pv[1]
    again = engine.play(board, chess.engine.Limit(time=1.0), info=chess.engine.INFO_ALL, game="same")
    assert again.info["pv"] == pv   # the tree kept, its root proven: written out again
    board.push(result.move)
    defence = engine.play(board, chess.engine.Limit(time=1.0), info=chess.engine.INFO_ALL)
    assert defence.info["score"].relative == chess.engine.Mate(-2)
    end = board.copy()
    for move in defence.info["pv"]:
        end.push(move)
    assert len(defence.info["pv"]) == 4 and end.is_checkmate()


def test_analysis_proves_the_mate_by_checks(engine):
    """'go infinite' probes too (for at most a second), and stop still answers at once."""
    engine.configure({"Evaluator": "heuristic"})
    board = chess.Board(WAC_088)
    deadline = time.monotonic() + 20
    with engine.analysis(board) as analysis:
        for info in analysis:
            score = info.get("score")
            if score is not None and score.relative.mate() is not None or time.monotonic() > deadline:
                break
        stop_sent = time.monotonic()
        analysis.stop()
        best = analysis.wait()
        stopped_in = time.monotonic() - stop_sent
    assert score.relative.mate() is not None and score.relative.mate() > 0
    assert board.san(best.move) == "Rxg2+"
    assert stopped_in < 2.0


def test_go_movetime_never_plays_a_move_the_probe_proves_lost(engine):
    engine.configure({"Evaluator": "heuristic"})
    for _ in range(3):
        result = engine.play(chess.Board(BACK_RANK_THREAT), chess.engine.Limit(time=0.3))
        assert result.move != chess.Move.from_uci("g1h1")


@pytest.mark.parametrize("share", ["0", "0.9"])
def test_probe_share_option_is_accepted_and_bounded(engine, share):
    engine.configure({"Evaluator": "heuristic", "TacticalProbeShare": share})
    result = engine.play(chess.Board(HANGING_QUEEN), chess.engine.Limit(time=0.3))
    assert result.move == chess.Move.from_uci("d2d5")


# A failing sacrifice: Qxf7+? Rxf7 Bxf7+ Kxf7 gives queen and bishop for rook and pawn.
FAILING_SACRIFICE = "rnbq1rk1/ppp2ppp/3p1n2/2b1p2Q/2B1P3/2NP4/PPP2PPP/R1B1K1NR w KQ - 0 1"


class Misled(Evaluator):
    """Value 0 everywhere, and at one position nearly all the prior on one move: a net that loves a blunder,
    which a small tree then plays."""

    name = "misled"

    def __init__(self, fen: str, uci: str) -> None:
        self.fen, self.move = chess.Board(fen).fen(), chess.Move.from_uci(uci)

    def evaluate(self, leaves: list[Leaf]) -> None:
        for leaf in leaves:
            n = len(leaf.moves)
            if leaf.board.fen() == self.fen and n > 1:
                leaf.priors = [0.95 if m == self.move else 0.05 / (n - 1) for m in leaf.moves]
            else:
                leaf.priors = [1.0 / n] * n
            leaf.value = 0.0


def misled_search(fen: str, uci: str, limits: Limits, **params) -> tuple[chess.Move, list, Search]:
    tree = Tree()
    tree.set_position(fen, [chess.Board(fen)], [])
    search = Search(tree, Misled(fen, uci), Params(**params))
    reported: list = []
    search.on_info = reported.append
    best, _ = search.run(limits)
    search.close()
    return best, reported, search


def move_id(uci: str) -> int:
    """The tree's id of a move that is not castling (python-chess's id: they differ only for castling)."""
    return move_ids([chess.Move.from_uci(uci)])[0]


# Most of a 'go movetime' on the probe and no move overhead.
PROBING = {"tactical_probe_share": 0.9, "move_overhead": 0}


def test_the_probe_vetoes_a_failing_sacrifice_the_tree_would_play():
    """Without a probe (TacticalProbeShare 0) the misled tree plays Qxf7+; with one, at a fixed number of
    simulations ('go nodes') as in a 'go movetime', the move the probe scores far below its best is neither played
    nor reported first."""
    blunder = chess.Move.from_uci("h5f7")
    # 300 simulations give the probe 300 * PROBE_NODES_PER_SIMULATION positions: far more than the 4 plies here
    # (TRUST_MIN_DEPTH) take, about 3,000.
    best, _, _ = misled_search(FAILING_SACRIFICE, "h5f7", Limits(nodes=300), tactical_probe_share=0.0)
    assert best == blunder  # the test can fail: the tree alone falls for it
    best, reported, search = misled_search(FAILING_SACRIFICE, "h5f7", Limits(nodes=300))
    assert move_id("h5f7") in search.probe_finds.vetoed and best != blunder and reported[-1][0].pv[0] == best
    # Those 3,000 positions take a millisecond compiled, a tenth of a second interpreted: 0.9 s leave room for a slow
    # or busy core.
    best, reported, search = misled_search(FAILING_SACRIFICE, "h5f7", Limits(movetime=1000), **PROBING)
    assert move_id("h5f7") in search.probe_finds.vetoed
    assert best != blunder
    assert reported[-1][0].pv[0] == best  # the info line the GUI shows last names the move played
    _, _, search = misled_search(FAILING_SACRIFICE, "h5f7", Limits(movetime=300), tactical_veto_cp=0, **PROBING)
    assert not search.probe_finds.vetoed  # TacticalVetoCp 0: no veto


def test_on_the_clock_the_probe_runs_only_with_a_clock_share():
    """Without a clock share (TacticalClockShare 0) a clock search does not probe: the misled tree plays its
    blunder; with a share of the move's planned time on the probe it is vetoed."""
    clock = Limits(wtime=20_000, btime=20_000, winc=200, binc=200)
    best, _, search = misled_search(FAILING_SACRIFICE, "h5f7", clock, move_overhead=0, tactical_clock_share=0.0)
    assert best == chess.Move.from_uci("h5f7") and not search.probe_finds.vetoed
    best, _, search = misled_search(FAILING_SACRIFICE, "h5f7", clock, move_overhead=0, tactical_clock_share=0.3)
    assert move_id("h5f7") in search.probe_finds.vetoed and best != chess.Move.from_uci("h5f7")


def test_a_clock_nearly_out_leaves_the_probe_out(monkeypatch):
    """A timed search whose probe share is under PROBE_MIN_SECONDS (the clock below MoveOverhead: no time at all)
    does not set the probe up: so little would find nothing, and once overran the move."""
    calls = []
    monkeypatch.setattr(search_module, "probe_root", lambda *args, **kwargs: calls.append(args) or ProbeFinds())
    nearly_out = Limits(wtime=60, btime=60, winc=10, binc=10)
    best, _, search = misled_search(FAILING_SACRIFICE, "h5f7", nearly_out, tactical_clock_share=0.3)
    assert not calls and best in chess.Board(FAILING_SACRIFICE).legal_moves and search.budget.hard == 0.0
    _, _, search = misled_search(FAILING_SACRIFICE, "h5f7", Limits(movetime=1), tactical_probe_share=0.3)
    assert not calls
    misled_search(FAILING_SACRIFICE, "h5f7", Limits(wtime=20_000, btime=20_000, winc=200, binc=200),
                  move_overhead=0, tactical_clock_share=0.3)
    assert len(calls) == 1   # the test can fail: with time to spend, the same search probes


# From a game at 'go movetime 300': Black's queen must come back (Qh7); Kxg7?? is mated after Rg3+. Three plies of
# the probe see Kxg7 win a bishop and score Qh7 over 100 cp below it.
SHALLOW_TRAP = "r3r1k1/pp1b1pB1/8/n7/P1pP3Q/2P2R1P/2q3P1/R5K1 b - - 0 25"


def test_a_shallow_probe_neither_vetoes_nor_boosts():
    """Below TRUST_MIN_DEPTH the probe's material-and-placement search misjudges too often to overrule the net: the
    saving move it would veto is played, and no find takes the root's prior."""
    board = chess.Board(SHALLOW_TRAP)
    shallow = tactics.probe(board, far(), window=100, max_nodes=2500)
    king_takes, queen_back = chess.Move.from_uci("g8g7"), chess.Move.from_uci("c2h7")
    assert shallow.depth < TRUST_MIN_DEPTH  # the test can fail: what the shallow probe would veto
    assert shallow.scores[queen_back] <= shallow.scores[king_takes] - 100
    # The share of PROBE_MIN_SIMULATIONS that gives the probe the same 2,500 positions.
    ratio = 2500 / (PROBE_MIN_SIMULATIONS * PROBE_NODES_PER_SIMULATION)
    best, _, search = misled_search(SHALLOW_TRAP, "c2h7", Limits(nodes=PROBE_MIN_SIMULATIONS),
                                    tactical_probe_share=ratio / (1 + ratio))
    assert best == queen_back and not search.probe_finds.vetoed
    root = search.tree.root_node
    assert root.move_id(0) == move_id("c2h7") and root.priors[0] > 0.9  # no find took its prior either


# WAC.209: checks by queen and rooks that do not mate. Before the mate search had a share of its own, it took the
# whole half second of a 'go movetime 1000' probe here and left the alpha-beta, which finds Rxe5+, nothing.
CHECKS_THAT_DO_NOT_MATE = "4kb1r/2q2p2/r2p4/pppBn1B1/P6P/6Q1/1PP5/2KRR3 w k - 0 1"


def test_the_mate_by_checks_leaves_the_alpha_beta_most_of_the_probe(monkeypatch):
    """The mate search gets at most MATE_BY_CHECKS_SHARE of the probe's time (or of its positions), however many
    checks the position has; the alpha-beta gets the rest."""
    seen: dict = {}
    find_mate, probe = tactics.find_mate, tactics.probe

    def timed_find_mate(board, max_moves, deadline, *args, **kwargs):
        seen["mate"] = (time.monotonic(), deadline, kwargs.get("max_nodes"))
        return find_mate(board, max_moves, deadline, *args, **kwargs)

    def timed_probe(board, deadline, *args, **kwargs):
        seen["probe"] = (time.monotonic(), deadline, kwargs.get("max_nodes"))
        return probe(board, deadline, *args, **kwargs)

    monkeypatch.setattr(tactics, "find_mate", timed_find_mate)
    monkeypatch.setattr(tactics, "probe", timed_probe)
    misled_search(CHECKS_THAT_DO_NOT_MATE, "a4b5", Limits(movetime=1000), **PROBING)
    mate_start, mate_deadline, _ = seen["mate"]
    _, probe_deadline, _ = seen["probe"]
    assert mate_deadline - mate_start <= (probe_deadline - mate_start) * root_probe.MATE_BY_CHECKS_SHARE + 1e-3
    misled_search(CHECKS_THAT_DO_NOT_MATE, "a4b5", Limits(nodes=300), **PROBING)
    assert seen["mate"][2] == int(seen["probe"][2] * root_probe.MATE_BY_CHECKS_SHARE)


def test_a_few_simulations_stay_the_policy_s():
    """Under PROBE_MIN_SIMULATIONS the search is a policy player (Maia at 'go nodes 1'): no probe overrules it."""
    best, _, search = misled_search(FAILING_SACRIFICE, "h5f7", Limits(nodes=PROBE_MIN_SIMULATIONS - 1))
    assert best == chess.Move.from_uci("h5f7") and not search.probe_finds.vetoed


def test_under_uci_limitstrength_simulations_stay_the_tree_s_alone():
    """The levels were calibrated with their visits spent by the tree: no probe takes a share of them."""
    best, _, search = misled_search(FAILING_SACRIFICE, "h5f7", Limits(nodes=300), limit_strength=True)
    assert best == chess.Move.from_uci("h5f7") and not search.probe_finds.vetoed


def test_the_veto_judges_only_the_moves_the_root_may_play():
    """With searchmoves the probe's best is the best of those moves: the better of the two is not vetoed, though
    a move left out (Qxf6, Qh4, ...) is better still."""
    limits = Limits(movetime=1000, searchmoves=[chess.Move.from_uci("h5f7"), chess.Move.from_uci("h5g5")])
    best, _, search = misled_search(FAILING_SACRIFICE, "h5f7", limits, **PROBING)
    assert search.probe_finds.vetoed == {move_id("h5f7")}
    assert best == chess.Move.from_uci("h5g5")


def test_a_veto_demotes_the_move_until_the_tree_searches_or_proves_it(monkeypatch):
    _, _, search = misled_search(FAILING_SACRIFICE, "h5f7", Limits(nodes=300), tactical_probe_share=0.0)
    root = search.tree.root_node
    blunder = root.child(move_id("h5f7"))
    assert search.best_child() == blunder
    search.tree.expand_root_fully()  # as the probe leaves the root: every move opened
    search.probe_finds = ProbeFinds(vetoed=frozenset({blunder.move}))
    assert search.best_child() != blunder and search.lines()[0].pv[0] != chess.Move.from_uci("h5f7")
    # Once the tree has searched it VETO_LAPSE_VISITS times itself, or proved it, the veto lapses.
    monkeypatch.setattr(search_module, "VETO_LAPSE_VISITS", blunder.n)
    assert search.best_child() == blunder
    monkeypatch.setattr(search_module, "VETO_LAPSE_VISITS", VETO_LAPSE_VISITS)
    assert search.best_child() != blunder
    blunder.proven = DRAW
    assert search.ranked_root() == root.ranked_children()  # a proof, even a draw, is exact: no veto


def test_vetoed_moves_are_those_the_margin_below_the_best_unless_all_lose():
    assert _vetoed({1: 300, 2: 250, 3: 200, 4: -500}, 100) == {3, 4}
    assert _vetoed({1: 300, 2: 250}, 0) == frozenset()
    assert _vetoed({1: -tactics.MATE + 5, 2: -tactics.MATE + 9}, 100) == frozenset()


def test_full_strength_keeps_the_veto_and_the_levels_below_it_do_not():
    from engine.search.strength import level_for, limited
    top = limited(Limits(movetime=1000), Params(), level_for(ELO_MAX, "network"))[1]
    low = limited(Limits(movetime=1000), Params(), level_for(1500, "network"))[1]
    assert top.tactical_veto_cp == Params().tactical_veto_cp > 0 and low.tactical_veto_cp == 0


# Win At Chess combinations whose first move the shipped net when they were chosen (arbor-r007) rated below 1.3%:
# at 400 simulations the tree alone plays another move in each, in float and in int8; with the probe's share of the
# work it finds each.
LOW_PRIOR_COMBINATIONS = [
    ("r1q3rk/1ppbb1p1/4Np1p/p3pP2/P3P3/2N4R/1PP1Q1PP/3R2K1 w - - 0 1", "Qd2"),      # WAC.073, prior 1.25%
    ("3r2k1/ppp2ppp/6q1/b4n2/3nQB2/2p5/P4PPP/RN3RK1 b - - 0 1", "Ng3"),            # WAC.077, 0.35%
    ("1r3rk1/5pb1/p2p2p1/Q1n1q2p/1NP1P3/3p1P1B/PP1R3P/1K2R3 b - - 0 1", "Nxe4"),  # WAC.098, 0.66%
    ("r2b1rk1/pq4p1/4ppQP/3pB1p1/3P4/2R5/PP3PP1/5RK1 w - - 0 1", "Rc7"),           # WAC.140, 0.57%
    ("1r5k/p1p3pp/8/8/4p3/P1P1R3/1P1Q1qr1/2KR4 w - - 0 1", "Re2"),                 # WAC.165, 0.45%
]


@pytest.mark.skipif(discover_network() is None, reason="no network shipped")
@pytest.mark.parametrize("fen,key", LOW_PRIOR_COMBINATIONS)
def test_a_low_prior_combination_is_found_at_a_fixed_number_of_simulations(engine, fen, key):
    """'go nodes' gives the probe its share of the work in positions, so it finds what the tree starves, the same
    on every machine."""
    board = chess.Board(fen)
    # 600 simulations give the probe 15,000 positions: WAC.073 needs them since the quiescence tries quiet checks
    # (10,000 reach only depth 4 there); the tree alone still misses all five, in float and in int8.
    engine.configure({"TacticalProbeShare": 0})
    assert board.san(engine.play(board, chess.engine.Limit(nodes=600), game=object()).move) != key  # can fail
    engine.configure({"TacticalProbeShare": Params().tactical_probe_share})
    assert board.san(engine.play(board, chess.engine.Limit(nodes=600), game=object()).move) == key
