"""Exact forcing-line search at the root: mates by checks, and a short alpha-beta on material.

The tree search gives a move visits in proportion to its prior and its first values. A sacrifice
that mates or wins material a few plies later looks like a blunder after one visit and is hardly
ever visited again: in most of the Win At Chess positions Arbor missed, the solution had a prior
rank of 20 to 50 and one or two visits. Before the tree search, :func:`find_mate` proves mates
that the attacker forces with checks alone (few moves to try, so it reaches 11 plies), and
:func:`probe` runs a full-width alpha-beta search on material and piece-square placement with a
capture quiescence, which sees short combinations whatever the priors say.

Both work on python-chess boards, respect a deadline and a stop flag, and treat any repetition
as a draw so that a proof never relies on a line the opponent could draw.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Hashable, Iterable, Iterator, Optional

import chess

from .evaluators.heuristic import EXCHANGE_VALUE, FULL_PHASE, TAPERED
from .game import ChessGame
from .movegen import checking_squares

MATE = 100_000          # score of delivering mate now; a mate in k plies scores MATE - k
MATE_BOUND = MATE - 1000  # scores beyond this are mates
INFINITY = 1_000_000
CHECK_CLOCK_EVERY = 64  # nodes between deadline and stop checks (well under a millisecond)
MATE_LINE_NODES = 20_000  # positions spent writing out a found mate's line (most take a few hundred)
# A capture whose victim's exchange value plus this cannot bring the score back up to alpha is skipped.
DELTA_MARGIN = 200
# In the quiescence, a capture by a piece worth more than this above its victim, of a defended victim, loses
# material to the recapture: skipped (a bishop may take a knight, a rook not a defended minor piece).
LOSING_CAPTURE_SLACK = 50
VICTIMS = (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT, chess.PAWN)   # most valuable first
UNDERPROMOTIONS = (chess.KNIGHT, chess.ROOK, chess.BISHOP)
ATTACKERS = (chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING)  # least valuable first
NULL_MOVE_MIN_DEPTH = 3   # shallower nodes search every move: passing saves little there
NULL_MOVE_REDUCTION = 2   # plies the search after a null move is shortened by
LATE_MOVE_INDEX = 3       # quiet moves after this many are searched a ply shorter first...
LATE_MOVE_MIN_DEPTH = 2   # ...at this depth or more,
VERY_LATE_MOVE_INDEX = 6  # and those after this many two plies shorter...
VERY_LATE_MIN_DEPTH = 4   # ...at this depth or more
# Two plies from the quiescence, a move that gives no check and leaves the static score this far below alpha is
# not searched: the one move it has left before the quiescence would have to win a rook.
FUTILITY_MARGIN = 300
FUTILITY_DEPTH = 2        # deepest remaining depth at which moves are pruned so (1: only the exact pruning)
# Late move pruning: with 1, 2 or 3 plies left, quiet moves that give no check after the first 6, 10 or 16 quiet
# ones are not searched at all (killers and the history put the likeliest first). A combination's quiet moves near
# the horizon are checks or among the first; the others mostly cost nodes: WAC solved by the probe alone at 20,000
# positions went from 208 to 222 (4, 8 and 12: 218).
LATE_MOVE_PRUNING = (0, 6, 10, 16)   # by plies left (none left: the quiescence)
# The quiescence's first ply also tries the quiet moves that give check: a mate or a fork by check just past the
# horizon is what a combination's last move most often is.
QUIESCENCE_CHECKS = True
# Captures that lose material to the recapture (see LOSING_CAPTURE_SLACK) are searched after the quiet moves.
LOSING_CAPTURES_LAST = True
RANK_ATTACKS, FILE_ATTACKS, DIAG_ATTACKS = chess.BB_RANK_ATTACKS, chess.BB_FILE_ATTACKS, chess.BB_DIAG_ATTACKS
RANK_MASKS, FILE_MASKS, DIAG_MASKS = chess.BB_RANK_MASKS, chess.BB_FILE_MASKS, chess.BB_DIAG_MASKS
KNIGHT_ATTACKS, KING_ATTACKS = chess.BB_KNIGHT_ATTACKS, chess.BB_KING_ATTACKS
MAX_PLY = 32              # deepest ply of the probe, check extensions included
# Root moves scoring this far below the best get only an upper bound: a narrow window cuts off
# most of the root's work, and the caller only needs exact scores near the best.
PROBE_WINDOW = 40
QUEEN_PROMOTION_FIRST = 2 << 30  # quiet queen promotions sort ahead of every history count
EXACT, LOWER, UPPER = 0, 1, 2   # what a table score is: the value, at least it, at most it
TABLE_ENTRIES = 200_000  # cleared when full: about 55 MB (270 bytes an entry), after some 3M nodes


class Timeout(Exception):
    """The deadline passed or stop was requested: the unfinished iteration is discarded."""


@dataclass
class ProbeResult:
    """Scores of the root moves (centipawns, side to move's view) from the deepest finished
    iteration. ``exact`` moves scored within the window; the others are upper bounds."""

    depth: int = 0
    nodes: int = 0
    scores: dict[chess.Move, int] = field(default_factory=dict)
    exact: set[chess.Move] = field(default_factory=set)


class _Clock:
    def __init__(self, deadline: float, stopped: Callable[[], bool], max_nodes: Optional[int] = None) -> None:
        self.deadline, self.stopped, self.nodes = deadline, stopped, 0
        self.max_nodes = max_nodes if max_nodes is not None else INFINITY ** 2

    def tick(self) -> None:
        self.nodes += 1
        if self.nodes % CHECK_CLOCK_EVERY == 0 and (
                time.monotonic() >= self.deadline or self.stopped() or self.nodes >= self.max_nodes):
            raise Timeout


def _never() -> bool:
    return False


_key = ChessGame.key  # the search's repetition keys, so ``earlier`` can come from the tree


def _seen_keys(board: chess.Board, earlier: Iterable[Hashable]) -> set[Hashable]:
    """``earlier`` (keys of the game's positions since its last irreversible move), the positions
    on the board's own move stack, and the board itself: reaching any of them again is a draw."""
    keys = set(earlier)
    if board.move_stack:
        copy = board.copy()
        for _ in range(min(board.halfmove_clock, len(board.move_stack))):
            copy.pop()
            keys.add(_key(copy))
    keys.add(_key(board))
    return keys


# ----------------------------------------------------------------------------------- mates

def find_mate(board: chess.Board, max_moves: int, deadline: float, stopped: Callable[[], bool] = _never,
              earlier: Iterable[Hashable] = (), max_nodes: Optional[int] = None) -> Optional[tuple[chess.Move, int]]:
    """The side to move's fastest mate, found with checks only, in at most ``max_moves`` moves.

    Returns (first move, mate in n moves) or None: none exists with checks alone, or the deadline
    or ``stopped`` came first. A found mate is exact: every defence was tried, and a defence that
    repeats a position counts as a draw. ``earlier``: keys (``ChessGame.key``) of the game's
    positions since its last irreversible move, when the board's move stack does not hold them.
    ``max_nodes``: a budget of positions besides the deadline (stopping at it, to within
    ``CHECK_CLOCK_EVERY``, makes the result the same on every machine).
    """
    if board.halfmove_clock + 2 * max_moves > 100:
        max_moves = max(0, (100 - board.halfmove_clock) // 2)
    clock = _Clock(deadline, stopped, max_nodes)
    seen = _seen_keys(board, earlier)
    failed: set[tuple[Hashable, int]] = set()
    try:
        for n in range(1, max_moves + 1):
            move = _mating_check(board, n, clock, seen, failed)
            if move is not None:
                return move, n
    except Timeout:
        pass
    return None


def mate_line(board: chess.Board, move: chess.Move, n: int, deadline: float, stopped: Callable[[], bool] = _never,
              earlier: Iterable[Hashable] = (), max_nodes: int = MATE_LINE_NODES) -> list[chess.Move]:
    """The line of a mate by checks that :func:`find_mate` found (``move``, mating in ``n``): against each check
    the defence that holds out longest, then the fastest mating check, down to checkmate: what a user expects to
    read after ``score mate n``. Cut short (to ``move`` at least) at ``deadline``, ``stopped()`` or after
    ``max_nodes`` positions."""
    clock = _Clock(deadline, stopped, max_nodes)
    seen = _seen_keys(board, earlier)
    line: list[chess.Move] = []
    step: Optional[tuple[int, Optional[chess.Move], chess.Move]] = (n, None, move)
    try:
        while step is not None:
            left, reply, check = step
            if reply is not None:
                board.push(reply)
                line.append(reply)
                seen.add(_key(board))
            board.push(check)
            line.append(check)
            step = _longest_defence(board, left - 1, clock, seen)
    except Timeout:
        pass
    finally:
        for _ in line:
            board.pop()
    return line


def _longest_defence(board: chess.Board, n: int, clock: _Clock,
                     seen: set) -> Optional[tuple[int, chess.Move, chess.Move]]:
    """The side to move, in check, is mated within ``n`` moves: (moves to mate, the reply that delays it most,
    the mating check that answers it), or None if no reply is left (mate) or one of them escapes."""
    longest = None
    for reply in list(board.generate_legal_moves()):
        clock.tick()
        board.push(reply)
        try:
            key = _key(board)
            if key in seen or board.is_insufficient_material():
                return None
            seen.add(key)
            failed: set[tuple[Hashable, int]] = set()  # fresh: a failure found under another reply's keys may not hold
            try:
                fastest = next(((m, reply, check) for m in range(1, n + 1)
                                if (check := _mating_check(board, m, clock, seen, failed)) is not None), None)
            finally:
                seen.discard(key)
        finally:
            board.pop()
        if fastest is None:
            return None
        if longest is None or fastest[0] > longest[0]:
            longest = fastest
    return longest


def _checks(board: chess.Board) -> list[chess.Move]:
    checks = [m for m in board.generate_legal_moves() if board.gives_check(m)]
    # Captures and moves towards the enemy king first: they end the defence soonest.
    king = board.king(not board.turn)
    checks.sort(key=lambda m: (not board.is_capture(m), chess.square_distance(m.to_square, king)))
    return checks


def _mating_check(board: chess.Board, n: int, clock: _Clock, seen: set, failed: set) -> Optional[chess.Move]:
    """A checking move after which every defence is mated within n - 1 more moves."""
    key = (_key(board), n)
    if key in failed:
        return None
    for move in _checks(board):
        clock.tick()
        board.push(move)
        try:
            if _key(board) not in seen and _all_defences_lose(board, n - 1, clock, seen, failed):
                return move
        finally:
            board.pop()
    failed.add(key)
    return None


def _all_defences_lose(board: chess.Board, n: int, clock: _Clock, seen: set, failed: set) -> bool:
    """The side to move is in check: is it mated now, or after any reply within n moves?"""
    replies = list(board.generate_legal_moves())
    if not replies:
        return True  # checks only: no legal move here is mate
    if n == 0:
        return False
    # Taking the checking piece is the defence most likely to hold: try it first to fail fast.
    replies.sort(key=lambda m: not board.is_capture(m))
    for reply in replies:
        clock.tick()
        board.push(reply)
        try:
            key = _key(board)
            if key in seen or board.is_insufficient_material():
                return False
            seen.add(key)
            try:
                if _mating_check(board, n, clock, seen, failed) is None:
                    return False
            finally:
                seen.discard(key)
        finally:
            board.pop()
    return True


# ------------------------------------------------------------------------------ alpha-beta

class _AlphaBeta:
    """Negamax alpha-beta (principal variation search) on material and placement (the heuristic's
    tapered tables at the root's phase), with check extensions, a capture quiescence, a
    transposition table (bounds and best moves), killer moves, a history of quiet cut-offs and
    late move reductions. Moves are generated pseudo-legal and in stages, and rejected after the
    push if they leave the king attacked: full legal generation of every node was most of the
    probe's time. The static score is updated move by move, not summed from scratch at each
    leaf: summing was a quarter of the probe's time."""

    def __init__(self, board: chess.Board, clock: _Clock, earlier: Iterable[Hashable]) -> None:
        self.board, self.clock = board, clock
        phase = min(FULL_PHASE, (board.knights | board.bishops).bit_count() + 2 * board.rooks.bit_count()
                    + 4 * board.queens.bit_count())
        self.tables = (TAPERED[0][phase], TAPERED[1][phase])
        # Position key -> (depth, bound, score, best move) of its last search.
        self.table: dict[Hashable, tuple[int, int, float, Optional[chess.Move]]] = {}
        self.killers: list[list[Optional[chess.Move]]] = [[None, None] for _ in range(MAX_PLY + 1)]
        self.history: dict[tuple[int, int], int] = {}
        self.seen = _seen_keys(board, earlier)

    def static(self) -> float:
        """The board's score from scratch, side to move's view."""
        board, score = self.board, 0.0
        for color in (chess.WHITE, chess.BLACK):
            tables, sign = self.tables[color], 1 if color == board.turn else -1
            for pt in range(1, 7):
                table = tables[pt]
                for sq in chess.scan_reversed(board.pieces_mask(pt, color)):
                    score += sign * table[sq]
        return score

    def gain(self, move: chess.Move) -> Optional[float]:
        """What ``move`` adds to the mover's static score; None for castling (rare: rescore)."""
        board = self.board
        us = board.turn
        ours, theirs = self.tables[us], self.tables[not us]
        f, t = move.from_square, move.to_square
        pt = board.piece_type_at(f)
        if pt == chess.KING and board.is_castling(move):
            return None
        g = ours[move.promotion or pt][t] - ours[pt][f]
        victim = board.piece_type_at(t)
        if victim:
            g += theirs[victim][t]
        elif pt == chess.PAWN and t == board.ep_square and (f ^ t) & 7:
            g += theirs[chess.PAWN][t ^ 8]  # the captured pawn stands beside, one rank back
        return g

    def _after(self, score: float, move: chess.Move) -> float:
        """Push ``move``; return the new side to move's static score."""
        gain = self.gain(move)
        self.board.push(move)
        return self.static() if gain is None else -(score + gain)

    def captures(self, least_victim: float = -INFINITY, quiet_position: bool = False,
                 losing: Optional[list[chess.Move]] = None) -> list[chess.Move]:
        """Pseudo-legal captures, most valuable victim first, then least valuable attacker; en passant last.
        Only victims worth more than ``least_victim``. ``quiet_position`` (the quiescence): promotions to a queen
        only, and no capture that loses material to the recapture. ``losing``: the captures that lose material to
        the recapture go there instead of the list returned."""
        board = self.board
        us, them = board.turn, not board.turn
        mine, theirs = board.occupied_co[us], board.occupied_co[them]
        ours = (0, board.pawns & mine, board.knights & mine, board.bishops & mine, board.rooks & mine,
                board.queens & mine, board.kings & mine)
        victims = (board.queens & theirs, board.rooks & theirs, board.bishops & theirs, board.knights & theirs,
                   board.pawns & theirs)
        # python-chess's attackers_mask, unrolled: this loop is the quiescence's hottest.
        occupied, straight, diagonal = board.occupied, board.rooks | board.queens, board.bishops | board.queens
        knights, kings, their_pawn_attacks = board.knights, board.kings, chess.BB_PAWN_ATTACKS[them]
        found: list[chess.Move] = []
        for victim, squares in zip(VICTIMS, victims):
            value = EXCHANGE_VALUE[victim]
            if value <= least_victim:
                break
            for to in chess.scan_reversed(squares):
                attacking = ((RANK_ATTACKS[to][RANK_MASKS[to] & occupied] | FILE_ATTACKS[to][FILE_MASKS[to] & occupied])
                             & straight | DIAG_ATTACKS[to][DIAG_MASKS[to] & occupied] & diagonal
                             | KNIGHT_ATTACKS[to] & knights | KING_ATTACKS[to] & kings
                             | their_pawn_attacks[to] & board.pawns)
                attackers = attacking & mine
                if not attackers:
                    continue
                defended: Optional[bool] = None
                for attacker in ATTACKERS:
                    origins = attackers & ours[attacker]
                    if not origins:
                        continue
                    into = found
                    if (quiet_position or losing is not None) and EXCHANGE_VALUE[attacker] > value + LOSING_CAPTURE_SLACK:
                        if defended is None:
                            # (a pawn defends along the attacks of one of ours standing on the square)
                            defended = bool(attacking & theirs & ~board.pawns
                                            or chess.BB_PAWN_ATTACKS[us][to] & board.pawns & theirs)
                        if defended:
                            if losing is None:
                                break  # and every more valuable attacker
                            into = losing
                    for origin in chess.scan_reversed(origins):
                        if attacker == chess.PAWN and chess.BB_BACKRANKS >> to & 1:
                            into.append(chess.Move(origin, to, chess.QUEEN))
                            if not quiet_position:
                                into.extend(chess.Move(origin, to, p) for p in UNDERPROMOTIONS)
                        else:
                            into.append(chess.Move(origin, to))
        if board.ep_square is not None and EXCHANGE_VALUE[chess.PAWN] > least_victim:
            found.extend(board.generate_pseudo_legal_ep())
        return found

    def moves(self, first: Optional[chess.Move], ply: int) -> Iterator[chess.Move]:
        """Pseudo-legal moves in search order, generated stage by stage so that a cut-off on the
        table's move or a capture never pays for the quiet moves: ``first`` (the table's move,
        legal here), captures, killers, then quiet moves (queen promotions first, then by
        history), and the captures that lose material to the recapture last. The caller rejects the moves that
        leave its king attacked."""
        board = self.board
        if first is not None and not board.is_pseudo_legal(first):
            first = None  # only a clash of 64-bit keys could bring another position's move
        if first is not None:
            yield first
        losing: Optional[list[chess.Move]] = [] if LOSING_CAPTURES_LAST else None
        captures = [m for m in self.captures(losing=losing) if m != first]
        yield from captures
        killers = [k for k in self.killers[ply] if k is not None and k != first
                   and not board.is_capture(k) and board.is_pseudo_legal(k)]
        yield from killers
        skip = set(killers)
        if first is not None:
            skip.add(first)
        if board.ep_square is not None:
            skip.update(captures)  # en passant lands on an empty square: not a quiet move
        history = self.history

        def key(m: chess.Move) -> int:
            if m.promotion == chess.QUEEN:
                return -QUEEN_PROMOTION_FIRST
            return -history.get((m.from_square, m.to_square), 0)
        quiets = [m for m in board.generate_pseudo_legal_moves(chess.BB_ALL, ~board.occupied_co[not board.turn])
                  if m not in skip]
        yield from sorted(quiets, key=key)
        if losing:
            yield from (m for m in losing if m != first)

    def search(self, depth: int, alpha: float, beta: float, ply: int, score: float) -> float:
        """Negamax value of the board to ``depth`` plies; ``score`` is its static score."""
        self.clock.tick()
        board = self.board
        key = _key(board)
        if ply and (key in self.seen or board.halfmove_clock >= 100 or board.is_insufficient_material()):
            return 0
        in_check = board.is_check()
        if in_check and ply < MAX_PLY:
            depth += 1  # a check is forcing: look one ply further instead of stopping in it
        if depth <= 0 or ply >= MAX_PLY:
            return self.quiesce(alpha, beta, ply, score, checks=QUIESCENCE_CHECKS and ply < MAX_PLY)
        entry = self.table.get(key)
        first = None
        if entry is not None:
            stored_depth, bound, value, first = entry
            # Mate scores depend on the path's repetitions; they only order moves, never cut.
            if ply and stored_depth >= depth and -MATE_BOUND < value < MATE_BOUND and (
                    bound == EXACT or (bound == LOWER and value >= beta) or (bound == UPPER and value <= alpha)):
                return value
        if (not in_check and depth >= NULL_MOVE_MIN_DEPTH and beta < MATE_BOUND and score >= beta
                and board.occupied_co[board.turn] & ~(board.pawns | board.kings)):
            # Null move: if passing still holds beta, a real move will too (not in pawn endings,
            # where passing can be the only thing that does not lose).
            board.push(chess.Move.null())
            try:
                value = -self.search(depth - 1 - NULL_MOVE_REDUCTION, -beta, -beta + 1, ply + 1, -score)
            finally:
                board.pop()
            if value >= beta:
                return beta if value >= MATE_BOUND else value  # a mate after passing proves nothing
        if in_check:  # few evasions: generate them all, the table's move and captures first
            moves: Iterable[chess.Move] = sorted(board.generate_legal_moves(),
                                                 key=lambda m: (m != first, not board.is_capture(m)))
        else:
            moves = self.moves(first, ply)
        # One ply from the quiescence, a move that gives no check leaves the opponent free to stand pat: it scores at
        # most the static score it reaches, and when that is no better than alpha it needs no search (exact, but for
        # a repetition, which cannot come this soon after the last capture or pawn move). Two plies from it, the
        # same with a margin (FUTILITY_MARGIN).
        frontier = (depth <= FUTILITY_DEPTH and not in_check and ply and -MATE_BOUND < alpha < MATE_BOUND
                    and (alpha >= 0 or board.halfmove_clock + depth < 4))
        margin = 0 if depth == 1 else FUTILITY_MARGIN
        quiet_limit = (LATE_MOVE_PRUNING[depth] if depth < len(LATE_MOVE_PRUNING) and ply and not in_check
                       and -MATE_BOUND < alpha < MATE_BOUND else None)
        checks_from: Optional[list[int]] = None
        discoverers = 0
        if frontier:
            checks_from, discoverers = checking_squares(board), self.discoverers()
        quiets = 0
        self.seen.add(key)
        original_alpha = alpha
        best, best_move, searched, pruned = -INFINITY, None, 0, False
        try:
            for move in moves:
                if (frontier and not move.promotion and not discoverers >> move.from_square & 1
                        and move.to_square != board.ep_square):
                    gain = self.gain(move)
                    if gain is not None and score + gain + margin <= alpha and not (
                            checks_from and checks_from[board.piece_type_at(move.from_square)] >> move.to_square & 1):
                        best, pruned = max(best, score + gain + margin), True
                        continue
                quiet = not move.promotion and not board.is_capture(move)
                if quiet and quiet_limit is not None and quiets >= quiet_limit:
                    if checks_from is None:  # (most nodes cut off before their late moves: only now)
                        checks_from, discoverers = checking_squares(board), self.discoverers()
                    if not discoverers >> move.from_square & 1 and not board.is_castling(move) and not (
                            checks_from and checks_from[board.piece_type_at(move.from_square)] >> move.to_square & 1):
                        # A move left unsearched is taken to fail low: the node may claim no less than alpha.
                        best, pruned = max(best, alpha), True
                        continue
                late = searched >= LATE_MOVE_INDEX and depth >= LATE_MOVE_MIN_DEPTH and not in_check and quiet
                child = self._after(score, move)
                try:
                    if not in_check and board.was_into_check():
                        continue  # pseudo-legal only: it leaves the king attacked
                    quiets += quiet  # legal quiet moves only, so that pruning implies legal moves were searched
                    if not searched:
                        value = -self.search(depth - 1, -beta, -alpha, ply + 1, child)
                    else:  # zero window first: most later moves only need proving worse
                        # A late quiet move is searched shorter first, and in full only if it
                        # then beats alpha.
                        reduction = 0
                        if late and not board.is_check():
                            reduction = 2 if searched >= VERY_LATE_MOVE_INDEX and depth >= VERY_LATE_MIN_DEPTH else 1
                        value = -self.search(depth - 1 - reduction, -alpha - 1, -alpha, ply + 1, child)
                        if reduction and value > alpha:
                            value = -self.search(depth - 1, -alpha - 1, -alpha, ply + 1, child)
                        if alpha < value < beta:
                            value = -self.search(depth - 1, -beta, -alpha, ply + 1, child)
                    searched += 1
                finally:
                    board.pop()
                if value > best:
                    best, best_move = value, move
                    if value > alpha:
                        alpha = value
                        if alpha >= beta:
                            if not board.is_capture(move):
                                self._remember_cut(move, depth, ply)
                            break
        finally:
            self.seen.discard(key)
        if not searched:
            if pruned:
                return best  # (legality unknown: a stalemate whose moves were all pruned scores as a fail-low)
            return -(MATE - ply) if in_check else 0
        bound = LOWER if best >= beta else EXACT if best > original_alpha else UPPER
        if len(self.table) >= TABLE_ENTRIES:
            self.table.clear()
        self.table[key] = (depth, bound, best, best_move)
        return best

    def quiet_checks(self) -> list[chess.Move]:
        """Pseudo-legal moves that capture nothing, promote to nothing and give check, direct or discovered."""
        board = self.board
        us = board.turn
        checks_from = checking_squares(board)
        if checks_from is None:
            return []
        empty, mine = ~board.occupied & chess.BB_ALL, board.occupied_co[us]
        if board.ep_square is not None:
            empty &= ~chess.BB_SQUARES[board.ep_square]   # en passant is a capture
        found = []
        for pt, pieces in ((chess.KNIGHT, board.knights), (chess.BISHOP, board.bishops), (chess.ROOK, board.rooks),
                           (chess.QUEEN, board.queens), (chess.PAWN, board.pawns)):
            targets = checks_from[pt] & empty & ~chess.BB_BACKRANKS if pt == chess.PAWN else checks_from[pt] & empty
            if targets and pieces & mine:
                found.extend(board.generate_pseudo_legal_moves(pieces & mine, targets))
        discoverers = self.discoverers()
        if discoverers:
            direct = set(found)
            found.extend(m for m in board.generate_pseudo_legal_moves(discoverers, empty)
                         if not m.promotion and m not in direct and not board.is_castling(m) and board.gives_check(m))
        return found

    def discoverers(self) -> int:
        """The side to move's pieces that alone stand between one of its sliders and the other king: moving one
        may give a discovered check."""
        board = self.board
        us = board.turn
        king = board.king(not us)
        if king is None:
            return 0
        straight = (chess.BB_RANK_ATTACKS[king][0] | chess.BB_FILE_ATTACKS[king][0]) & (board.rooks | board.queens)
        diagonal = chess.BB_DIAG_ATTACKS[king][0] & (board.bishops | board.queens)
        found = 0
        for sniper in chess.scan_reversed((straight | diagonal) & board.occupied_co[us]):
            between = chess.between(king, sniper) & board.occupied
            if between and not between & (between - 1):
                found |= between
        return found & board.occupied_co[us]

    def _remember_cut(self, move: chess.Move, depth: int, ply: int) -> None:
        killers = self.killers[ply]
        if killers[0] != move:
            killers[1], killers[0] = killers[0], move
        square_pair = (move.from_square, move.to_square)
        self.history[square_pair] = self.history.get(square_pair, 0) + depth * depth

    def quiesce(self, alpha: float, beta: float, ply: int, score: float, checks: bool = False) -> float:
        """Captures (and, with ``checks``, the quiet moves that give check) until the position is quiet; the side to
        move may stand pat on its static ``score`` unless in check."""
        board = self.board
        in_check = board.is_check()
        if in_check:
            moves = sorted(board.generate_legal_moves(), key=lambda m: not board.is_capture(m))
            if not moves:
                return -(MATE - ply)
            best = -INFINITY
        else:
            best = score
            if best >= beta:
                return best
            alpha = max(alpha, best)
            moves = self.captures(alpha - best - DELTA_MARGIN, quiet_position=True)
            if checks and alpha < MATE_BOUND:
                moves += self.quiet_checks()
        for move in moves:
            self.clock.tick()
            child = self._after(score, move)
            try:
                if not in_check and board.was_into_check():
                    continue  # pseudo-legal capture that leaves the king attacked
                value = -self.quiesce(-beta, -alpha, ply + 1, child)
            finally:
                board.pop()
            if value > best:
                best = value
                if value > alpha:
                    alpha = value
                    if alpha >= beta:
                        break
        return best


def probe(board: chess.Board, deadline: float, max_depth: int = 8, window: int = PROBE_WINDOW,
          stopped: Callable[[], bool] = _never, earlier: Iterable[Hashable] = (),
          reference: Optional[chess.Move] = None, moves: Optional[Iterable[chess.Move]] = None,
          max_nodes: Optional[int] = None) -> ProbeResult:
    """Iteratively deepened alpha-beta over the root's ``moves`` (legal ones; default: every legal move) until
    ``deadline``.

    ``reference`` (if legal) and the moves within ``window`` centipawns of the best get exact
    scores; the rest are upper bounds (fail-soft, so a bound at or below -MATE_BOUND still proves
    the move loses), and each of them is at least ``window`` below the best. The result holds the deepest
    iteration that finished (depth 0 if none did). ``earlier`` and ``max_nodes`` as for :func:`find_mate`.
    """
    result = ProbeResult()
    clock = _Clock(deadline, stopped, max_nodes)
    search = _AlphaBeta(board, clock, earlier)
    moves = list(board.generate_legal_moves()) if moves is None else list(moves)
    if not moves:
        return result
    root_score = search.static()
    try:
        for depth in range(1, max_depth + 1):
            scores: dict[chess.Move, int] = {}
            exact: set[chess.Move] = set()
            best = -INFINITY
            previous = result.scores
            for move in sorted(moves, key=lambda m: (m != reference, -previous.get(m, -INFINITY))):
                alpha = best - window if best > -INFINITY and move != reference else -INFINITY
                child = search._after(root_score, move)
                try:
                    score = -search.search(depth - 1, -INFINITY, -alpha, 1, child)
                finally:
                    board.pop()
                scores[move] = int(score)
                if score > alpha:
                    exact.add(move)
                best = max(best, score)
            result.depth, result.scores, result.exact = depth, scores, exact
            # A mate within the plies searched full width is the fastest; one further off (seen through the
            # quiescence's checks) may have a faster one a ply or two deeper.
            if best >= MATE_BOUND and MATE - best <= depth or best <= -MATE_BOUND and len(exact) == len(moves):
                break
    except Timeout:
        pass
    result.nodes = clock.nodes
    return result


def probe_mate_line(board: chess.Board, move: chess.Move, plies: int, deadline: float,
                    stopped: Callable[[], bool] = _never, earlier: Iterable[Hashable] = (),
                    max_nodes: int = MATE_LINE_NODES) -> list[chess.Move]:
    """The line of a mate that :func:`probe` proved for ``move`` (by either side, ``plies`` plies after it, by any
    moves, checks or not): at each position the move :func:`probe` scores best, the fastest mate for the side that
    mates and the longest defence for the other, down to checkmate. Cut short (to ``move`` at least) at
    ``deadline``, ``stopped()``, after ``max_nodes`` positions in all, or where a search proves no mate."""
    line = [move]
    board.push(move)
    try:
        left, budget = plies, max_nodes
        while left > 0 and budget > 0:
            result = probe(board, deadline, max_depth=left, stopped=stopped, earlier=earlier, max_nodes=budget)
            budget -= result.nodes
            if not result.scores:
                break
            best = max(result.scores, key=result.scores.__getitem__)
            score = result.scores[best]
            distance = MATE - abs(score)   # plies to the mate, ``best`` included
            if abs(score) < MATE_BOUND or distance > left or best not in result.exact:
                break   # the budget ran out before the mate was seen again
            board.push(best)
            line.append(best)
            left = distance - 1
    finally:
        for _ in line:
            board.pop()
    return line
