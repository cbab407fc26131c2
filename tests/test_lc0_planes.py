"""The classical 112-plane encoder against a slow, square-by-square reference written from lc0's rules."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from engine.evaluators import lc0_planes as P

ORDER = (chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING)


def _game(start_fen, ucis, chess960=False):
    """(final board, history boards without move stacks, repetition flag of every position)."""
    board = chess.Board(start_fen, chess960=chess960) if start_fen else chess.Board(chess960=chess960)
    boards = [board.copy(stack=False)]
    reps = [False]
    for u in ucis:
        board.push_uci(u)
        boards.append(board.copy(stack=False))
        reps.append(board.is_repetition(2))   # python-chess's own notion, from the move stack
    return boards[-1], boards[:-1], reps


def reference_planes(final, history, reps, use_history=True):
    """lc0's encoding, square by square (slow and obvious)."""
    planes = np.zeros((112, 8, 8), np.float32)
    us = final.turn
    positions = list(history) + [final]

    def put(slot, bd, rep, undo_ep=False):
        for sq in chess.SQUARES:
            piece = bd.piece_at(sq)
            if piece is None:
                continue
            if undo_ep and bd.ep_square is not None and piece.piece_type == chess.PAWN:
                step = 8 if chess.square_rank(bd.ep_square) == 2 else -8
                if sq == bd.ep_square + step:       # the pawn that just made a double step
                    sq = bd.ep_square - step
            rel = sq if us == chess.WHITE else chess.square_mirror(sq)
            plane = slot * 13 + ORDER.index(piece.piece_type) + (0 if piece.color == us else 6)
            planes[plane, rel // 8, rel % 8] = 1.0
        if rep:
            planes[slot * 13 + 12] = 1.0

    n = len(positions)
    slots = 8 if use_history else 1
    for i in range(slots):
        k = n - 1 - i
        if k >= 0:
            put(i, positions[k], reps[k] if use_history else False)
        elif positions[0].board_fen() != chess.STARTING_BOARD_FEN or positions[0].turn != chess.WHITE \
                or positions[0].castling_rights != chess.BB_CORNERS or positions[0].ep_square is not None:
            put(i, positions[0], False, undo_ep=True)
    them = not us
    planes[104] = final.has_queenside_castling_rights(us)
    planes[105] = final.has_kingside_castling_rights(us)
    planes[106] = final.has_queenside_castling_rights(them)
    planes[107] = final.has_kingside_castling_rights(them)
    planes[108] = 1.0 if us == chess.BLACK else 0.0
    planes[109] = final.halfmove_clock
    planes[111] = 1.0
    return planes


def _random_games(count, seed=7, fens=(None,), chess960=False):
    rng = random.Random(seed)
    games = []
    for g in range(count):
        fen = fens[g % len(fens)]
        board = chess.Board(fen, chess960=chess960) if fen else chess.Board(chess960=chess960)
        ucis = []
        for _ in range(rng.randint(0, 60)):
            moves = list(board.legal_moves)
            if not moves:
                break
            # Favour knight shuffles now and then so that repetitions happen.
            knights = [m for m in moves if board.piece_type_at(m.from_square) == chess.KNIGHT]
            m = rng.choice(knights) if knights and rng.random() < 0.5 else rng.choice(moves)
            ucis.append(m.uci())
            board.push(m)
        games.append((fen, ucis))
    return games


FENS = (None, "r3k2r/pppq1ppp/2n1bn2/3pp3/3PP3/2N1BN2/PPPQ1PPP/R3K2R w KQkq - 4 9",
        "rnbqkbnr/ppp1pppp/8/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3",
        "4k3/8/8/8/8/8/8/4K2R b K - 97 120", "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")


def test_random_games_match_reference():
    games = _random_games(120, fens=FENS)
    rows, expected = [], []
    for fen, ucis in games:
        final, history, reps = _game(fen, ucis)
        rows.append(P.gather(final, history))
        expected.append(reference_planes(final, history, reps))
    got = P.rows_to_planes(rows)
    for i, (g, e) in enumerate(zip(got, expected)):
        bad = np.nonzero((g != e).any(axis=(1, 2)))[0]
        assert not len(bad), f"game {games[i]}: planes {bad.tolist()} differ"


def test_repetitions_seen():
    final, history, reps = _game(None, "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8".split())
    planes = P.encode(final, history)
    # Plies 4..8 repeat plies 0..4 (slots 0..4); plies 1..3 (slots 5..7) were new.
    for slot in range(5):
        assert planes[slot * 13 + 12].all()
    for slot in range(5, 8):
        assert not planes[slot * 13 + 12].any()
    assert planes[108].sum() == 0 and planes[109].max() == 8


def test_startpos_history_and_black():
    final, history, reps = _game(None, ["e2e4"])
    planes = P.encode(final, history)
    # Black to move: boards are mirrored, "ours" is black.
    assert planes[108].all()
    assert planes[0, 1].all() and planes[0].sum() == 8            # our (black) pawns on rank 7 -> row 1
    assert planes[6, 6, 4] == 0 and planes[6, 4, 4] == 1          # their e-pawn: e4 -> mirrored e5 (row 4)
    assert planes[13 + 6, 6, 4] == 1                               # one ply earlier it was on e2 (row 6)
    assert not planes[2 * 13:104].any()                            # startpos: no history before the game
    assert planes[104:108].all() and planes[111].all() and not planes[110].any()


def test_fen_history_fill_with_en_passant():
    board = chess.Board("rnbqkbnr/ppp1pppp/8/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3")
    planes = P.encode(board, [])
    assert planes[6, 4, 3] == 1 and planes[6, 6, 3] == 0           # now: black pawn on d5
    for slot in range(1, 8):                                        # filled history: d-pawn back on d7
        assert planes[slot * 13 + 6, 4, 3] == 0 and planes[slot * 13 + 6, 6, 3] == 1
        assert (planes[slot * 13: slot * 13 + 6] == planes[0:6]).all()


def test_castling_planes_from_side_to_move():
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R b Kq - 0 1")
    planes = P.encode(board, [])
    assert planes[104].all() and not planes[105].any()             # we (black) can castle queenside only
    assert not planes[106].any() and planes[107].all()             # they (white) kingside only


def test_no_history_mode():
    final, history, reps = _game(None, "e2e4 e7e5 g1f3".split())
    planes = P.encode(final, history, use_history=False)
    full = P.encode(final, history)
    assert (planes[:13] == full[:13]).all() and (planes[104:] == full[104:]).all()
    assert not planes[13:104].any()


def test_row_hash_distinguishes_history():
    a = _game(None, "g1f3 g8f6 f3g1 f6g8".split())
    b = _game(None, "b1c3 b8c6 c3b1 c6b8".split())
    assert a[0].fen() == b[0].fen()
    assert hash(P.gather(a[0], a[1])) != hash(P.gather(b[0], b[1]))
    assert P.gather(a[0], a[1], False) == P.gather(b[0], b[1], False)


@pytest.mark.parametrize("count", [1, 7, 33])
def test_batch_equals_single(count):
    games = _random_games(count, seed=11)
    rows = [P.gather(*_game(f, u)[:2]) for f, u in games]
    batch = P.rows_to_planes(rows)
    for row, planes in zip(rows, batch):
        assert (P.rows_to_planes([row])[0] == planes).all()


def test_repetition_in_long_quiet_window():
    # High rule-50 count: the pre-filtered scan path. The position after ply 2 comes back at ply 14.
    ucis = "e1d1 e8d8 d1c1 d8c8 c1b1 c8b8 b1c1 b8c8 c1d1 c8d8 d1e1 d8e8 e1d1 e8d8".split()
    final, history, reps = _game("4k3/8/8/8/8/8/8/4K2R w - - 40 60", ucis)
    assert reps[-1] and reps[-2] and not reps[3]
    assert (P.encode(final, history) == reference_planes(final, history, reps)).all()
    flags = P.gather(final, history)[P._REP:P._AUX]
    assert list(flags) == [int(r) for r in reversed(reps[-8:])]
