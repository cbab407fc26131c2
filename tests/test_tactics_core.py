"""The compiled board (engine/board/board.py) against python-chess, move for move, and the compiled core against
the same source interpreted. tests/test_tactics.py checks what the probe finds."""

from __future__ import annotations

import os
import random
import subprocess
import time

import chess
import chess.engine
import pytest

from conftest import ARBOR, ROOT
from engine import tactics
from engine.board import convert
from engine import compiled as core

COMPILED = core.CORE
INTERPRETED = core.load("interpreted")   # the same source, run by the interpreter
SUITES = ROOT.parent / "shared" / "suites"
# Positions where the rules are easy to get wrong.
CORNER_CASES = [
    "8/8/8/KPp4r/8/8/8/7k w - c6 0 1",          # b5xc6 e.p. would expose the king along the rank
    "8/8/8/8/k2Pp2Q/8/8/3K4 b - d3 0 1",        # e4xd3 e.p. would expose the king along the rank
    "4k3/8/8/8/1b6/8/8/R3K2R w KQ - 0 1",       # castling queenside through check? (d2: no; c1 free)
    "4k3/8/8/8/8/5r2/8/R3K2R w KQ - 0 1",       # castling kingside through an attacked f1
    "4k3/8/8/8/8/6r1/8/R3K2R w KQ - 0 1",       # castling kingside onto an attacked g1
    "r3k2r/8/8/8/8/8/8/R3K1R1 b Qkq - 0 1",     # black castles both ways; white's rights half gone
    "1r2k3/P7/8/8/8/8/8/4K3 w - - 0 1",         # promotion by capture and by push
    "3k4/8/8/8/8/8/1p6/R3K3 b Q - 0 1",         # b1=Q takes away castling? (promotion on b1, a capture on a1)
    "4k3/8/8/8/8/8/8/r3K2R w K - 0 1",          # in check from a1: no castling
    "4k3/8/5N2/8/1b6/8/8/4K3 b - - 0 1",        # check by the knight
    "8/8/8/8/8/2k5/1q6/K1B5 w - - 0 1",         # in check, capture or move
    "4k3/8/8/8/8/4r3/3n4/4K3 w - - 0 1",        # double check: the king must move
    "4k3/4r3/8/8/8/8/4B3/4K3 w - - 0 1",        # the bishop is pinned along the file
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",  # the standard test position 3
    "rnbqkb1r/pp1p1ppp/5n2/2pPp3/8/8/PPP1PPPP/RNBQKBNR w KQkq c6 0 4",   # two en passant candidates, one square
]
# Published perft counts (the standard test positions of the chess programming community).
PUBLISHED = [
    (chess.STARTING_FEN, 5, 4_865_609),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 4, 4_085_603),
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", 5, 674_624),
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", 4, 422_333),
    ("rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", 4, 2_103_487),
    ("r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10", 4, 3_894_594),
]


def random_positions(count: int, seed: int, chess960: bool = False) -> list[chess.Board]:
    """Positions from random games (a new game at each end), standard or from random Chess960 starts."""
    rng = random.Random(seed)
    found: list[chess.Board] = []
    board = None
    while len(found) < count:
        if board is None or board.is_game_over() or board.ply() > 160:
            board = chess.Board.from_chess960_pos(rng.randrange(960)) if chess960 else chess.Board()
        board.push(rng.choice(list(board.legal_moves)))
        found.append(board.copy(stack=False))
    return found


def suite_positions() -> list[chess.Board]:
    found = []
    for name in ("wac.epd", "bk.epd", "ecm.epd"):
        path = SUITES / name
        if path.is_file():
            found += [chess.Board.from_epd(line)[0] for line in path.read_text().splitlines() if line.strip()]
    for path in (ROOT / "tests" / "data").glob("*.epd"):
        for line in path.read_text().splitlines():
            if line.strip():
                found.append(chess.Board.from_epd(line, chess960="chess960" in path.name)[0])
    return found


def legal_ucis(position, board: chess.Board) -> set[str]:
    return {convert.chess_move(board, move).uci() for move in position.legal_moves()}


def test_the_install_compiled_the_core():
    """``pip install -e .`` compiled the probe's core here; the interpreted core is the same source."""
    assert COMPILED.compiled, f"{core.describe()}: is a C compiler installed? ('pip install -e .' compiles the core)"
    assert not INTERPRETED.compiled and INTERPRETED.board.__file__.endswith(".py")
    assert core.describe(COMPILED) == "core compiled (board, tree, tactics)"
    assert "interpreted" in core.describe(INTERPRETED)


def test_legal_moves_and_perft_at_two_plies_equal_python_chess_s_from_over_a_thousand_positions():
    """Every legal move and every reply count (perft 2, divided by the first move) against python-chess: the suites'
    positions where they are at hand, all 960 Chess960 starts, positions from random games of both kinds, and the
    corner cases (en passant that would expose the king, castling through or into check, promotions, double check,
    pins)."""
    boards = (suite_positions() + [chess.Board.from_chess960_pos(n) for n in range(960)]
              + random_positions(300, seed=1) + random_positions(300, seed=2, chess960=True)
              + [chess.Board(fen) for fen in CORNER_CASES])
    assert len(boards) >= 1500
    for board in boards:
        position = convert.core_board(COMPILED, board)
        moves = position.legal_moves()
        assert legal_ucis(position, board) == {m.uci() for m in board.legal_moves}, board.fen()
        for move in moves:
            played = convert.chess_move(board, move)
            board.push(played)
            position.push(move)
            assert position.perft(1) == board.legal_moves.count(), (board.fen(), played.uci())
            position.pop()
            board.pop()


@pytest.mark.parametrize("fen, depth, count", PUBLISHED)
def test_perft_equals_the_published_counts(fen, depth, count):
    if not COMPILED.compiled:
        pytest.skip("the interpreted core would take minutes (test_the_install_compiled_the_core fails instead)")
    assert convert.core_board(COMPILED, chess.Board(fen)).perft(depth) == count


def test_a_fuzz_of_random_games_agrees_move_for_move_and_key_for_key():
    """Random games played on both boards at once: the same legal moves at every ply, the board's Zobrist key equal
    exactly where python-chess's repetition key (``_transposition_key``: en passant only where a capture is legal,
    castling rights only where usable) is, and the same checks, repetitions and insufficient material."""
    rng = random.Random(2026)
    keys: dict[int, tuple] = {}
    for game in range(60):
        board = chess.Board.from_chess960_pos(rng.randrange(960)) if game % 3 == 0 else chess.Board()
        board.chess960 = game % 3 == 0
        position = convert.core_board(COMPILED, board)
        while not board.is_game_over() and board.ply() < 200:
            assert legal_ucis(position, board) == {m.uci() for m in board.legal_moves}, board.fen()
            key = board._transposition_key()
            assert keys.setdefault(position.key, key) == key, board.fen()
            assert position.in_check() == board.is_check(), board.fen()
            assert position.is_insufficient_material() == board.is_insufficient_material(), board.fen()
            assert position.is_repetition() == board.is_repetition(2), board.fen()
            moves = position.legal_moves()
            move = rng.choice(moves)
            board.push(convert.chess_move(board, move))
            position.push(move)
            if position.ply >= 100:   # set up afresh from python-chess's board, its move stack the earlier keys
                position = convert.core_board(COMPILED, board)
    assert len(set(keys.values())) == len(keys)   # no two positions share a Zobrist key


def test_earlier_positions_count_as_repetitions():
    """A key of the game's history (``earlier``, as the tree passes it) is recognised when the probe reaches it."""
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1")
    after = board.copy()
    after.push_uci("d1d8")
    position = convert.core_board(COMPILED, board, [convert.zobrist(COMPILED, after)])
    position.push(convert.core_move(board, chess.Move.from_uci("d1d8")))
    assert position.is_repetition()
    position.pop()
    position.push(convert.core_move(board, chess.Move.from_uci("d1d7")))
    assert not position.is_repetition()


SAMPLE = [
    "2rr3k/pp3pp1/1nnqbN1p/3pN3/2pP4/2P3Q1/PPB4P/R4RK1 w - - 0 1",     # WAC.001
    "r1b1k2r/ppppnppp/2n2q2/2b5/3NP3/2P1B3/PP3PPP/RN1QKB1R w KQkq - 0 1",
    "5rk1/1ppb3p/p1pb4/6q1/3P1p1r/2P1R2P/PP1BQ1P1/5RKN w - - 0 1",     # WAC.003
    "r1bq2rk/pp3pbp/2p1p1pQ/7P/3P4/2PB1N2/PP3PPR/2KR4 w - - 0 1",      # WAC.004
    "8/8/7B/8/4K3/8/1R6/6k1 w - - 0 1",
    "r3k2r/1P4p1/8/2pP4/8/8/1p4P1/R3K2R w KQkq c6 0 1",
    "bqnbrnkr/pppppppp/8/8/8/8/PPPPPPPP/BQNBRNKR w HEhe - 0 1",
    "4r1k1/5ppp/8/8/8/Q7/5PPP/6K1 w - - 0 1",
    "r6k/p1Q4p/2p1b1rq/4p3/B3P3/4P3/PPP3P1/4RRK1 b - - 0 1",           # WAC.088
    "3r2k1/1p1b1pp1/pq5p/8/3NR3/2PQ3P/PP3PP1/6K1 b - - 0 1",
]


@pytest.mark.parametrize("fen", SAMPLE)
def test_compiled_and_interpreted_cores_give_the_same_results(fen):
    """At a fixed number of positions the two cores search the same tree: the same depth, positions, scores and
    exact moves; the same mates by checks and their lines; the same perft."""
    board = chess.Board(fen, chess960="HEhe" in fen)
    far = time.monotonic() + 600
    results = [tactics.probe(board, far, max_nodes=3000, core=c) for c in (COMPILED, INTERPRETED)]
    assert results[0] == results[1] and results[0].depth > 0
    mates = [tactics.find_mate(board, 4, far, max_nodes=3000, core=c) for c in (COMPILED, INTERPRETED)]
    assert mates[0] == mates[1]
    if mates[0] is not None:
        lines = [tactics.mate_line(board, *mates[0], far, core=c) for c in (COMPILED, INTERPRETED)]
        assert lines[0] == lines[1] and len(lines[0]) == 2 * mates[0][1] - 1
    assert (convert.core_board(COMPILED, board).perft(2) == convert.core_board(INTERPRETED, board).perft(2)
            == sum(1 for move in board.legal_moves for _ in _replies(board, move)))


def _replies(board: chess.Board, move: chess.Move) -> list[chess.Move]:
    board.push(move)
    try:
        return list(board.legal_moves)
    finally:
        board.pop()


def isready_lines(env: dict) -> list[str]:
    proc = subprocess.run(ARBOR, input="uci\nisready\nisready\nquit\n", capture_output=True, text=True, cwd=str(ROOT),
                          env=env, timeout=120)
    return [line for line in proc.stdout.splitlines() if line.startswith("info string core")]


def test_isready_says_once_which_core_the_engine_runs_on():
    assert isready_lines(dict(os.environ)) == ["info string core compiled (board, tree, tactics)"]
    env = dict(os.environ, **{core.ENVIRONMENT: "interpreted"})
    lines = isready_lines(env)
    assert len(lines) == 1 and lines[0].startswith("info string core interpreted"), lines


def test_the_engine_plays_a_legal_game_with_the_interpreted_core():
    """Where nothing could compile the core, the engine still plays: a game against itself, probing every move."""
    env = dict(os.environ, **{core.ENVIRONMENT: "interpreted"})
    engine = chess.engine.SimpleEngine.popen_uci(ARBOR, cwd=str(ROOT), timeout=60, env=env)
    try:
        engine.configure({"Evaluator": "heuristic"})
        board = chess.Board("r1bq2rk/pp3pbp/2p1p1pQ/7P/3P4/2PB1N2/PP3PPR/2KR4 w - - 0 1")   # WAC.004: mate in 2
        result = engine.play(board, chess.engine.Limit(time=0.5), info=chess.engine.INFO_SCORE)
        assert board.san(result.move) == "Qxh7+" and result.info["score"].relative == chess.engine.Mate(2)
        board = chess.Board()
        while not board.is_game_over(claim_draw=True) and board.ply() < 24:
            result = engine.play(board, chess.engine.Limit(time=0.2))
            assert result.move in board.legal_moves, (board.fen(), result.move)
            board.push(result.move)
    finally:
        engine.quit()
