"""lc0's 1858-move policy map: generation, flips, castling, promotions, vectorised lookup."""

from __future__ import annotations

import hashlib
import random

import chess
import numpy as np
import pytest

from engine.evaluators import lc0_policy as L

# (index, move) pairs read off lc0's own list (src/chess/bitboard.cc, kIdxToMove), spread over the table.
LC0_SPOTS = {
    0: "a1b1", 22: "a1h8", 23: "b1a1", 97: "e1a1", 103: "e1h1", 159: "g1f3", 161: "g1h3", 322: "e2e4",
    320: "e2c4", 327: "e2h5", 800: "e4d6", 807: "e4a8", 1200: "c6a4", 1600: "a8a2", 1607: "a8d5",
    1784: "h8h7", 1791: "h8g8", 1792: "a7a8q", 1793: "a7a8r", 1794: "a7a8b", 1795: "a7b8q", 1800: "b7a8b", 1807: "c7b8q",
    1832: "e7f8r", 1834: "f7e8q", 1857: "h7h8b",
}


def test_table_size_and_uniqueness():
    assert len(L.POLICY_MOVES) == 1858
    assert len(set(L.POLICY_MOVES)) == 1858
    assert sum(1 for m in L.POLICY_MOVES if len(m) == 5) == 66


def test_matches_lc0_spots():
    for idx, uci in LC0_SPOTS.items():
        assert L.POLICY_MOVES[idx] == uci, idx


def test_table_is_pinned():
    # Pins the whole order; a change must be re-verified against lc0's kIdxToMove.
    digest = hashlib.sha256(",".join(L.POLICY_MOVES).encode()).hexdigest()
    assert digest == "89f7e8b772633e70c06fae4caac5a2858eeeee5c357b19cd355553f79b51b231"
    order = [chess.parse_square(m[:2]) * 64 + chess.parse_square(m[2:4]) for m in L.POLICY_MOVES[:1792]]
    assert order == sorted(order), "plain moves are sorted by from-square, then to-square"


def test_every_queen_and_knight_move_present():
    for frm in chess.SQUARES:
        for to in chess.SQUARES:
            if frm == to:
                continue
            dr = abs(chess.square_rank(frm) - chess.square_rank(to))
            df = abs(chess.square_file(frm) - chess.square_file(to))
            reachable = dr == 0 or df == 0 or dr == df or {dr, df} == {1, 2}
            assert ((chess.SQUARE_NAMES[frm] + chess.SQUARE_NAMES[to]) in L.MOVE_INDEX) == reachable


@pytest.mark.parametrize("turn", [chess.WHITE, chess.BLACK])
def test_round_trip_all_indices(turn):
    for idx, move in L.all_indices(turn):
        assert L.move_to_index(move, turn, castling=False) == idx


def test_black_is_mirrored():
    assert L.move_to_index(chess.Move.from_uci("e7e5"), chess.BLACK) == L.MOVE_INDEX["e2e4"]
    assert L.move_to_index(chess.Move.from_uci("g8f6"), chess.BLACK) == L.MOVE_INDEX["g1f3"]
    assert L.move_to_index(chess.Move.from_uci("b2a1q"), chess.BLACK) == L.MOVE_INDEX["b7a8q"]


def test_promotions():
    w = chess.WHITE
    assert L.move_to_index(chess.Move.from_uci("a7a8n"), w) == L.MOVE_INDEX["a7a8"]
    assert L.move_to_index(chess.Move.from_uci("a7a8q"), w) == 1792
    assert L.move_to_index(chess.Move.from_uci("a7a8r"), w) == 1793
    assert L.move_to_index(chess.Move.from_uci("a7a8b"), w) == 1794
    assert L.move_to_index(chess.Move.from_uci("g7h8n"), w) == L.MOVE_INDEX["g7h8"]
    assert L.move_to_index(chess.Move.from_uci("d2d1n"), chess.BLACK) == L.MOVE_INDEX["d7d8"]


def test_castling_is_king_takes_rook():
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    assert L.policy_index(board, chess.Move.from_uci("e1g1")) == L.MOVE_INDEX["e1h1"]
    assert L.policy_index(board, chess.Move.from_uci("e1c1")) == L.MOVE_INDEX["e1a1"]
    assert L.move_to_index(chess.Move.from_uci("e1g1"), chess.WHITE) == L.MOVE_INDEX["e1h1"]
    board.turn = chess.BLACK
    assert L.policy_index(board, chess.Move.from_uci("e8g8")) == L.MOVE_INDEX["e1h1"]
    assert L.policy_index(board, chess.Move.from_uci("e8c8")) == L.MOVE_INDEX["e1a1"]
    # A rook (not a king) going e1 -> g1 keeps its own index.
    rook = chess.Board("4k3/8/8/8/8/8/8/3KR3 w - - 0 1")
    assert L.policy_index(rook, chess.Move.from_uci("e1g1")) == L.MOVE_INDEX["e1g1"]
    assert L.move_to_index(chess.Move.from_uci("e1g1"), chess.WHITE, castling=False) == L.MOVE_INDEX["e1g1"]
    # Chess960 boards write castling as king takes rook already.
    b960 = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", chess960=True)
    assert L.policy_index(b960, chess.Move.from_uci("e1h1")) == L.MOVE_INDEX["e1h1"]


def test_unknown_move_raises():
    with pytest.raises(ValueError):
        L.move_to_index(chess.Move.from_uci("a1b4"), chess.WHITE)


def _random_positions(n, seed=3):
    rng = random.Random(seed)
    out = []
    fens = [chess.STARTING_FEN, "r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R w KQkq - 0 1",
            "r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R b KQkq - 0 1"]
    for fen in fens:
        board = chess.Board(fen)
        for _ in range(n):
            moves = list(board.legal_moves)
            if not moves:
                break
            out.append(board.copy(stack=False))
            board.push(rng.choice(moves))
    return out


def test_vectorised_matches_scalar():
    for board in _random_positions(150):
        moves = list(board.legal_moves)
        fast = L.policy_indices(board, moves)
        slow = [L.policy_index(board, m) for m in moves]
        assert fast.tolist() == slow
        assert len(set(slow)) == len(slow), "distinct legal moves get distinct indices"


def test_indices_of_a_batch_match_one_position_at_a_time():
    """The network evaluator maps a batch's move ids by table, choosing each position's table: the same indices
    as one position at a time, with castling, a rook on e1 going to g1, and Chess960."""
    boards = _random_positions(150)
    boards += [chess.Board("4k3/8/8/8/8/8/8/2K1R3 w - - 0 1"), chess.Board("2kr4/8/8/8/8/8/8/4K3 b - - 0 1"),
               chess.Board("rnbqk2r/pppppppp/8/8/8/8/PPPPPPPP/RNBQK2R w KQkq - 0 1", chess960=True),
               chess.Board("bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9", chess960=True)]
    tables, ids, expected = [], [], []
    for board in boards:
        moves = list(board.legal_moves)
        tables += [L.id_table(board)] * len(moves)
        ids += [m.from_square | m.to_square << 6 | (m.promotion or 0) << 12 for m in moves]
        expected += L.policy_indices_list(board, moves)
    columns = L.id_columns()
    assert [columns[t][i] for t, i in zip(tables, ids)] == expected
    shifted = L.id_columns(np.arange(L.POLICY_SIZE, dtype=np.int64) + 7)  # a network's columns: the map applied
    assert [shifted[t][i] for t, i in zip(tables, ids)] == [e + 7 for e in expected]
