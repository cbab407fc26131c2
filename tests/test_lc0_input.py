"""The tree's compiled input planes (engine/evaluators/lc0_input.py) against the python-chess encoder
(lc0_planes.py), byte for byte, on positions from random games: history, repetitions, castling rights, en passant,
promotions, games from a FEN, Chess960; compiled and interpreted."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from engine import compiled
from engine.board import convert
from engine.evaluators import lc0_planes

CORES = [compiled.CORE] + ([compiled.load("interpreted")] if compiled.CORE.compiled else [])


def game(rng: random.Random, chess960: bool) -> list[chess.Board]:
    """A random game's positions, half its moves (when it can) shuffling a knight, king or rook: repetitions."""
    board = chess.Board.from_chess960_pos(rng.randrange(960)) if chess960 else chess.Board()
    boards = [board.copy(stack=False)]
    if not chess960 and rng.random() < 0.5:   # knights out and back: the start position repeats
        for uci in "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6".split():
            board.push_uci(uci)
            boards.append(board.copy(stack=False))
    for _ in range(rng.randrange(10, 120)):
        moves = list(board.legal_moves)
        if not moves:
            break
        quiet = [m for m in moves if not board.is_capture(m)
                 and board.piece_type_at(m.from_square) in (chess.KNIGHT, chess.KING, chess.ROOK)]
        board.push(rng.choice(quiet) if quiet and rng.random() < 0.5 else rng.choice(moves))
        boards.append(board.copy(stack=False))
    return boards


def positions_of(core, boards: list[chess.Board]):
    """The compiled records of a game's positions, as the tree writes them for its game."""
    first = boards[0]
    start = lc0_planes.is_startpos(first)
    positions = core.lc0_input.Positions(4)
    positions.set_start(start, lc0_planes._fill_slot(first, True), 0 if start else convert.zobrist(core, first))
    for k, board in enumerate(boards):
        oc = board.occupied_co
        positions.set_record(k, (oc[True], oc[False], board.pawns, board.knights, board.bishops, board.rooks,
                                 board.queens, board.kings), board.clean_castling_rights(), board.turn,
                             lc0_planes._ep_flag(board), board.halfmove_clock, convert.zobrist(core, board))
    return positions


@pytest.mark.parametrize("core", CORES, ids=lambda core: "compiled" if core.compiled else "interpreted")
def test_the_planes_equal_the_python_chess_encoder_s(core):
    rng = random.Random(1)
    checked = repeated = 0
    games = 40 if core.compiled else 8
    for number in range(games):
        boards = game(rng, number % 4 == 3)
        if number % 5 == 4:   # a game from a FEN: lc0 fills the history before it with its first position
            cut = rng.randrange(len(boards))
            boards = [chess.Board(boards[cut].fen(), chess960=boards[cut].chess960)] + boards[cut + 1:]
        positions = positions_of(core, boards)
        for k, board in enumerate(boards):
            for history in (True, False):
                expected = lc0_planes.encode(board, boards[:k], history)
                assert np.array_equal(positions.planes(k, history), expected), (number, k, history, board.fen())
                repeated += history and bool(expected[12:104:13].any())
            checked += 1
    assert checked >= (1000 if core.compiled else 100) and repeated > 10


def test_cache_keys_tell_positions_apart_as_the_planes_do():
    """Equal planes, equal keys; positions whose planes differ get different keys (history included)."""
    rng = random.Random(2)
    core = compiled.CORE
    by_key: dict[int, bytes] = {}
    for number in range(30):
        boards = game(rng, number % 3 == 2)
        positions = positions_of(core, boards)
        for k, board in enumerate(boards):
            planes = positions.planes(k, True).tobytes() + board.legal_moves.count().to_bytes(2, "little")
            assert by_key.setdefault(positions.cache_key(k, True), planes) == planes
    assert len(by_key) > 1500
