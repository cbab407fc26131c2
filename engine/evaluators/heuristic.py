"""The built-in evaluator used when there is no network: hand-written chess knowledge.

Value: material and piece-square tables tapered between middlegame and endgame, mobility, pawn
structure (passed pawns), king safety, and a one-move tactical correction for the side to move
(its best capture, and its own pieces that the opponent attacks and it cannot all save). The
centipawn total is squashed to [-1, 1].

Priors: a softmax over cheap move features (exchange gain, promotions, checks, threats,
piece-square gains, escapes of attacked pieces, castling, passed-pawn pushes). Checks are found
with precomputed attack masks from the enemy king's square; only checks that leave the king
without a flight square are verified exactly, so mates in one get almost all the prior.

Everything is bitboard arithmetic on python-chess's masks, because the search calls this once per
simulation: one leaf costs a few tens of microseconds.
"""

from __future__ import annotations

import math
import struct
from array import array
from collections import OrderedDict
from typing import Any, Optional

import chess

from ..board.moves import move_from_id, move_ids
from . import forcing
from .base import Evaluator, Leaf, cache_entries

PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING = range(1, 7)

# Material in centipawns, middlegame and endgame. Pawns gain weight in the endgame because they
# promote; the minor pieces lose a little because they cannot mate on their own.
MATERIAL_MG = (0, 100, 320, 330, 500, 900, 0)
MATERIAL_EG = (0, 120, 300, 320, 520, 930, 0)
# What a piece is worth when deciding whether an exchange on one square wins or loses material.
# The king "defends" and "attacks" like a piece too valuable ever to be given up.
EXCHANGE_VALUE = (0, 100, 320, 330, 500, 900, 2000)

# Game phase: 24 with all pieces on the board (a minor piece counts 1, a rook 2, a queen 4), 0
# with only kings and pawns.
FULL_PHASE = 24

# Piece-square tables, from White's side, rank 8 first (as a diagram reads). Middlegame tables
# reward development and central control and keep the king in its castled corner; the endgame
# tables centralise the king and pull the pawns forward.
_PST_DIAGRAMS_MG = {
    PAWN: (
        0, 0, 0, 0, 0, 0, 0, 0,
        50, 50, 50, 50, 50, 50, 50, 50,
        10, 10, 20, 30, 30, 20, 10, 10,
        5, 5, 10, 25, 25, 10, 5, 5,
        0, 0, 0, 20, 20, 0, 0, 0,
        5, -5, -10, 0, 0, -10, -5, 5,
        5, 10, 10, -20, -20, 10, 10, 5,
        0, 0, 0, 0, 0, 0, 0, 0),
    KNIGHT: (
        -50, -40, -30, -30, -30, -30, -40, -50,
        -40, -20, 0, 0, 0, 0, -20, -40,
        -30, 0, 10, 15, 15, 10, 0, -30,
        -30, 5, 15, 20, 20, 15, 5, -30,
        -30, 0, 15, 20, 20, 15, 0, -30,
        -30, 5, 10, 15, 15, 10, 5, -30,
        -40, -20, 0, 5, 5, 0, -20, -40,
        -50, -40, -30, -30, -30, -30, -40, -50),
    BISHOP: (
        -20, -10, -10, -10, -10, -10, -10, -20,
        -10, 0, 0, 0, 0, 0, 0, -10,
        -10, 0, 5, 10, 10, 5, 0, -10,
        -10, 5, 5, 10, 10, 5, 5, -10,
        -10, 0, 10, 10, 10, 10, 0, -10,
        -10, 10, 10, 10, 10, 10, 10, -10,
        -10, 5, 0, 0, 0, 0, 5, -10,
        -20, -10, -10, -10, -10, -10, -10, -20),
    ROOK: (
        0, 0, 0, 0, 0, 0, 0, 0,
        5, 10, 10, 10, 10, 10, 10, 5,
        -5, 0, 0, 0, 0, 0, 0, -5,
        -5, 0, 0, 0, 0, 0, 0, -5,
        -5, 0, 0, 0, 0, 0, 0, -5,
        -5, 0, 0, 0, 0, 0, 0, -5,
        -5, 0, 0, 0, 0, 0, 0, -5,
        0, 0, 0, 5, 5, 0, 0, 0),
    QUEEN: (
        -20, -10, -10, -5, -5, -10, -10, -20,
        -10, 0, 0, 0, 0, 0, 0, -10,
        -10, 0, 5, 5, 5, 5, 0, -10,
        -5, 0, 5, 5, 5, 5, 0, -5,
        0, 0, 5, 5, 5, 5, 0, -5,
        -10, 5, 5, 5, 5, 5, 0, -10,
        -10, 0, 5, 0, 0, 0, 0, -10,
        -20, -10, -10, -5, -5, -10, -10, -20),
    KING: (
        -30, -40, -40, -50, -50, -40, -40, -30,
        -30, -40, -40, -50, -50, -40, -40, -30,
        -30, -40, -40, -50, -50, -40, -40, -30,
        -30, -40, -40, -50, -50, -40, -40, -30,
        -20, -30, -30, -40, -40, -30, -30, -20,
        -10, -20, -20, -20, -20, -20, -20, -10,
        20, 20, 0, 0, 0, 0, 20, 20,
        20, 30, 10, 0, 0, 10, 30, 20),
}
_PST_DIAGRAMS_EG = {
    PAWN: (
        0, 0, 0, 0, 0, 0, 0, 0,
        90, 90, 90, 90, 90, 90, 90, 90,
        50, 50, 50, 50, 50, 50, 50, 50,
        30, 30, 30, 30, 30, 30, 30, 30,
        15, 15, 15, 15, 15, 15, 15, 15,
        5, 5, 5, 5, 5, 5, 5, 5,
        0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0),
    KNIGHT: _PST_DIAGRAMS_MG[KNIGHT],
    BISHOP: _PST_DIAGRAMS_MG[BISHOP],
    # In the endgame a rook belongs wherever it is active; the back-rank preferences fade.
    ROOK: (0,) * 64,
    QUEEN: _PST_DIAGRAMS_MG[QUEEN],
    KING: (
        -50, -40, -30, -20, -20, -30, -40, -50,
        -30, -20, -10, 0, 0, -10, -20, -30,
        -30, -10, 20, 30, 30, 20, -10, -30,
        -30, -10, 30, 40, 40, 30, -10, -30,
        -30, -10, 30, 40, 40, 30, -10, -30,
        -30, -10, 20, 30, 30, 20, -10, -30,
        -30, -30, 0, 0, 0, 0, -30, -30,
        -50, -30, -30, -30, -30, -30, -30, -50),
}


def _square_tables(diagrams: dict, material: tuple) -> tuple:
    """Material plus placement, indexed [color][piece_type][square] for real square numbers."""
    tables = [[None] * 7, [None] * 7]
    for pt in range(1, 7):
        diagram = diagrams[pt]
        # Diagram index i shows rank 8 - i // 8: square (i ^ 56) for White, i itself for Black.
        white = [0] * 64
        black = [0] * 64
        for i, bonus in enumerate(diagram):
            white[i ^ 56] = material[pt] + bonus
            black[i] = material[pt] + bonus
        tables[chess.WHITE][pt] = white
        tables[chess.BLACK][pt] = black
    return tuple(tuple(t) for t in tables)


SQUARE_MG = _square_tables(_PST_DIAGRAMS_MG, MATERIAL_MG)
SQUARE_EG = _square_tables(_PST_DIAGRAMS_EG, MATERIAL_EG)


def _tapered_tables(color: bool, phase: int) -> tuple:
    mg, eg = SQUARE_MG[color], SQUARE_EG[color]
    return (None,) + tuple(
        tuple((mg[pt][sq] * phase + eg[pt][sq] * (FULL_PHASE - phase)) / FULL_PHASE for sq in range(64))
        for pt in range(1, 7))


# [color][phase][piece_type][square]: the move priors read the placement gain of a move here.
TAPERED = tuple(tuple(_tapered_tables(color, phase) for phase in range(FULL_PHASE + 1))
                for color in (chess.BLACK, chess.WHITE))

# Packed scores: a middlegame and an endgame score in one int (mg + eg * 2**20), so that one
# addition per term updates both; unpacked once per leaf.
_SHIFT = 20
_HALF = 1 << (_SHIFT - 1)
_MASK = (1 << _SHIFT) - 1


def pack(mg: int, eg: int) -> int:
    return (eg << _SHIFT) + mg


SQUARE_PACKED = tuple(
    (None,) + tuple(tuple(pack(SQUARE_MG[color][pt][sq], SQUARE_EG[color][pt][sq]) for sq in range(64))
                    for pt in range(1, 7))
    for color in (chess.BLACK, chess.WHITE))

# [color][rank][the 8 bits of that rank]: the packed table score of the pawns on one rank, so a
# side's pawns are scored with six lookups instead of a loop.
PAWN_ROWS = tuple(
    tuple(tuple(sum(SQUARE_PACKED[color][PAWN][rank * 8 + f] for f in range(8) if bits >> f & 1)
                for bits in range(256))
          for rank in range(8))
    for color in (chess.BLACK, chess.WHITE))

# Bonus for a passed pawn by ranks advanced (0 = on its own second rank), on top of the tables.
PASSED_BONUS_MG = (0, 5, 10, 20, 35, 60, 100, 0)
PASSED_BONUS_EG = (0, 10, 20, 40, 70, 120, 190, 0)
PASSED_PACKED = (
    tuple(pack(PASSED_BONUS_MG[6 - (sq >> 3)], PASSED_BONUS_EG[6 - (sq >> 3)]) if 8 <= sq < 56 else 0
          for sq in range(64)),
    tuple(pack(PASSED_BONUS_MG[(sq >> 3) - 1], PASSED_BONUS_EG[(sq >> 3) - 1]) if 8 <= sq < 56 else 0
          for sq in range(64)))

# Pawns on the three files in front of a king on its first two ranks shelter it from checks.
KING_SHELTER = [[0] * 64, [0] * 64]
for _sq in range(64):
    _file = chess.square_file(_sq)
    _cols = chess.BB_FILES[_file]
    if _file > 0:
        _cols |= chess.BB_FILES[_file - 1]
    if _file < 7:
        _cols |= chess.BB_FILES[_file + 1]
    if chess.square_rank(_sq) <= 1:
        KING_SHELTER[chess.WHITE][_sq] = _cols & (chess.BB_RANK_2 | chess.BB_RANK_3)
    if chess.square_rank(_sq) >= 6:
        KING_SHELTER[chess.BLACK][_sq] = _cols & (chess.BB_RANK_7 | chess.BB_RANK_6)
KING_SHELTER = (tuple(KING_SHELTER[0]), tuple(KING_SHELTER[1]))
SHELTER_PAWN = pack(12, 0)
# Weight of one enemy piece bearing on the squares around the king. The danger (middlegame only)
# grows with the square of the total: one attacker is harmless, three usually break through.
KING_ATTACKER_WEIGHT = (0, 0, 2, 2, 3, 5, 0)
KING_DANGER_CAP = 40
KING_DANGER = tuple(pack(5 * p * p // 2, 0) for p in range(KING_DANGER_CAP + 1))

# Mobility: per square a piece reaches that is neither its own nor covered by enemy pawns.
MOBILITY = (0, 0, pack(4, 4), pack(4, 4), pack(2, 4), pack(1, 2), 0)
BISHOP_PAIR = pack(30, 40)
ROOK_OPEN_FILE = pack(20, 10)
ROOK_HALF_OPEN_FILE = pack(10, 5)
# Winning a won endgame needs the losing king driven to the edge and the winning king close by.
MOP_UP_MARGIN = 400
MOP_UP_EDGE = 10
MOP_UP_PROXIMITY = 4
CENTRE_DISTANCE = tuple(
    max(3 - min(chess.square_file(s), 7 - chess.square_file(s)),
        3 - min(chess.square_rank(s), 7 - chess.square_rank(s)))
    for s in range(64))
TEMPO = 10
PAWNLESS_SCALE = 0.125

# The side to move collects about this share of its one-move tactics (best capture, pieces it
# cannot all save): a static exchange misses pins, counter-threats and zwischenzugs.
TACTICS_CONFIDENCE = 0.8
# tanh(cp / VALUE_SCALE_CP): +100 cp -> 0.24, +300 cp (a piece) -> 0.63, a queen -> 0.97.
VALUE_SCALE_CP = 410.0
# Share of the non-decisive probability mass reported as draws in the optional WDL.
DRAW_SHARE = 0.5

# Priors. Move features are scored in centipawns; PRIOR_TEMPERATURE_CP of advantage multiplies a
# move's prior by e.
PRIOR_TEMPERATURE_CP = 110.0
PRIOR_KNEE_CP = 200.0
PRIOR_SLOPE_ABOVE_KNEE = 0.4
PRIOR_RANGE_CP = 900.0       # below the best move by more than this counts as this: a sliver of prior
CAPTURE_FORCING = 40         # captures change the position the most: look at them first
CHECK_BONUS = 70
SAFE_CHECK_BONUS = 60        # a check the opponent cannot answer by taking the checker
CHECK_SACRIFICE_SHARE = 0.3  # of the material a check gives up: checks are worth a look
BOXED_KING_CHECK_BONUS = 100  # a check that leaves the king no flight square
MATE_BONUS = 4000            # a verified mate in one
MATE_VALUE = 0.99            # value of a position with a mate in one on the board
MATE_CHECKS_VERIFIED = 8     # exact checkmate tests per leaf, of checks leaving the king no flight
THREAT_SHARE = 0.2           # of the best target attacked from the new square
FORK_SHARE = 0.5             # of the second target: the opponent can save only one
ESCAPE_SHARE = 0.9           # of what the piece would lose if it stayed
CASTLE_BONUS = 60
KING_WALK_PENALTY = 50       # a king move that gives up castling, in the middlegame
# Promotion to a queen gains a queen for a pawn; a knight sometimes checks; the others never help.
PROMOTION_GAIN = (0, 0, 100, -300, -200, 800, 0)

_KNIGHT_ATTACKS = chess.BB_KNIGHT_ATTACKS
_KING_ATTACKS = chess.BB_KING_ATTACKS
_PAWN_ATTACKS = chess.BB_PAWN_ATTACKS
_DIAG_ATTACKS = chess.BB_DIAG_ATTACKS
_DIAG_MASKS = chess.BB_DIAG_MASKS
_FILE_ATTACKS = chess.BB_FILE_ATTACKS
_FILE_MASKS = chess.BB_FILE_MASKS
_RANK_ATTACKS = chess.BB_RANK_ATTACKS
_RANK_MASKS = chess.BB_RANK_MASKS
_SQUARES = chess.BB_SQUARES
_FILES = chess.BB_FILES
_NOT_FILE_A = ~chess.BB_FILE_A & chess.BB_ALL
_NOT_FILE_H = ~chess.BB_FILE_H & chess.BB_ALL
_ALL = chess.BB_ALL


def _attacks_from(pt: int, sq: int, color: bool, occ: int) -> int:
    """Squares a piece of this type and colour on ``sq`` attacks, with blockers ``occ``."""
    if pt == KNIGHT:
        return _KNIGHT_ATTACKS[sq]
    if pt == PAWN:
        return _PAWN_ATTACKS[color][sq]
    if pt == BISHOP:
        return _DIAG_ATTACKS[sq][_DIAG_MASKS[sq] & occ]
    if pt == ROOK:
        return _FILE_ATTACKS[sq][_FILE_MASKS[sq] & occ] | _RANK_ATTACKS[sq][_RANK_MASKS[sq] & occ]
    if pt == QUEEN:
        return (_DIAG_ATTACKS[sq][_DIAG_MASKS[sq] & occ] | _FILE_ATTACKS[sq][_FILE_MASKS[sq] & occ]
                | _RANK_ATTACKS[sq][_RANK_MASKS[sq] & occ])
    return _KING_ATTACKS[sq]


# [color][piece_type][square]: attacks on an empty board, to rule out threats before computing them.
EMPTY_BOARD_REACH = tuple(
    (0, _PAWN_ATTACKS[color], _KNIGHT_ATTACKS, tuple(_DIAG_ATTACKS[s][0] for s in range(64)),
     tuple(_FILE_ATTACKS[s][0] | _RANK_ATTACKS[s][0] for s in range(64)),
     tuple(_DIAG_ATTACKS[s][0] | _FILE_ATTACKS[s][0] | _RANK_ATTACKS[s][0] for s in range(64)),
     _KING_ATTACKS)
    for color in (chess.BLACK, chess.WHITE))


# An evaluation depends on the position alone, not on the clocks or the way it was reached, so a position
# the search reaches again (a transposition: a quarter of the leaves of the bench searches) is answered from a
# cache, keyed by everything the evaluation and the legal moves read. Memory per entry measured with tracemalloc
# over the bench searches, rounded up.
_POSITION_KEY = struct.Struct("<10Q?b?")
CACHE_ENTRY_BYTES = 1000


def position_key(board: chess.Board) -> bytes:
    """The fields of ``board`` its evaluation depends on: pieces, promoted pieces, castling rights, side to
    move, en passant square and Chess960 (which spells castling differently)."""
    ep = board.ep_square
    oc = board.occupied_co
    return _POSITION_KEY.pack(oc[1], oc[0], board.pawns, board.knights, board.bishops, board.rooks, board.queens,
                              board.kings, board.promoted, board.castling_rights, board.turn,
                              -1 if ep is None else ep, board.chess960)


class HeuristicEvaluator(Evaluator):
    """Hand-written value and priors; see the module docstring. With ``params``, evaluations are kept in a cache of
    ``NNCacheSize`` entries (at most half of ``RamLimitMb``); without, every leaf is worked out."""

    name = "heuristic"
    copies_to_workers = True

    def __init__(self, params: Optional[Any] = None) -> None:
        self.params = params
        self._cache: "OrderedDict[bytes, tuple]" = OrderedDict()
        self._floor = 0.0  # the ForcingPriorFloor of the cached priors

    def __reduce__(self) -> tuple:
        """A worker process's copy starts with an empty cache; the pipeline gives it its share of the size."""
        return HeuristicEvaluator, (self.params,)

    def _cache_size(self) -> int:
        return cache_entries(self.params, CACHE_ENTRY_BYTES, self.cache_processes) if self.params is not None else 0

    def evaluate(self, leaves: list[Leaf]) -> None:
        size = self._cache_size()
        floor = forcing.prior_floor(self.params)
        if size <= 0:
            for leaf in leaves:
                self.evaluate_leaf(leaf)
                forcing.apply(leaf, floor)
            return
        cache = self._cache
        if self._floor != floor:  # the entries' priors were raised to another floor
            cache.clear()
            self._floor = floor
        for leaf in leaves:
            key = position_key(leaf.board)
            entry = cache.get(key)
            if entry is None or len(entry[0]) != len(leaf.moves):
                # (A root searched with searchmoves, or cut down by the tablebases, has fewer moves than its
                # position: its priors differ, and the last evaluation of the key is the one kept.)
                self.evaluate_leaf(leaf)
                forcing.apply(leaf, floor)
                cache[key] = (array("d", leaf.priors), leaf.value, leaf.wdl, tuple(leaf.mates))
                while len(cache) > size:
                    cache.popitem(last=False)
                continue
            try:
                cache.move_to_end(key)
            except KeyError:  # cleared by ucinewgame in between
                pass
            priors, leaf.value, leaf.wdl, mates = entry
            leaf.priors = priors.tolist()
            leaf.mates = list(mates)

    def memory_bytes(self) -> int:
        """What the cache holds, after dropping the oldest entries a lowered RamLimitMb no longer allows (the search
        asks before its first evaluation, and must not find the tree full because of the previous search's cache)."""
        cache, size = self._cache, max(self._cache_size(), 0)
        while len(cache) > size:
            cache.popitem(last=False)
        return len(cache) * CACHE_ENTRY_BYTES

    def cache_contents(self) -> "OrderedDict[bytes, tuple]":
        return self._cache

    def clear(self) -> None:
        self._cache.clear()

    def evaluate_leaf(self, leaf: Leaf) -> None:
        board = leaf.board
        moves = leaf.moves
        us = board.turn
        them = not us
        occ = board.occupied
        occ_co = board.occupied_co
        pawns = board.pawns
        knights = board.knights
        bishops = board.bishops
        rooks = board.rooks
        queens = board.queens
        kings = board.kings

        # Piece type on each square of either colour; only occupied squares are ever read, and
        # pawns are the most common piece, so the pieces are written over a board of pawns.
        kind = [PAWN] * 64
        piece_attacks = [0] * 64       # what the (non-pawn) piece on each square attacks
        bk = kings & occ_co[0]
        wk = kings & occ_co[1]
        king_sq = (bk.bit_length() - 1, wk.bit_length() - 1)
        kind[king_sq[0]] = KING
        kind[king_sq[1]] = KING
        king_zone = (_KING_ATTACKS[king_sq[0]] | bk, _KING_ATTACKS[king_sq[1]] | wk)

        # Pawn attacks first: the pieces' safe mobility excludes squares covered by enemy pawns.
        wp = pawns & occ_co[1]
        bp = pawns & occ_co[0]
        wl = ((wp & _NOT_FILE_A) << 7) & _ALL
        wr = ((wp & _NOT_FILE_H) << 9) & _ALL
        bl = (bp & _NOT_FILE_A) >> 9
        br = (bp & _NOT_FILE_H) >> 7
        pawn_att = (bl | br, wl | wr)
        att = [bl | br, wl | wr]          # attacked at least once
        att2 = [bl & br, wl & wr]         # attacked at least twice
        # Passed pawns: none of the enemy's pawns ahead of them on their own or a neighbouring file.
        x = bp >> 8
        x |= x >> 8
        x |= x >> 16
        x |= x >> 32
        white_passed = wp & ~(x | ((x & _NOT_FILE_H) << 1) | ((x & _NOT_FILE_A) >> 1))
        x = (wp << 8) & _ALL
        x |= (x << 8) & _ALL
        x |= (x << 16) & _ALL
        x |= (x << 32) & _ALL
        black_passed = bp & ~(x | ((x & _NOT_FILE_H) << 1) | ((x & _NOT_FILE_A) >> 1))
        passed = (black_passed, white_passed)

        # Scores are packed middlegame/endgame pairs (see pack()).
        score = [0, 0]
        # Per colour, attacks by piece type, for "least valuable attacker" questions.
        by_type = [[0, pawn_att[0], 0, 0, 0, 0, 0], [0, pawn_att[1], 0, 0, 0, 0, 0]]
        king_pressure = [0, 0]    # attack weight on this colour's king zone

        for c in (0, 1):
            own = occ_co[c]
            sq_score = SQUARE_PACKED[c]
            a_all = att[c]
            a_two = att2[c]
            types = by_type[c]
            avoid = own | pawn_att[c ^ 1]
            zone = king_zone[c ^ 1]
            pressure = 0

            bb = pawns & own
            rows = PAWN_ROWS[c]
            sc = (rows[1][(bb >> 8) & 255] + rows[2][(bb >> 16) & 255] + rows[3][(bb >> 24) & 255]
                  + rows[4][(bb >> 32) & 255] + rows[5][(bb >> 40) & 255] + rows[6][(bb >> 48) & 255])
            bb = passed[c]
            if bb:
                bonus = PASSED_PACKED[c]
                while bb:
                    low = bb & -bb
                    bb ^= low
                    sc += bonus[low.bit_length() - 1]

            bb = knights & own
            if bb:
                table = sq_score[KNIGHT]
                reach = 0
                n = 0
                while bb:
                    low = bb & -bb
                    sq = low.bit_length() - 1
                    bb ^= low
                    kind[sq] = KNIGHT
                    a = _KNIGHT_ATTACKS[sq]
                    piece_attacks[sq] = a
                    sc += table[sq]
                    a_two |= a_all & a
                    a_all |= a
                    reach |= a
                    n += (a & ~avoid).bit_count()
                    if a & zone:
                        pressure += KING_ATTACKER_WEIGHT[KNIGHT]
                sc += MOBILITY[KNIGHT] * n
                types[KNIGHT] = reach

            bb = bishops & own
            if bb:
                table = sq_score[BISHOP]
                reach = 0
                n = 0
                if bb & (bb - 1):
                    sc += BISHOP_PAIR
                while bb:
                    low = bb & -bb
                    sq = low.bit_length() - 1
                    bb ^= low
                    kind[sq] = BISHOP
                    a = _DIAG_ATTACKS[sq][_DIAG_MASKS[sq] & occ]
                    piece_attacks[sq] = a
                    sc += table[sq]
                    a_two |= a_all & a
                    a_all |= a
                    reach |= a
                    n += (a & ~avoid).bit_count()
                    if a & zone:
                        pressure += KING_ATTACKER_WEIGHT[BISHOP]
                sc += MOBILITY[BISHOP] * n
                types[BISHOP] = reach

            bb = rooks & own
            if bb:
                table = sq_score[ROOK]
                reach = 0
                n = 0
                own_pawns = pawns & own
                while bb:
                    low = bb & -bb
                    sq = low.bit_length() - 1
                    bb ^= low
                    kind[sq] = ROOK
                    a = _FILE_ATTACKS[sq][_FILE_MASKS[sq] & occ] | _RANK_ATTACKS[sq][_RANK_MASKS[sq] & occ]
                    piece_attacks[sq] = a
                    sc += table[sq]
                    a_two |= a_all & a
                    a_all |= a
                    reach |= a
                    n += (a & ~avoid).bit_count()
                    file = _FILES[sq & 7]
                    if not file & own_pawns:
                        sc += ROOK_HALF_OPEN_FILE if file & pawns else ROOK_OPEN_FILE
                    if a & zone:
                        pressure += KING_ATTACKER_WEIGHT[ROOK]
                sc += MOBILITY[ROOK] * n
                types[ROOK] = reach

            bb = queens & own
            if bb:
                table = sq_score[QUEEN]
                reach = 0
                n = 0
                while bb:
                    low = bb & -bb
                    sq = low.bit_length() - 1
                    bb ^= low
                    kind[sq] = QUEEN
                    a = (_DIAG_ATTACKS[sq][_DIAG_MASKS[sq] & occ]
                         | _FILE_ATTACKS[sq][_FILE_MASKS[sq] & occ]
                         | _RANK_ATTACKS[sq][_RANK_MASKS[sq] & occ])
                    piece_attacks[sq] = a
                    sc += table[sq]
                    a_two |= a_all & a
                    a_all |= a
                    reach |= a
                    n += (a & ~avoid).bit_count()
                    if a & zone:
                        pressure += KING_ATTACKER_WEIGHT[QUEEN]
                sc += MOBILITY[QUEEN] * n
                types[QUEEN] = reach

            ks = king_sq[c]
            a = _KING_ATTACKS[ks]
            piece_attacks[ks] = a
            a_two |= a_all & a
            a_all |= a
            types[KING] = a
            sc += sq_score[KING][ks] + SHELTER_PAWN * (KING_SHELTER[c][ks] & pawns & own).bit_count()

            att[c] = a_all
            att2[c] = a_two
            king_pressure[c ^ 1] = pressure
            score[c] = sc

        # King danger grows with the square of the pressure: one attacker is harmless, three
        # usually break through.
        p = king_pressure[us]
        danger = KING_DANGER[p if p < KING_DANGER_CAP else KING_DANGER_CAP]
        p = king_pressure[them]
        danger -= KING_DANGER[p if p < KING_DANGER_CAP else KING_DANGER_CAP]

        packed = score[us] - score[them] - danger
        mg = ((packed + _HALF) & _MASK) - _HALF
        eg = (packed - mg) >> _SHIFT
        phase = (knights | bishops).bit_count() + 2 * rooks.bit_count() + 4 * queens.bit_count()
        if phase > FULL_PHASE:
            phase = FULL_PHASE
        cp = (mg * phase + eg * (FULL_PHASE - phase)) / FULL_PHASE

        if phase <= 8:
            # Drive a lone king into the corner: static tables alone do not see how to mate it.
            if cp > MOP_UP_MARGIN:
                cp += self._mop_up(king_sq[them], king_sq[us])
            elif cp < -MOP_UP_MARGIN:
                cp -= self._mop_up(king_sq[us], king_sq[them])
            # Without pawns, a side up by less than a rook rarely wins.
            if 0 < cp < 400 and not pawns & occ_co[us]:
                cp *= PAWNLESS_SCALE
            elif -400 < cp < 0 and not pawns & occ_co[them]:
                cp *= PAWNLESS_SCALE

        # One-move tactics for the side to move. An exchange on a square counts as defended when
        # the defender has a piece there and the attacker does not outnumber it.
        ours = occ_co[us]
        theirs = occ_co[them]
        our_att = att[us]
        our_att2 = att2[us]
        their_att = att[them]
        their_att2 = att2[them]
        our_types = by_type[us]
        their_types = by_type[them]
        # Attacks by piece type, cheapest first, with what the attacker is worth.
        our_order = ((our_types[1], 100), (our_types[2], 320), (our_types[3], 330),
                     (our_types[4], 500), (our_types[5], 900), (our_types[6], 2000))
        their_order = ((their_types[1], 100), (their_types[2], 320), (their_types[3], 330),
                       (their_types[4], 500), (their_types[5], 900), (their_types[6], 2000))

        best_gain = 0
        targets = theirs & our_att & ~kings
        while targets:
            low = targets & -targets
            targets ^= low
            v = EXCHANGE_VALUE[kind[low.bit_length() - 1]]
            if low & their_att:
                for mask, av in our_order:
                    if mask & low:
                        # Our cheapest attacker takes; it is lost unless another of ours covers it.
                        if low & their_att2 or not low & our_att2:
                            v -= av
                        elif av > v:
                            v -= av - v
                        break
            if v > best_gain:
                best_gain = v

        threat1 = 0
        threat2 = 0
        at_risk = {}              # square -> what our piece there would lose if it stayed
        threatened = ours & their_att & ~kings
        while threatened:
            low = threatened & -threatened
            threatened ^= low
            sq = low.bit_length() - 1
            v = EXCHANGE_VALUE[kind[sq]]
            if low & our_att and (low & our_att2 or not low & their_att2):
                for mask, av in their_order:
                    if mask & low:
                        v -= av
                        break
            if v > 0:
                at_risk[sq] = v
                if v > threat1:
                    threat2 = threat1
                    threat1 = v
                elif v > threat2:
                    threat2 = v
        if best_gain or threat1:
            # Take the best capture and lose the worst threatened piece, or save it and lose the next.
            swing = best_gain - threat1
            if swing < -threat2:
                swing = -threat2
            cp += TACTICS_CONFIDENCE * swing
        cp += TEMPO

        # ---- priors ----
        mg_weight = phase / FULL_PHASE
        eg_weight = 1.0 - mg_weight
        tapered = TAPERED[us][phase]
        eksq = king_sq[them]
        ep = board.ep_square
        # Squares from which each piece type would check the enemy king (discovered checks are
        # not seen).
        diag_checks = _DIAG_ATTACKS[eksq][_DIAG_MASKS[eksq] & occ]
        line_checks = _FILE_ATTACKS[eksq][_FILE_MASKS[eksq] & occ] | _RANK_ATTACKS[eksq][_RANK_MASKS[eksq] & occ]
        check_from = (0, _PAWN_ATTACKS[them][eksq], _KNIGHT_ATTACKS[eksq], diag_checks, line_checks,
                      diag_checks | line_checks, 0)
        flights = _KING_ATTACKS[eksq] & ~theirs & ~our_att
        # Enemy pieces worth attacking with each of our piece types: more valuable, or loose.
        loose = theirs & ~their_att & ~kings
        worth = (0,
                 theirs & ~pawns & ~kings | loose,
                 (rooks | queens) & theirs | loose,
                 (rooks | queens) & theirs | loose,
                 queens & theirs | loose,
                 loose,
                 0)
        reach = EMPTY_BOARD_REACH[us]
        passed_ours = passed[us]
        walk_penalty = KING_WALK_PENALTY * mg_weight if board.castling_rights & ours else 0.0
        # Landing squares that need a closer look: attacked, occupied by the enemy, or checking.
        hot = their_att | theirs | diag_checks | line_checks | check_from[PAWN] | check_from[KNIGHT]
        if ep is not None:
            hot |= _SQUARES[ep]
        mates_tested = 0
        mate_found = False
        mates = []

        scores = []
        append = scores.append
        # By id (from | to << 6 | promotion << 12): reading a Move object's fields costs more than the arithmetic.
        for move_id in (leaf.move_ids if leaf.move_ids is not None else move_ids(moves)):
            f = move_id & 63
            t = to = move_id >> 6 & 63
            pt = kind[f]
            tb = _SQUARES[t]
            table = tapered[pt]
            s = table[t] - table[f]
            promo = move_id >> 12
            if promo:
                s += PROMOTION_GAIN[promo]
                lands_as = promo
            else:
                lands_as = pt

            loss = check = 0
            if tb & hot:
                # What the moved piece loses where it lands.
                if tb & their_att and pt != KING:
                    loss = EXCHANGE_VALUE[lands_as]
                    if (piece_attacks[f] & tb) if pt != PAWN else (f ^ t) & 7:
                        defended = tb & our_att2 and not tb & their_att2   # the mover covered it
                    else:
                        defended = tb & our_att and (tb & our_att2 or not tb & their_att2)
                    if defended:
                        for mask, av in their_order:
                            if mask & tb:
                                loss -= av
                                break
                        if loss < 0:
                            loss = 0
                if tb & theirs:
                    material = EXCHANGE_VALUE[kind[t]] - loss
                    s += CAPTURE_FORCING
                elif t == ep and pt == PAWN:
                    material = EXCHANGE_VALUE[PAWN] - loss
                    s += CAPTURE_FORCING
                else:
                    material = -loss
                if tb & check_from[lands_as]:
                    check = 1
                    s += CHECK_BONUS if loss else CHECK_BONUS + SAFE_CHECK_BONUS
                    if material < 0:
                        material *= CHECK_SACRIFICE_SHARE
                    escape = flights & ~_attacks_from(lands_as, t, us, (occ & ~_SQUARES[f] & ~_SQUARES[eksq]) | tb)
                    if escape & tb and tb & (our_att2 if piece_attacks[f] & tb else our_att):
                        escape &= ~tb
                    if not escape:
                        # The king cannot step away: the check is blocked, the checker taken, or mate.
                        s += BOXED_KING_CHECK_BONUS
                        if mates_tested < MATE_CHECKS_VERIFIED:
                            mates_tested += 1
                            move = move_from_id(move_id)
                            board.push(move)
                            mate = board.is_checkmate()
                            board.pop()
                            if mate:
                                s += MATE_BONUS
                                mate_found = True
                                mates.append(move)
                s += material

            if pt == PAWN:
                if passed_ours & _SQUARES[f]:
                    if us:
                        s += eg_weight * (PASSED_BONUS_EG[(t >> 3) - 1] - PASSED_BONUS_EG[(f >> 3) - 1])
                    else:
                        s += eg_weight * (PASSED_BONUS_EG[6 - (t >> 3)] - PASSED_BONUS_EG[6 - (f >> 3)])
            elif pt == KING:
                if tb & ours:
                    # Chess960 castling is written king-takes-rook: the king lands on the c- or g-file, so
                    # score that square (and look for threats from it below), as e1g1 is scored in chess.
                    t = (f & 56) | (2 if t < f else 6)
                    s += table[t] - table[to] + CASTLE_BONUS * mg_weight
                elif t - f == 2 or f - t == 2:
                    s += CASTLE_BONUS * mg_weight
                else:
                    s -= walk_penalty

            if not loss:
                if at_risk and f in at_risk:
                    s += ESCAPE_SHARE * at_risk[f]
                w = worth[lands_as]
                if w and reach[lands_as][t] & w:
                    mover = EXCHANGE_VALUE[lands_as]
                    hit = w & (reach[lands_as][t] if lands_as < BISHOP else
                               _attacks_from(lands_as, t, us, occ & ~_SQUARES[f]))
                    if hit:
                        # Two targets make a fork: the opponent saves the better piece only.
                        best = 0
                        second = 0
                        while hit:
                            low = hit & -hit
                            hit ^= low
                            v = EXCHANGE_VALUE[kind[low.bit_length() - 1]]
                            if not low & loose:
                                v -= mover   # a defended target is worth only the exchange
                            if v > best:
                                second = best
                                best = v
                            elif v > second:
                                second = v
                        if check:
                            second = best    # the king is the other target
                        s += THREAT_SHARE * best + FORK_SHARE * second
            # Big gains count less than linearly: a queen won is decisive, but the search still
            # deserves a look at the alternatives.
            if s > PRIOR_KNEE_CP:
                s = PRIOR_KNEE_CP + (s - PRIOR_KNEE_CP) * PRIOR_SLOPE_ABOVE_KNEE
            elif s < -PRIOR_KNEE_CP:
                s = (s + PRIOR_KNEE_CP) * PRIOR_SLOPE_ABOVE_KNEE - PRIOR_KNEE_CP
            append(s)

        top = max(scores)
        floor = top - PRIOR_RANGE_CP
        exp = math.exp
        inv_t = 1.0 / PRIOR_TEMPERATURE_CP
        weights = [exp(((s if s > floor else floor) - top) * inv_t) for s in scores]
        total = sum(weights)
        leaf.priors = [w / total for w in weights]

        value = math.tanh(cp / VALUE_SCALE_CP)
        if mate_found:
            value = MATE_VALUE
        leaf.value = value
        leaf.mates = mates
        draw = DRAW_SHARE * (1.0 - abs(value))
        leaf.wdl = ((1.0 + value - draw) * 0.5, draw, (1.0 - value - draw) * 0.5)

    @staticmethod
    def _mop_up(losing_king: int, winning_king: int) -> float:
        distance = chess.square_distance(losing_king, winning_king)
        return MOP_UP_EDGE * CENTRE_DISTANCE[losing_king] + MOP_UP_PROXIMITY * (7 - distance)


def move_without_search(board: chess.Board, moves: Optional[list] = None) -> Optional[chess.Move]:
    """The legal move (of ``moves``, when given) after which this evaluation likes the position best for the mover
    (a mate first), or None when there is none: the answer to ``stop`` when there was no time to search (the
    network still loading)."""
    evaluator, board = HeuristicEvaluator(), board.copy(stack=False)
    best, best_value = None, -2.0
    for move in moves or list(board.legal_moves):
        board.push(move)
        replies = list(board.legal_moves)
        if replies:
            leaf = Leaf(board, replies)
            evaluator.evaluate_leaf(leaf)
            value = -leaf.value
        else:
            value = 1.0 if board.is_check() else 0.0
        board.pop()
        if value > best_value:
            best, best_value = move, value
    return best
