# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The probe's alpha-beta: principal variation search on material and placement, over the probe's board.

Negamax with check extensions, a capture quiescence (its first ply also tries quiet checks), a transposition table
(bounds and best moves), a null move, futility pruning near the horizon, late move reductions and pruning, killer
moves and a history of quiet cut-offs. Moves are generated pseudo-legal and in stages (the table's move, captures
most valuable victim first, killers, quiet moves by history, captures that lose material last) and rejected after
``make`` if they leave the king attacked. The static score (the heuristic's tapered tables at the root's phase) is
updated move by move. Any repetition is a draw, so that a proof never relies on a line the opponent could draw.

Compiled by Cython (``alphabeta.pxd`` holds the C declarations) or run as it reads; the two give the same scores
and node counts. ``engine/tactics/__init__.py`` is the interface: it converts python-chess boards and moves.
"""

from __future__ import annotations

from array import array
from typing import Callable, Optional, Sequence

try:
    import cython
except ImportError:
    from .. import cython_shim as cython

from ..evaluators.heuristic import EXCHANGE_VALUE as PIECE_VALUES
from ..board.board import Board, lsb
from .budget import Budget, never
from .settings import ProbeSettings
from .table import TranspositionTable

if not cython.compiled:   # compiled, alphabeta.pxd takes them from board.pxd as C constants
    from ..board.board import BISHOP, KING, KNIGHT, MAX_MOVES, NO_SQUARE, PAWN, QUEEN, ROOK, STACK

COMPILED = cython.compiled   # this module runs compiled (core.py reports it)
MATE = cython.declare(cython.int, 100_000)        # delivering mate now; a mate in k plies scores MATE - k
MATE_BOUND = cython.declare(cython.int, 99_000)   # scores beyond this are mates
INFINITY = cython.declare(cython.int, 1_000_000)
FULL = cython.declare(cython.ulonglong, 0xFFFF_FFFF_FFFF_FFFF)
BACK_RANKS = cython.declare(cython.ulonglong, 0xFF00_0000_0000_00FF)
MAX_PLY = cython.declare(cython.int, 32)          # deepest ply of the full-width search, check extensions included
EXACT = cython.declare(cython.int, 0)             # what a table score is: the value, at least it, at most it
LOWER = cython.declare(cython.int, 1)
UPPER = cython.declare(cython.int, 2)
RESCORE = cython.declare(cython.int, 1 << 30)     # gain(): castling moves two pieces, so the score is summed anew
QUEEN_PROMOTION_FIRST = cython.declare(cython.int, 1 << 30)   # quiet queen promotions sort ahead of any history
HISTORY_LIMIT = cython.declare(cython.int, 1 << 28)           # the history is halved when a count passes this
LOSING_SLOTS = cython.declare(cython.int, 128)    # captures that lose material kept a ply
EXCHANGE_VALUE = cython.declare(cython.int[::1], array("i", PIECE_VALUES))   # the heuristic's, by piece type
VICTIMS = cython.declare(cython.int[::1], array("i", (QUEEN, ROOK, BISHOP, KNIGHT, PAWN)))    # most valuable first
ATTACKERS = cython.declare(cython.int[::1], array("i", (PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING)))  # least first
# The stages of a node's moves (``next_move``).
FIRST = cython.declare(cython.int, 0)
CAPTURES = cython.declare(cython.int, 1)
KILLERS = cython.declare(cython.int, 2)
QUIETS = cython.declare(cython.int, 3)
LOSING = cython.declare(cython.int, 4)
EVASIONS = cython.declare(cython.int, 5)
DONE = cython.declare(cython.int, 6)


@cython.final
@cython.cclass
class AlphaBeta(Budget):
    """One probe's search over ``board`` (the probe's ``Board``, set up at the root), scoring with ``tables``
    (``[colour * 448 + piece type * 64 + square]``, centipawns) until ``deadline`` (``time.monotonic()``),
    ``stopped()`` or ``max_nodes`` positions; ``aborted`` then says the last search did not finish. ``table``: an
    empty transposition table of ``settings.table_bits`` (default: a new one)."""

    def __init__(self, board: Board, tables: Sequence[int], settings: ProbeSettings, deadline: float,
                 stopped: Callable[[], bool] = never, max_nodes: Optional[int] = None,
                 table: Optional[TranspositionTable] = None) -> None:
        Budget.__init__(self, deadline, stopped, max_nodes)
        self.board = board
        self.tables = array("i", tables)
        if table is None:
            table = TranspositionTable(settings.table_bits)
        elif table.bits != settings.table_bits:
            raise ValueError(f"a table of 2**{table.bits} positions, the settings ask for 2**{settings.table_bits}")
        self.table_keys = table.keys
        self.table_moves = table.moves
        self.table_values = table.values
        self.table_depths = table.depths
        self.table_mask = (1 << settings.table_bits) - 1
        self.killers = array("i", bytes(4 * 2 * (STACK + 1)))
        self.history = array("i", bytes(4 * 64 * 64))
        self.order = array("i", bytes(4 * STACK * MAX_MOVES))
        self.losing = array("i", bytes(4 * STACK * LOSING_SLOTS))
        self.stage = array("i", bytes(4 * STACK))
        self.cursor = array("i", bytes(4 * STACK))
        self.end = array("i", bytes(4 * STACK))
        self.losing_end = array("i", bytes(4 * STACK))
        self.first_move = array("i", bytes(4 * STACK))
        self.null_move_min_depth = settings.null_move_min_depth
        self.null_move_reduction = settings.null_move_reduction
        self.late_move_index = settings.late_move_index
        self.late_move_min_depth = settings.late_move_min_depth
        self.very_late_move_index = settings.very_late_move_index
        self.very_late_min_depth = settings.very_late_min_depth
        self.futility_margin = settings.futility_margin
        self.futility_depth = settings.futility_depth
        self.late_move_pruning = array("i", tuple(settings.late_move_pruning) + (0,))
        self.late_move_pruning_depths = len(settings.late_move_pruning)
        self.quiescence_checks = settings.quiescence_checks
        self.losing_captures_last = settings.losing_captures_last
        self.delta_margin = settings.delta_margin
        self.losing_capture_slack = settings.losing_capture_slack

    # ------------------------------------------------------------------------------- the clock

    @cython.ccall
    def static(self) -> cython.int:
        """The board's score from scratch, side to move's view."""
        board: Board = self.board
        square: cython.int
        piece: cython.int
        score: cython.int = 0
        for square in range(64):
            piece = board.squares[square]
            if piece:
                if (piece >> 3) == board.turn:
                    score += self.tables[(piece >> 3) * 448 + (piece & 7) * 64 + square]
                else:
                    score -= self.tables[(piece >> 3) * 448 + (piece & 7) * 64 + square]
        return score

    @cython.cfunc
    @cython.exceptval(check=False)
    def gain(self, move: cython.int) -> cython.int:
        """What ``move`` adds to the mover's static score; RESCORE for castling."""
        board: Board = self.board
        us: cython.int = board.turn
        frm: cython.int = move & 63
        to: cython.int = (move >> 6) & 63
        piece: cython.int = board.squares[frm] & 7
        victim: cython.int = board.squares[to]
        ours: cython.int = us * 448
        theirs: cython.int = (us ^ 1) * 448
        g: cython.int
        if victim and (victim >> 3) == us:
            return RESCORE
        g = self.tables[ours + ((move >> 12) or piece) * 64 + to] - self.tables[ours + piece * 64 + frm]
        if victim:
            g += self.tables[theirs + (victim & 7) * 64 + to]
        elif piece == PAWN and to == board.ep and (frm ^ to) & 7:
            g += self.tables[theirs + PAWN * 64 + (to ^ 8)]   # the pawn taken stands beside, one rank back
        return g

    @cython.cfunc
    def after(self, score: cython.int, move: cython.int) -> cython.int:
        """Make ``move``; return the new side to move's static score."""
        g: cython.int = self.gain(move)
        self.board.make(move)
        return self.static() if g == RESCORE else -(score + g)

    # ------------------------------------------------------------------------------- moves by stage

    @cython.cfunc
    @cython.exceptval(check=False)
    def captures(self, n: cython.int, least_victim: cython.int, quiet_position: cython.bint,
                 keep_losing: cython.bint) -> cython.int:
        """Write pseudo-legal captures into the board's ``moves`` from ``n``, most valuable victim first, then
        least valuable attacker, en passant last; return the index after the last. Only victims worth more than
        ``least_victim``. ``quiet_position`` (the quiescence): promotions to a queen only, and no capture that
        loses material to the recapture; else with ``keep_losing`` those go to ``losing`` instead."""
        board: Board = self.board
        us: cython.int = board.turn
        mine: cython.ulonglong = board.by_color[us]
        theirs: cython.ulonglong = board.by_color[us ^ 1]
        bply: cython.int = board.ply
        losing_n: cython.int = bply * LOSING_SLOTS
        i: cython.int
        k: cython.int
        victim: cython.int
        attacker: cython.int
        value: cython.int
        to: cython.int
        origin: cython.int
        defended: cython.int
        into_losing: cython.bint
        squares: cython.ulonglong
        attacking: cython.ulonglong
        attackers: cython.ulonglong
        origins: cython.ulonglong
        move: cython.int
        for i in range(5):
            victim = VICTIMS[i]
            value = EXCHANGE_VALUE[victim]
            if value <= least_victim:
                break
            squares = board.by_type[victim] & theirs
            while squares:
                to = lsb(squares)
                squares &= squares - 1
                attacking = board.attackers(to, board.occupied)
                attackers = attacking & mine
                if not attackers:
                    continue
                defended = -1
                for k in range(6):
                    attacker = ATTACKERS[k]
                    origins = attackers & board.by_type[attacker]
                    if not origins:
                        continue
                    into_losing = False
                    if (quiet_position or keep_losing) and EXCHANGE_VALUE[attacker] > value + self.losing_capture_slack:
                        if defended < 0:
                            defended = 1 if attacking & theirs else 0
                        if defended:
                            if not keep_losing:
                                break   # and every more valuable attacker
                            into_losing = True
                    while origins:
                        origin = lsb(origins)
                        origins &= origins - 1
                        move = origin | to << 6
                        if attacker == PAWN and (to < 8 or to >= 56):   # (a pawn's capture never loses)
                            board.moves[n] = move | QUEEN << 12
                            n += 1
                            if not quiet_position:
                                board.moves[n] = move | ROOK << 12
                                board.moves[n + 1] = move | BISHOP << 12
                                board.moves[n + 2] = move | KNIGHT << 12
                                n += 3
                        elif into_losing:
                            if losing_n < (bply + 1) * LOSING_SLOTS:
                                self.losing[losing_n] = move
                                losing_n += 1
                        else:
                            board.moves[n] = move
                            n += 1
        if board.ep != NO_SQUARE and EXCHANGE_VALUE[PAWN] > least_victim:
            origins = board.en_passant_capturers()
            while origins:
                board.moves[n] = lsb(origins) | board.ep << 6
                n += 1
                origins &= origins - 1
        self.losing_end[bply] = losing_n
        return n

    @cython.cfunc
    @cython.exceptval(check=False)
    def quiet_checks(self, n: cython.int) -> cython.int:
        """Write the pseudo-legal moves that capture nothing, promote to nothing and give check, direct or
        discovered, from ``n``; return the index after the last."""
        board: Board = self.board
        us: cython.ulonglong = board.by_color[board.turn]
        at: cython.int = board.ply * 8
        empty: cython.ulonglong = ~board.occupied & FULL
        targets: cython.ulonglong
        discoverers: cython.ulonglong
        direct: cython.int
        i: cython.int
        j: cython.int
        k: cython.int
        move: cython.int
        piece_type: cython.int
        known: cython.bint
        if not board.find_check_squares():
            return n
        if board.ep != NO_SQUARE:
            empty &= ~(cython.cast(cython.ulonglong, 1) << board.ep)   # en passant is a capture
        direct = n
        for piece_type in range(KNIGHT, QUEEN + 1):
            targets = board.check_squares[at + piece_type] & empty
            if targets and board.by_type[piece_type] & us:
                n = board.generate_moves(n, board.by_type[piece_type] & us, targets)
        targets = board.check_squares[at + PAWN] & empty & ~BACK_RANKS
        if targets and board.by_type[PAWN] & us:
            n = board.generate_moves(n, board.by_type[PAWN] & us, targets)
        discoverers = board.discoverers()
        if not discoverers:
            return n
        i = j = n
        n = board.generate_moves(n, discoverers, empty)
        while i < n:
            move = board.moves[i]
            i += 1
            if move >> 12:
                continue
            known = False
            for k in range(direct, j):
                if board.moves[k] == move:
                    known = True
                    break
            if not known and board.gives_check(move):
                board.moves[j] = move
                j += 1
        return j

    @cython.cfunc
    @cython.exceptval(check=False)
    def start_moves(self, first: cython.int) -> cython.void:
        """Begin handing out the moves of the board's position (``next_move``), ``first`` (the table's move, or 0)
        first where it is pseudo-legal here."""
        board: Board = self.board
        bply: cython.int = board.ply
        self.first_move[bply] = first if first and board.is_pseudo_legal(first) else 0
        self.stage[bply] = FIRST

    @cython.cfunc
    @cython.exceptval(check=False)
    def start_evasions(self, first: cython.int) -> cython.void:
        """Begin handing out every pseudo-legal move of a position in check: ``first``, captures, the others."""
        board: Board = self.board
        bply: cython.int = board.ply
        base: cython.int = bply * MAX_MOVES
        end: cython.int = board.generate_quiets(board.generate_captures(base))
        i: cython.int
        j: cython.int
        for i in range(base, end):
            if board.moves[i] == first and first:
                for j in range(i, base, -1):
                    board.moves[j] = board.moves[j - 1]
                board.moves[base] = first
                break
        self.stage[bply] = EVASIONS
        self.cursor[bply] = base
        self.end[bply] = end

    @cython.cfunc
    @cython.exceptval(check=False)
    def next_move(self, ply: cython.int) -> cython.int:
        """The next pseudo-legal move of the position ``start_moves`` began (``ply``: the search's, for its
        killers), or 0 when none is left. Stage by stage, so that a cut-off on the table's move or a capture never
        pays for the quiet moves."""
        board: Board = self.board
        bply: cython.int = board.ply
        base: cython.int = bply * MAX_MOVES
        first: cython.int = self.first_move[bply]
        stage: cython.int
        move: cython.int
        i: cython.int
        j: cython.int
        n: cython.int
        k: cython.int
        key: cython.int
        killer1: cython.int = self.killers[ply * 2]
        killer2: cython.int = self.killers[ply * 2 + 1]
        while True:
            stage = self.stage[bply]
            if stage == EVASIONS:
                if self.cursor[bply] < self.end[bply]:
                    self.cursor[bply] += 1
                    return board.moves[self.cursor[bply] - 1]
                return 0
            if stage == FIRST:
                n = self.captures(base, -INFINITY, False, self.losing_captures_last)
                j = base
                for i in range(base, n):   # the table's move is not handed out twice
                    if board.moves[i] != first:
                        board.moves[j] = board.moves[i]
                        j += 1
                self.cursor[bply] = base
                self.end[bply] = j
                self.stage[bply] = CAPTURES
                if first:
                    return first
            elif stage == CAPTURES:
                if self.cursor[bply] < self.end[bply]:
                    self.cursor[bply] += 1
                    return board.moves[self.cursor[bply] - 1]
                self.stage[bply] = KILLERS
                self.cursor[bply] = 0
            elif stage == KILLERS:
                while self.cursor[bply] < 2:
                    move = killer1 if self.cursor[bply] == 0 else killer2
                    self.cursor[bply] += 1
                    if move and move != first and not board.is_capture(move) and board.is_pseudo_legal(move):
                        return move
                # The quiet moves, after the captures' slots: by the history, queen promotions first (stable).
                n = board.generate_quiets(self.end[bply])
                j = self.end[bply]
                for i in range(self.end[bply], n):
                    move = board.moves[i]
                    if move == first or move == killer1 or move == killer2:
                        continue
                    key = QUEEN_PROMOTION_FIRST if (move >> 12) == QUEEN else self.history[move & 4095]
                    k = j
                    while k > self.end[bply] and self.order[k - 1] < key:
                        board.moves[k] = board.moves[k - 1]
                        self.order[k] = self.order[k - 1]
                        k -= 1
                    board.moves[k] = move
                    self.order[k] = key
                    j += 1
                self.cursor[bply] = self.end[bply]
                self.end[bply] = j
                self.stage[bply] = QUIETS
            elif stage == QUIETS:
                if self.cursor[bply] < self.end[bply]:
                    self.cursor[bply] += 1
                    return board.moves[self.cursor[bply] - 1]
                self.stage[bply] = LOSING
                self.cursor[bply] = bply * LOSING_SLOTS
            elif stage == LOSING:
                while self.cursor[bply] < self.losing_end[bply]:
                    move = self.losing[self.cursor[bply]]
                    self.cursor[bply] += 1
                    if move != first:
                        return move
                self.stage[bply] = DONE
            else:
                return 0

    @cython.cfunc
    @cython.exceptval(check=False)
    def remember_cut(self, move: cython.int, depth: cython.int, ply: cython.int) -> cython.void:
        """A quiet move cut off: the ply's first killer, and a history count (halved all round at its limit)."""
        i: cython.int
        if self.killers[ply * 2] != move:
            self.killers[ply * 2 + 1] = self.killers[ply * 2]
            self.killers[ply * 2] = move
        self.history[move & 4095] += depth * depth
        if self.history[move & 4095] > HISTORY_LIMIT:
            for i in range(4096):
                self.history[i] >>= 1

    # ------------------------------------------------------------------------------- the search

    @cython.cfunc
    def search(self, depth: cython.int, alpha: cython.int, beta: cython.int, ply: cython.int,
               score: cython.int) -> cython.int:
        """Negamax value of the board to ``depth`` plies; ``score`` is its static score."""
        board: Board = self.board
        bply: cython.int = board.ply
        slot: cython.ulonglong = board.key & self.table_mask
        in_check: cython.bint
        first: cython.int = 0
        stored: cython.int
        bound: cython.int
        value: cython.int
        frontier: cython.bint
        margin: cython.int
        quiet_limit: cython.int = -1
        checks_known: cython.bint = False
        discoverers: cython.ulonglong = 0
        quiets: cython.int = 0
        original_alpha: cython.int = alpha
        best: cython.int = -INFINITY
        best_move: cython.int = 0
        searched: cython.int = 0
        pruned: cython.bint = False
        move: cython.int
        gain: cython.int
        quiet: cython.bint
        late: cython.bint
        child: cython.int
        reduction: cython.int
        if self.tick():
            return 0
        if ply and (board.is_repetition() or board.halfmove >= 100 or board.is_insufficient_material()):
            return 0
        in_check = board.in_check()
        if in_check and ply < MAX_PLY:
            depth += 1   # a check is forcing: look one ply further instead of stopping in it
        if depth <= 0 or ply >= MAX_PLY or bply >= STACK - MAX_PLY:
            return self.quiesce(alpha, beta, ply, score, self.quiescence_checks and ply < MAX_PLY)
        if self.table_keys[slot] == board.key:
            first = self.table_moves[slot]
            stored = self.table_values[slot]
            bound = self.table_depths[slot] & 3
            # Mate scores depend on the path's repetitions: they only order moves, never cut.
            if ply and (self.table_depths[slot] >> 2) >= depth and -MATE_BOUND < stored < MATE_BOUND and (
                    bound == EXACT or (bound == LOWER and stored >= beta) or (bound == UPPER and stored <= alpha)):
                return stored
        if (not in_check and depth >= self.null_move_min_depth and beta < MATE_BOUND and score >= beta
                and board.by_color[board.turn] & ~(board.by_type[PAWN] | board.by_type[KING])):
            # Null move: if passing still holds beta, a real move will too (not in pawn endings, where passing can
            # be the only thing that does not lose).
            board.make(0)
            value = -self.search(depth - 1 - self.null_move_reduction, -beta, -beta + 1, ply + 1, -score)
            board.unmake()
            if self.aborted:
                return 0
            if value >= beta:
                return beta if value >= MATE_BOUND else value   # a mate after passing proves nothing
        if in_check:
            self.start_evasions(first)
        else:
            self.start_moves(first)
        # One ply from the quiescence, a move that gives no check leaves the opponent free to stand pat: it scores
        # at most the static score it reaches, and when that is no better than alpha it needs no search (exact, but
        # for a repetition, which cannot come this soon after the last capture or pawn move). Two plies from it, the
        # same with a margin.
        frontier = (depth <= self.futility_depth and not in_check and ply > 0 and -MATE_BOUND < alpha < MATE_BOUND
                    and (alpha >= 0 or board.halfmove + depth < 4))
        margin = 0 if depth == 1 else self.futility_margin
        if depth < self.late_move_pruning_depths and ply > 0 and not in_check and -MATE_BOUND < alpha < MATE_BOUND:
            quiet_limit = self.late_move_pruning[depth]
        if frontier:
            checks_known = True
            board.find_check_squares()
            discoverers = board.discoverers()
        while True:
            move = self.next_move(ply)
            if not move:
                break
            if (frontier and not (move >> 12) and not (discoverers >> (move & 63)) & 1
                    and ((move >> 6) & 63) != board.ep):
                gain = self.gain(move)
                if gain != RESCORE and score + gain + margin <= alpha and not (
                        board.check_squares[bply * 8 + (board.squares[move & 63] & 7)] >> ((move >> 6) & 63)) & 1:
                    best = max(best, score + gain + margin)
                    pruned = True
                    continue
            quiet = not (move >> 12) and not board.is_capture(move)
            if quiet and quiet_limit >= 0 and quiets >= quiet_limit:
                if not checks_known:   # (most nodes cut off before their late moves: only now)
                    checks_known = True
                    board.find_check_squares()
                    discoverers = board.discoverers()
                if not (discoverers >> (move & 63)) & 1 and not board.is_castling(move) and not (
                        board.check_squares[bply * 8 + (board.squares[move & 63] & 7)] >> ((move >> 6) & 63)) & 1:
                    best = max(best, alpha)   # a move left unsearched is taken to fail low: no less than alpha
                    pruned = True
                    continue
            late = (searched >= self.late_move_index and depth >= self.late_move_min_depth and not in_check
                    and quiet)
            child = self.after(score, move)
            if board.left_in_check():
                board.unmake()
                continue   # pseudo-legal only: it leaves the king attacked
            quiets += quiet   # legal quiet moves only, so that pruning implies legal moves were searched
            if not searched:
                value = -self.search(depth - 1, -beta, -alpha, ply + 1, child)
            else:   # zero window first: most later moves only need proving worse
                reduction = 0
                if late and not board.in_check():   # a late quiet move goes shorter first, in full if it then beats alpha
                    reduction = (2 if searched >= self.very_late_move_index and depth >= self.very_late_min_depth
                                 else 1)
                value = -self.search(depth - 1 - reduction, -alpha - 1, -alpha, ply + 1, child)
                if reduction and value > alpha and not self.aborted:
                    value = -self.search(depth - 1, -alpha - 1, -alpha, ply + 1, child)
                if alpha < value < beta and not self.aborted:
                    value = -self.search(depth - 1, -beta, -alpha, ply + 1, child)
            searched += 1
            board.unmake()
            if self.aborted:
                return 0
            if value > best:
                best = value
                best_move = move
                if value > alpha:
                    alpha = value
                    if alpha >= beta:
                        if not board.is_capture(move):
                            self.remember_cut(move, depth, ply)
                        break
        if not searched:
            if pruned:
                return best   # (legality unknown: a stalemate whose moves were all pruned scores as a fail-low)
            return -(MATE - ply) if in_check else 0
        bound = LOWER if best >= beta else EXACT if best > original_alpha else UPPER
        self.table_keys[slot] = board.key
        self.table_moves[slot] = best_move
        self.table_values[slot] = best
        self.table_depths[slot] = depth * 4 + bound
        return best

    @cython.cfunc
    def quiesce(self, alpha: cython.int, beta: cython.int, ply: cython.int, score: cython.int,
                checks: cython.bint) -> cython.int:
        """Captures (and, with ``checks``, the quiet moves that give check) until the position is quiet; the side to
        move may stand pat on its static ``score`` unless in check."""
        board: Board = self.board
        base: cython.int = board.ply * MAX_MOVES
        in_check: cython.bint = board.in_check()
        best: cython.int
        end: cython.int
        i: cython.int
        move: cython.int
        child: cython.int
        value: cython.int
        legal: cython.int = 0
        if board.ply >= STACK - 2:
            return score
        if in_check:
            end = board.generate_quiets(board.generate_captures(base))
            best = -INFINITY
        else:
            best = score
            if best >= beta:
                return best
            alpha = max(alpha, best)
            end = self.captures(base, alpha - best - self.delta_margin, True, False)
            if checks and alpha < MATE_BOUND:
                end = self.quiet_checks(end)
        for i in range(base, end):
            move = board.moves[i]
            child = self.after(score, move)
            if board.left_in_check():
                board.unmake()
                continue   # pseudo-legal: it leaves the king attacked
            legal += 1
            if self.tick():
                board.unmake()
                return 0
            value = -self.quiesce(-beta, -alpha, ply + 1, child, False)
            board.unmake()
            if self.aborted:
                return 0
            if value > best:
                best = value
                if value > alpha:
                    alpha = value
                    if alpha >= beta:
                        break
        if in_check and not legal and best == -INFINITY:
            return -(MATE - ply)
        return best

    # ------------------------------------------------------------------------------- the root

    def probe(self, moves: Sequence[int], reference: int, max_depth: int, window: int) -> tuple:
        """Iteratively deepened over the root's legal ``moves`` until the deadline, ``stopped()`` or the budget:
        (depth, scores, exact) of the deepest iteration that finished (depth 0 if none did). ``reference`` (if among
        the moves) and the moves within ``window`` of the best get exact scores (the set ``exact``); the others are
        upper bounds, each at least ``window`` below the best (fail-soft: a bound at or below -MATE_BOUND still
        proves the move loses)."""
        board: Board = self.board
        depth: cython.int
        alpha: cython.int
        best: cython.int
        score: cython.int
        child: cython.int
        root_score: cython.int = self.static()
        result: tuple = (0, {}, set())
        for depth in range(1, max_depth + 1):
            scores: dict = {}
            exact: set = set()
            best = -INFINITY
            previous: dict = result[1]
            for move in sorted(moves, key=lambda m: (m != reference, -previous.get(m, -INFINITY))):
                alpha = best - window if best > -INFINITY and move != reference else -INFINITY
                child = self.after(root_score, move)
                score = -self.search(depth - 1, -INFINITY, -alpha, 1, child)
                board.unmake()
                if self.aborted:
                    return result
                scores[move] = score
                if score > alpha:
                    exact.add(move)
                best = max(best, score)
            result = (depth, scores, exact)
            # A mate within the plies searched full width is the fastest; one further off (seen through the
            # quiescence's checks, or past the quiet moves pruned near the horizon) may have a faster one a ply or
            # two deeper. The same for the side being mated, once every move is proven lost.
            if MATE - abs(best) <= depth and (best >= MATE_BOUND or len(exact) == len(moves)):
                break
        return result

    # ------------------------------------------------------------------------------- for tests

    def ordered_moves(self, first: int, ply: int) -> list:
        """The pseudo-legal moves in the order the search tries them, here, with ``first`` as the table's move."""
        found = []
        self.start_moves(first)
        move = self.next_move(ply)
        while move:
            found.append(move)
            move = self.next_move(ply)
        return found

    def capture_list(self, least_victim: int = -1_000_000, quiet_position: bool = False,
                     keep_losing: bool = False) -> tuple:
        """``captures()``'s moves, and the losing ones it set apart."""
        base = self.board.ply * MAX_MOVES
        end = self.captures(base, least_victim, quiet_position, keep_losing)
        start = self.board.ply * LOSING_SLOTS
        return ([self.board.moves[i] for i in range(base, end)],
                [self.losing[i] for i in range(start, self.losing_end[self.board.ply])])

    def quiet_check_list(self) -> list:
        base = self.board.ply * MAX_MOVES
        return [self.board.moves[i] for i in range(base, self.quiet_checks(base))]

    def search_node(self, depth: int, alpha: int, beta: int, ply: int) -> int:
        """``search()`` of the board's position from its static score."""
        return self.search(depth, alpha, beta, ply, self.static())

    def set_killers(self, ply: int, first: int, second: int) -> None:
        self.killers[ply * 2], self.killers[ply * 2 + 1] = first, second

    def set_history(self, move: int, count: int) -> None:
        self.history[move & 4095] = count

    def make_scored(self, score: int, move: int) -> int:
        """``after()``: make ``move`` from a position whose static score is ``score``; the new static score."""
        return self.after(score, move)
