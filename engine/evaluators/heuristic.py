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

import chess

from .base import Evaluator, Leaf

PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING = range(1, 7)

# Material in centipawns, middlegame and endgame. Pawns gain weight in the endgame because they
# promote; the minor pieces lose a little because they cannot mate on their own.
MATERIAL_MG = (0, 100, 320, 330, 500, 900, 0)
MATERIAL_EG = (0, 120, 300, 320, 520, 930, 0)
# What a piece is worth when deciding whether an exchange on one square wins or loses material.
# The king "defends" and "attacks" like a piece too valuable ever to be given up.
EXCHANGE_VALUE = (0, 100, 320, 330, 500, 900, 2000)

# Game phase: 24 with all pieces on the board, 0 with only kings and pawns.
PHASE_WEIGHT = (0, 0, 1, 1, 2, 4, 0)
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

# Squares a pawn must pass, on its own and the neighbouring files: no enemy pawn there means passed.
PASSED_SPAN = [[0] * 64, [0] * 64]
for _sq in range(64):
    _file, _rank = chess.square_file(_sq), chess.square_rank(_sq)
    _files = chess.BB_FILES[_file]
    if _file > 0:
        _files |= chess.BB_FILES[_file - 1]
    if _file < 7:
        _files |= chess.BB_FILES[_file + 1]
    _ahead_w = 0
    for _r in range(_rank + 1, 8):
        _ahead_w |= chess.BB_RANKS[_r]
    _ahead_b = 0
    for _r in range(0, _rank):
        _ahead_b |= chess.BB_RANKS[_r]
    PASSED_SPAN[chess.WHITE][_sq] = _files & _ahead_w
    PASSED_SPAN[chess.BLACK][_sq] = _files & _ahead_b
PASSED_SPAN = (tuple(PASSED_SPAN[0]), tuple(PASSED_SPAN[1]))

def _pawn_groups(tables: tuple) -> tuple:
    """Pawn table values as (squares, value) groups: a few popcounts instead of a loop over pawns."""
    groups = []
    for color in (chess.BLACK, chess.WHITE):
        by_value: dict = {}
        for sq in chess.SQUARES[8:56]:
            by_value[tables[color][PAWN][sq]] = by_value.get(tables[color][PAWN][sq], 0) | chess.BB_SQUARES[sq]
        groups.append(tuple((mask, value) for value, mask in by_value.items() if value))
    return tuple(groups)


PAWN_GROUPS_MG = _pawn_groups(SQUARE_MG)
PAWN_GROUPS_EG = _pawn_groups(SQUARE_EG)

# Bonus for a passed pawn by ranks advanced (0 = on its own second rank), on top of the tables.
PASSED_BONUS_MG = (0, 5, 10, 20, 35, 60, 100, 0)
PASSED_BONUS_EG = (0, 10, 20, 40, 70, 120, 190, 0)

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
SHELTER_PAWN_MG = 12
# Weight of one enemy piece bearing on the squares around the king; the danger grows with the
# square of the total because one attacker is harmless and three usually break through.
KING_ATTACKER_WEIGHT = (0, 0, 2, 2, 3, 5, 0)
KING_DANGER_SCALE_MG = 2.5
KING_DANGER_CAP = 40

# Mobility: squares a piece reaches that are neither its own nor covered by enemy pawns.
MOBILITY_MG = (0, 0, 4, 4, 2, 1, 0)
MOBILITY_EG = (0, 0, 4, 4, 4, 2, 0)
BISHOP_PAIR = 30
ROOK_OPEN_FILE = 20
ROOK_HALF_OPEN_FILE = 10
# Winning a won endgame needs the losing king driven to the edge and the winning king close by.
MOP_UP_MARGIN = 400
MOP_UP_EDGE = 10
MOP_UP_PROXIMITY = 4
CENTRE_DISTANCE = tuple(
    max(3 - min(chess.square_file(s), 7 - chess.square_file(s)), 3 - min(chess.square_rank(s), 7 - chess.square_rank(s)))
    for s in range(64))
TEMPO = 10

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
PRIOR_FLOOR_CP = -700.0      # even a losing sacrifice keeps a sliver of prior
PRIOR_CEILING_CP = 1500.0
CAPTURE_FORCING = 40         # captures change the position the most: look at them first
CHECK_BONUS = 70
SAFE_CHECK_BONUS = 60        # a check the opponent cannot answer by taking the checker
CHECK_SACRIFICE_SHARE = 0.5  # a check that loses material is still worth a look
MATE_BONUS = 4000            # a verified mate in one
MATE_VALUE = 0.99            # value of a position with a mate in one on the board
MATE_CHECKS_VERIFIED = 4     # exact checkmate tests per leaf, for checks leaving the king no flight
THREAT_SHARE = 0.2           # of the best target attacked from the new square
FORK_SHARE = 0.5             # of the second target: the opponent can save only one
ESCAPE_SHARE = 0.9           # of what the piece would lose if it stayed
CASTLE_BONUS = 60
UNDERPROMOTION = (0, 0, 100, -300, -200, 0, 0)   # a knight sometimes checks; the others never help

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


class HeuristicEvaluator(Evaluator):
    """Hand-written value and priors; see the module docstring."""

    name = "heuristic"

    def evaluate(self, leaves: list[Leaf]) -> None:
        for leaf in leaves:
            self.evaluate_leaf(leaf)

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
        piece_attacks = [0] * 64       # what the piece on each square attacks
        king_sq = [0, 0]
        king_zone = [0, 0]
        for c in (0, 1):
            k = kings & occ_co[c]
            ks = k.bit_length() - 1
            king_sq[c] = ks
            kind[ks] = KING
            king_zone[c] = _KING_ATTACKS[ks] | k

        # Pawn attacks first: the pieces' safe mobility excludes squares covered by enemy pawns.
        wp = pawns & occ_co[1]
        bp = pawns & occ_co[0]
        wl = ((wp & _NOT_FILE_A) << 7) & _ALL
        wr = ((wp & _NOT_FILE_H) << 9) & _ALL
        bl = (bp & _NOT_FILE_A) >> 9
        br = (bp & _NOT_FILE_H) >> 7
        pawn_att = [bl | br, wl | wr]
        pawn_att2 = [bl & br, wl & wr]
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

        mg = [0, 0]
        eg = [0, 0]
        att = [pawn_att[0], pawn_att[1]]          # attacked at least once
        att2 = [pawn_att2[0], pawn_att2[1]]       # attacked at least twice
        # Per colour, attacks by piece type, for "least valuable attacker" questions.
        by_type = [[0, pawn_att[0], 0, 0, 0, 0, 0], [0, pawn_att[1], 0, 0, 0, 0, 0]]
        king_pressure = [0, 0]    # attack weight on this colour's king zone

        for c in (0, 1):
            own = occ_co[c]
            enemy_pawns = pawns & occ_co[c ^ 1]
            smg = SQUARE_MG[c]
            seg = SQUARE_EG[c]
            m = 0
            e = 0
            a_all = att[c]
            a_two = att2[c]
            types = by_type[c]
            avoid = own | pawn_att[c ^ 1]
            zone = king_zone[c ^ 1]
            pressure = 0

            bb = pawns & own
            if bb:
                for mask, bonus in PAWN_GROUPS_MG[c]:
                    if bb & mask:
                        m += bonus * (bb & mask).bit_count()
                for mask, bonus in PAWN_GROUPS_EG[c]:
                    if bb & mask:
                        e += bonus * (bb & mask).bit_count()
                bb = passed[c]
                while bb:
                    low = bb & -bb
                    bb ^= low
                    rank = low.bit_length() - 1 >> 3
                    advanced = rank - 1 if c else 6 - rank
                    m += PASSED_BONUS_MG[advanced]
                    e += PASSED_BONUS_EG[advanced]

            bb = knights & own
            if bb:
                tmg = smg[KNIGHT]
                teg = seg[KNIGHT]
                reach = 0
                while bb:
                    low = bb & -bb
                    sq = low.bit_length() - 1
                    bb ^= low
                    kind[sq] = KNIGHT
                    a = _KNIGHT_ATTACKS[sq]
                    piece_attacks[sq] = a
                    m += tmg[sq]
                    e += teg[sq]
                    a_two |= a_all & a
                    a_all |= a
                    reach |= a
                    m += MOBILITY_MG[KNIGHT] * (a & ~avoid).bit_count()
                    e += MOBILITY_EG[KNIGHT] * (a & ~avoid).bit_count()
                    if a & zone:
                        pressure += KING_ATTACKER_WEIGHT[KNIGHT]
                types[KNIGHT] = reach

            bb = bishops & own
            if bb:
                tmg = smg[BISHOP]
                teg = seg[BISHOP]
                reach = 0
                if bb & (bb - 1):
                    m += BISHOP_PAIR
                    e += BISHOP_PAIR
                while bb:
                    low = bb & -bb
                    sq = low.bit_length() - 1
                    bb ^= low
                    kind[sq] = BISHOP
                    a = _DIAG_ATTACKS[sq][_DIAG_MASKS[sq] & occ]
                    piece_attacks[sq] = a
                    m += tmg[sq]
                    e += teg[sq]
                    a_two |= a_all & a
                    a_all |= a
                    reach |= a
                    n = (a & ~avoid).bit_count()
                    m += MOBILITY_MG[BISHOP] * n
                    e += MOBILITY_EG[BISHOP] * n
                    if a & zone:
                        pressure += KING_ATTACKER_WEIGHT[BISHOP]
                types[BISHOP] = reach

            bb = rooks & own
            if bb:
                tmg = smg[ROOK]
                teg = seg[ROOK]
                reach = 0
                own_pawns = pawns & own
                while bb:
                    low = bb & -bb
                    sq = low.bit_length() - 1
                    bb ^= low
                    kind[sq] = ROOK
                    a = _FILE_ATTACKS[sq][_FILE_MASKS[sq] & occ] | _RANK_ATTACKS[sq][_RANK_MASKS[sq] & occ]
                    piece_attacks[sq] = a
                    m += tmg[sq]
                    e += teg[sq]
                    a_two |= a_all & a
                    a_all |= a
                    reach |= a
                    n = (a & ~avoid).bit_count()
                    m += MOBILITY_MG[ROOK] * n
                    e += MOBILITY_EG[ROOK] * n
                    f = _FILES[sq & 7]
                    if not f & own_pawns:
                        m += ROOK_HALF_OPEN_FILE if f & enemy_pawns else ROOK_OPEN_FILE
                    if a & zone:
                        pressure += KING_ATTACKER_WEIGHT[ROOK]
                types[ROOK] = reach

            bb = queens & own
            if bb:
                tmg = smg[QUEEN]
                teg = seg[QUEEN]
                reach = 0
                while bb:
                    low = bb & -bb
                    sq = low.bit_length() - 1
                    bb ^= low
                    kind[sq] = QUEEN
                    a = (_DIAG_ATTACKS[sq][_DIAG_MASKS[sq] & occ]
                         | _FILE_ATTACKS[sq][_FILE_MASKS[sq] & occ]
                         | _RANK_ATTACKS[sq][_RANK_MASKS[sq] & occ])
                    piece_attacks[sq] = a
                    m += tmg[sq]
                    e += teg[sq]
                    a_two |= a_all & a
                    a_all |= a
                    reach |= a
                    n = (a & ~avoid).bit_count()
                    m += MOBILITY_MG[QUEEN] * n
                    e += MOBILITY_EG[QUEEN] * n
                    if a & zone:
                        pressure += KING_ATTACKER_WEIGHT[QUEEN]
                types[QUEEN] = reach

            ks = king_sq[c]
            a = _KING_ATTACKS[ks]
            piece_attacks[ks] = a
            a_two |= a_all & a
            a_all |= a
            types[KING] = a
            m += smg[KING][ks] + SHELTER_PAWN_MG * (KING_SHELTER[c][ks] & pawns & own).bit_count()
            e += seg[KING][ks]

            att[c] = a_all
            att2[c] = a_two
            king_pressure[c ^ 1] = pressure
            mg[c] = m
            eg[c] = e

        for c in (0, 1):
            p = king_pressure[c]
            if p > KING_DANGER_CAP:
                p = KING_DANGER_CAP
            mg[c] -= KING_DANGER_SCALE_MG * p * p

        phase = (knights | bishops).bit_count() + 2 * rooks.bit_count() + 4 * queens.bit_count()
        if phase > FULL_PHASE:
            phase = FULL_PHASE
        cp = ((mg[us] - mg[them]) * phase + (eg[us] - eg[them]) * (FULL_PHASE - phase)) / FULL_PHASE

        # Drive a lone king into the corner: static tables alone do not see how to mate it.
        if phase <= 8:
            if cp > MOP_UP_MARGIN:
                cp += self._mop_up(king_sq[them], king_sq[us])
            elif cp < -MOP_UP_MARGIN:
                cp -= self._mop_up(king_sq[us], king_sq[them])
            # Without pawns, a side up by less than a rook rarely wins.
            if cp > 0 and not pawns & occ_co[us] and cp < 400:
                cp *= 0.125
            elif cp < 0 and not pawns & occ_co[them] and cp > -400:
                cp *= 0.125

        # One-move tactics for the side to move.
        ours = occ_co[us]
        theirs = occ_co[them]
        our_att = att[us]
        our_att2 = att2[us]
        their_att = att[them]
        our_types = by_type[us]
        their_types = by_type[them]
        our_order = [(our_types[pt], EXCHANGE_VALUE[pt]) for pt in range(1, 7) if our_types[pt]]
        their_order = [(their_types[pt], EXCHANGE_VALUE[pt]) for pt in range(1, 7) if their_types[pt]]

        best_gain = 0
        targets = theirs & our_att & ~kings
        while targets:
            low = targets & -targets
            targets ^= low
            v = EXCHANGE_VALUE[kind[low.bit_length() - 1]]
            if low & their_att:
                for mask, av in our_order:
                    if mask & low:
                        v -= av
                        break
            if v > best_gain:
                best_gain = v

        threat1 = 0
        threat2 = 0
        at_risk = {}              # square -> what our piece there would lose
        threatened = ours & their_att & ~kings
        while threatened:
            low = threatened & -threatened
            threatened ^= low
            sq = low.bit_length() - 1
            v = EXCHANGE_VALUE[kind[sq]]
            if low & our_att:
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
        # Squares from which each piece type gives check (before the move; the moving piece's own
        # square still blocks nothing it matters for).
        diag_checks = _DIAG_ATTACKS[eksq][_DIAG_MASKS[eksq] & occ]
        line_checks = _FILE_ATTACKS[eksq][_FILE_MASKS[eksq] & occ] | _RANK_ATTACKS[eksq][_RANK_MASKS[eksq] & occ]
        check_from = (0, _PAWN_ATTACKS[them][eksq], _KNIGHT_ATTACKS[eksq], diag_checks, line_checks,
                      diag_checks | line_checks, 0)
        # The enemy king's flight squares before our move.
        flights = _KING_ATTACKS[eksq] & ~theirs & ~our_att
        # Enemy pieces worth attacking with each of our piece types: more valuable, or loose.
        loose = theirs & ~their_att & ~kings
        worth = [0,
                 theirs & ~pawns & ~kings | loose,
                 (rooks | queens) & theirs | loose,
                 (rooks | queens) & theirs | loose,
                 queens & theirs | loose,
                 loose,
                 loose]
        their_pawns = pawns & theirs
        span = PASSED_SPAN[us]
        mates_tested = 0
        mate_found = False

        scores = []
        append = scores.append
        for move in moves:
            f = move.from_square
            t = move.to_square
            pt = kind[f]
            tb = _SQUARES[t]
            table = tapered[pt]
            s = table[t] - table[f]
            promo = move.promotion
            lands_as = promo or pt

            # What the moved piece loses where it lands.
            loss = 0
            if tb & their_att and pt != KING:
                loss = EXCHANGE_VALUE[lands_as]
                if tb & (our_att2 if piece_attacks[f] & tb else our_att):
                    for mask, av in their_order:
                        if mask & tb:
                            loss -= av
                            break
                    if loss < 0:
                        loss = 0
            gain = -loss
            if tb & theirs:
                gain += EXCHANGE_VALUE[kind[t]] + CAPTURE_FORCING
            elif pt == PAWN:
                if t == ep:
                    gain += EXCHANGE_VALUE[PAWN] + CAPTURE_FORCING
                elif not span[f] & their_pawns:
                    if us:
                        s += eg_weight * (PASSED_BONUS_EG[(t >> 3) - 1] - PASSED_BONUS_EG[(f >> 3) - 1])
                    else:
                        s += eg_weight * (PASSED_BONUS_EG[6 - (t >> 3)] - PASSED_BONUS_EG[6 - (f >> 3)])
            elif pt == KING and (t - f == 2 or f - t == 2 or tb & ours):
                s += CASTLE_BONUS * mg_weight
            if promo:
                gain += EXCHANGE_VALUE[promo] - EXCHANGE_VALUE[PAWN] if promo == QUEEN else UNDERPROMOTION[promo]

            if f in at_risk and not loss:
                s += ESCAPE_SHARE * at_risk[f]

            if tb & check_from[lands_as]:
                s += CHECK_BONUS
                if gain < 0:
                    gain *= CHECK_SACRIFICE_SHARE
                if not loss:
                    s += SAFE_CHECK_BONUS
                if mates_tested < MATE_CHECKS_VERIFIED:
                    reach = self._attacks_from(lands_as, t, us, (occ & ~_SQUARES[f] & ~_SQUARES[eksq]) | tb)
                    escape = flights & ~reach
                    if escape & tb and tb & (our_att2 if piece_attacks[f] & tb else our_att):
                        escape &= ~tb
                    if not escape:
                        mates_tested += 1
                        board.push(move)
                        mate = board.is_checkmate()
                        board.pop()
                        if mate:
                            s += MATE_BONUS
                            mate_found = True
            elif pt != KING and not loss:
                hit = self._attacks_from(lands_as, t, us, occ & ~_SQUARES[f]) & worth[lands_as]
                if hit:
                    best = 0
                    second = 0
                    while hit:
                        low = hit & -hit
                        hit ^= low
                        v = EXCHANGE_VALUE[kind[low.bit_length() - 1]]
                        if v > best:
                            second = best
                            best = v
                        elif v > second:
                            second = v
                    s += THREAT_SHARE * best + FORK_SHARE * second

            s += gain
            append(s)

        top = max(scores)
        floor = top - PRIOR_CEILING_CP
        if floor < PRIOR_FLOOR_CP:
            floor = PRIOR_FLOOR_CP
        exp = math.exp
        inv_t = 1.0 / PRIOR_TEMPERATURE_CP
        weights = [exp(((s if s > floor else floor) - top) * inv_t) for s in scores]
        total = sum(weights)
        leaf.priors = [w / total for w in weights]

        value = math.tanh(cp / VALUE_SCALE_CP)
        if mate_found:
            value = MATE_VALUE
        leaf.value = value
        draw = DRAW_SHARE * (1.0 - abs(value))
        leaf.wdl = ((1.0 + value - draw) * 0.5, draw, (1.0 - value - draw) * 0.5)

    @staticmethod
    def _attacks_from(pt: int, sq: int, color: bool, occ: int) -> int:
        if pt == KNIGHT:
            return _KNIGHT_ATTACKS[sq]
        if pt == PAWN:
            return _PAWN_ATTACKS[color][sq]
        a = 0
        if pt == BISHOP or pt == QUEEN:
            a = _DIAG_ATTACKS[sq][_DIAG_MASKS[sq] & occ]
        if pt == ROOK or pt == QUEEN:
            a |= _FILE_ATTACKS[sq][_FILE_MASKS[sq] & occ] | _RANK_ATTACKS[sq][_RANK_MASKS[sq] & occ]
        if pt == KING:
            a = _KING_ATTACKS[sq]
        return a

    @staticmethod
    def _mop_up(losing_king: int, winning_king: int) -> float:
        distance = chess.square_distance(losing_king, winning_king)
        return MOP_UP_EDGE * CENTRE_DISTANCE[losing_king] + MOP_UP_PROXIMITY * (7 - distance)
