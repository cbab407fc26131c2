# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The search tree, compiled: selection, new leaves, their evaluations, backup and the mate solver, over the compiled
board; Python sees a batch of leaves going out and their evaluations coming back.

A simulation descends from the root by PUCT (lc0's: Q + cpuct(N) * P * sqrt(N) / (1 + n), cpuct growing with N, an
unvisited child valued at the parent's Q less a reduction that grows with the prior already visited), playing each
move on one ``Board`` that stands at the root between descents, and writing each position's record for the network's
input (engine/evaluators/lc0_input.py). At a new leaf it generates the legal moves and settles a finished game
(checkmate, stalemate, the fifty-move rule, dead material, a repetition since the last irreversible move, a
tablebase's result); a position the cache knows takes its block at once; any other goes into the :class:`Batch`,
its planes written, for the evaluator. ``finish`` turns a network's policy into priors (lc0's softmax over the legal
moves at ``PolicyTemperature``, lc0's fast exponential), sorts them with a mate in one first, makes the block, caches
it and backs the value up the leaf's path with alternating sign. Visits in flight count in the exploration term, so
the leaves of one batch spread over the tree; a descent into a leaf already in flight is a collision and is undone
when the gather ends, as lc0 does. A proven child that wins makes its parent lost; a parent all of whose moves are
proven takes the best of them.

``Tree`` keeps the game's positions and reuses the subtree of the moves played between searches. Nodes live in
``nodes.py``'s columns; :class:`Node` is a view of one for the code that reports, probes and tests. Compiled by Cython
(``tree.pxd``) or run as it reads, with the same visits, values and moves.
"""

from __future__ import annotations

import numpy as np

try:
    import cython
except ImportError:
    from .. import cython_shim as cython

import chess

from ..board import convert
from ..board.board import Board, popcount
from ..evaluators import lc0_planes
from ..evaluators.lc0_input import Positions
from .nodes import Nodes

if cython.compiled:
    from cython.cimports.libc.math import floor, ldexp, log, sqrt
else:
    from math import floor, ldexp, log, sqrt
    from ..board.board import BLACK, MAX_MOVES, NO_SQUARE, PAWN, WHITE
    from .nodes import NO_BLOCK, NO_NODE, UNPROVEN

COMPILED = cython.compiled
if not cython.compiled:   # compiled, tree.pxd declares them as C constants (Python sees them too)
    WIN, DRAW, LOSS = 1, 0, -1   # a proven result, from the view of the player who moved into the node
    # ``plies`` of a result proven by a tablebase: exact, but the distance to mate is unknown. Larger than any real
    # mate distance, so the solver still prefers a real mate and reports no mate count.
    TB_PLIES = 10_000
    MAX_DEPTH = 240   # deepest line below the root (the board holds 256 moves): a draw there
    PATH = 242        # a path's slots: the root and MAX_DEPTH plies, and one spare
    FIELDS = 12       # a leaf's position for Python: 8 bitboards, castling, flags, clocks
    ROW = 112 * 64    # a position's input planes
    # What a leaf of a batch needs from Python besides its evaluation: its priors steered towards the mate of a lone
    # king's ending (engine/search/mop_up.py).
    STEER = 1
AVOID = cython.declare(cython.double, -1e9)   # the score of a proven loss: chosen only when every move loses
NEVER = cython.declare(cython.double, -1e18)
LN2_INV = cython.declare(cython.double, 1.442695040)
EXP_C1 = cython.declare(cython.double, 0.6602339)
EXP_C2 = cython.declare(cython.double, 0.33976606)
MOST_FORCING = cython.declare(cython.double, 0.9)   # forcing moves' prior share above which the floor is not applied
MOVE_IDS = cython.declare(cython.int, 6 << 12)   # move ids: from | to << 6 | promotion << 12
FREE_STOP_CHECK = 4096   # nodes looked at between two checks for stop while making room at RamLimitMb


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def fast_exp(x: cython.double) -> cython.double:
    """lc0's FastExp: 2**x by a quadratic on the fraction (the priors lc0 computes)."""
    a: cython.double = x * LN2_INV
    n: cython.double
    f: cython.double
    if a < -126.0:
        return 0.0
    n = floor(a)
    f = a - n
    return ldexp(1.0 + f * (EXP_C1 + EXP_C2 * f), cython.cast(cython.int, n))


@cython.final
@cython.cclass
class Batch:
    """The leaves of one gather, waiting for their evaluations: each with its path (visits in flight), its legal
    moves, and a row of input planes (a duplicate position shares its first occurrence's row)."""

    def __init__(self, capacity: int, planes: bool) -> None:
        self.capacity = capacity
        self.size = 0
        self.rows = 0
        self.collided = 0
        self.steer_count = 0   # leaves Python steers (``steered``)
        self.node = memoryview(np.zeros(capacity, dtype=np.int32))
        self.depth = memoryview(np.zeros(capacity, dtype=np.int32))
        self.paths = memoryview(np.zeros(capacity * PATH, dtype=np.int32))
        self.collided_depth = memoryview(np.zeros(capacity, dtype=np.int32))
        self.collided_paths = memoryview(np.zeros(capacity * PATH, dtype=np.int32))
        self.moves = memoryview(np.zeros(capacity * MAX_MOVES, dtype=np.int32))
        self.move_count = memoryview(np.zeros(capacity, dtype=np.int32))
        self.mate = memoryview(np.zeros(capacity, dtype=np.int32))
        self.forcing = memoryview(np.zeros(capacity * MAX_MOVES, dtype=np.uint8))
        self.key = memoryview(np.zeros(capacity, dtype=np.uint64))
        self.row = memoryview(np.zeros(capacity, dtype=np.int32))
        self.source = memoryview(np.zeros(capacity, dtype=np.int32))
        self.flags = memoryview(np.zeros(capacity, dtype=np.int32))
        self.made = memoryview(np.zeros(capacity, dtype=np.int32))   # the block each leaf got (-1: not yet)
        self.fields = memoryview(np.zeros(capacity * FIELDS, dtype=np.uint64))
        self.priors = memoryview(np.zeros(MAX_MOVES, dtype=np.float64))
        self.stash = memoryview(np.zeros(capacity * MAX_MOVES, dtype=np.float64))   # a steered leaf's priors
        self.stash_value = memoryview(np.zeros(2 * capacity, dtype=np.float64))      # and its value and draw
        self.order = memoryview(np.zeros(MAX_MOVES, dtype=np.int32))
        self.planes_array = np.zeros((capacity, 112, 8, 8) if planes else (0, 112, 8, 8), dtype=np.float32)
        self.planes = memoryview(self.planes_array.reshape(-1))

    def input_planes(self) -> np.ndarray:
        """The network's input: a [rows, 112, 8, 8] float32 view of the rows written."""
        return self.planes_array[:self.rows]

    def steered(self) -> list:
        """The leaves whose priors and value Python steers (lone king endings), in order."""
        return [i for i in range(self.size) if self.flags[i] & STEER]

    def is_steered(self, i: int) -> bool:
        return bool(self.flags[i] & STEER)


@cython.final
@cython.cclass
class Tree:
    """The root and the nodes below it, the game's positions before it, and the board that walks the lines."""

    def __init__(self) -> None:
        self.nodes = Nodes()
        self.board = Board()
        self.scratch = Board()
        self.positions = Positions()
        self.path = memoryview(np.zeros(PATH, dtype=np.int32))
        self.root_allowed = memoryview(np.zeros(MAX_MOVES, dtype=np.int32))
        self.root_allowed_count = -1
        self.root_index = 0
        self.root = self.nodes.new_node(0)
        self.visited = 0
        self.restricted = False
        self.cpuct, self.cpuct_base, self.cpuct_factor, self.fpu_reduction = 1.745, 38739.0, 3.894, 0.33
        self.uct = False
        self.uct_c = 1.414
        self.history = True
        self.cache_on = False
        self.steer_root = True
        self.made_with = None
        self.tb_pieces = 0
        self.tablebase = None
        self.tb_hits = 0
        self.playouts = self.depth_sum = self.seldepth = 0
        self.root_fullmove = 1
        self.start_key = None
        self.game_moves = []     # the core moves from the game's first position to the root
        self.states = []         # python-chess boards of the game, the root's last
        self.root_board = chess.Board()
        self.zobrist = []        # their Zobrist keys

    # ------------------------------------------------------------------------------- the position

    def set_position(self, start_key: object, states: list, moves: list) -> int:
        """Move the root to ``states[-1]``, reached from ``states[0]`` (named ``start_key``) by the python-chess
        ``moves``. Keeps the subtree of the moves played when the new game extends the old one; returns the visits
        kept."""
        core_moves = [convert.core_move(states[i], move) for i, move in enumerate(moves)]
        old_moves = self.game_moves
        same_start = start_key == self.start_key
        kept = 0
        if same_start and len(core_moves) >= len(old_moves) and core_moves[:len(old_moves)] == old_moves:
            kept = self._walk(core_moves[len(old_moves):])
        else:
            self._new_root()
        if not same_start or core_moves[:len(self.game_moves)] != self.game_moves[:len(core_moves)]:
            self.zobrist = []
        known = min(len(self.zobrist), len(states))
        self.zobrist = self.zobrist[:known]
        self.start_key, self.game_moves, self.states = start_key, core_moves, list(states)
        first = states[0]
        start = lc0_planes.is_startpos(first)
        self.positions.reserve(len(states) + PATH)
        for g in range(known, len(states)):
            self.zobrist.append(self._zobrist(states[g]))
        self.positions.set_start(start, lc0_planes._fill_slot(first, True), 0 if start else self.zobrist[0])
        for g in range(len(states)):   # (a few microseconds a position: the repetition flags need them all)
            board = states[g]
            oc = board.occupied_co
            self.positions.set_record(g, (oc[chess.WHITE], oc[chess.BLACK], board.pawns, board.knights,
                                          board.bishops, board.rooks, board.queens, board.kings),
                                      board.clean_castling_rights(), board.turn, lc0_planes._ep_flag(board),
                                      board.halfmove_clock, self.zobrist[g])
        self.root_index = len(states) - 1
        root = self.root_board = states[self.root_index]
        self.root_fullmove = min(max(root.fullmove_number, 1), convert.MAX_MOVE_NUMBER)
        earlier = self.zobrist[max(0, len(states) - 1 - root.halfmove_clock):len(states) - 1]
        convert.place(self.board, root, root.clean_castling_rights(), root.halfmove_clock, earlier)
        return kept

    def _zobrist(self, board: chess.Board) -> int:
        return convert.place(self.scratch, board, board.clean_castling_rights(), 0, ()).key

    def root_state(self) -> chess.Board:
        """A fresh python-chess board of the root."""
        return self.root_board.copy(stack=False)

    def earlier_keys(self) -> list:
        """The Zobrist keys of the game's positions since its last irreversible move before the root."""
        root = self.root_board
        return self.zobrist[max(0, len(self.states) - 1 - root.halfmove_clock):len(self.states) - 1]

    def _new_root(self) -> None:
        nodes: Nodes = self.nodes
        nodes.free_below(self.root)
        nodes.release(self.root)
        self.root = nodes.new_node(0)
        self.visited = 0
        self.restricted = False

    def _walk(self, moves: list) -> int:
        """Make the node ``moves`` below the root the root, freeing the rest; the visits it keeps (0: a new root)."""
        nodes: Nodes = self.nodes
        node: cython.int = self.root
        line = [node]
        for move in moves:
            child = self._child(node, move)
            if child == NO_NODE or nodes.block[child] == NO_BLOCK:
                self._new_root()
                return 0
            node = child
            line.append(node)
        if node != self.root:
            self.restricted = False
            for i in range(len(line) - 1):
                parent, keep = line[i], line[i + 1]
                c = nodes.first_child[parent]
                while c != NO_NODE:
                    after = nodes.next_sibling[c]
                    if c != keep:
                        nodes.free_below(c)
                        nodes.release(c)
                    c = after
                nodes.first_child[parent] = NO_NODE
                nodes.release(parent)
            nodes.next_sibling[node] = NO_NODE
            nodes.move[node] = 0
            self.root = node
        if self._terminal(node):
            self._new_root()
            return 0
        self.visited = nodes.visits[node]
        return nodes.visits[node]

    @cython.cfunc
    def _child(self, node: cython.int, move: cython.int) -> cython.int:
        nodes: Nodes = self.nodes
        c: cython.int = nodes.first_child[node]
        while c != NO_NODE:
            if nodes.move[c] == move:
                return c
            c = nodes.next_sibling[c]
        return NO_NODE

    @cython.cfunc
    def _terminal(self, node: cython.int) -> cython.bint:
        nodes: Nodes = self.nodes
        return nodes.proven[node] != UNPROVEN and (nodes.plies[node] == 0 or nodes.plies[node] == TB_PLIES)

    def clear(self) -> None:
        """Forget the tree (the cache stays), keep the position."""
        self._new_root()

    def forget_everything(self) -> None:
        """Forget the tree and the cache (``ucinewgame``, a new network)."""
        self.nodes.clear()
        self.made_with = None
        self.root = self.nodes.new_node(0)
        self.visited = 0
        self.restricted = False

    # ------------------------------------------------------------------------------- settings of a search

    def configure(self, cpuct: float, cpuct_base: float, cpuct_factor: float, fpu_reduction: float, uct: bool,
                  uct_c: float, history: bool, cache_entries: int, tablebase: object = None,
                  steer_root: bool = True, made_with: object = None) -> None:
        """The search's parameters: PUCT's (or UCB1's with ``uct``), whether the evaluator reads history (the cache
        key covers it), the cache's size (0: no cache), a tablebase (``result(board)`` and ``max_pieces``), whether
        the root's priors are steered against a lone king, and what the cached priors were ``made_with``
        (PolicyTemperature, ForcingPriorFloor: others empty the cache)."""
        self.cpuct, self.cpuct_base, self.cpuct_factor, self.fpu_reduction = cpuct, cpuct_base, cpuct_factor, fpu_reduction
        self.uct, self.uct_c = uct, uct_c
        self.history = history
        self.nodes.cache_resize(cache_entries)
        if made_with != self.made_with:
            self.nodes.cache_clear()
            self.made_with = made_with
        self.cache_on = cache_entries > 0
        self.tablebase = tablebase
        self.tb_pieces = tablebase.max_pieces if tablebase is not None else 0
        self.steer_root = steer_root
        self.playouts = self.depth_sum = self.seldepth = 0
        self.tb_hits = 0

    def restrict_root(self, moves: list) -> None:
        """Search only these python-chess moves at the root (``go searchmoves``, tablebases); the root must be new."""
        root = self.root_board
        allowed = [convert.core_move(root, move) for move in moves]
        for k, move in enumerate(allowed):
            self.root_allowed[k] = move
        self.root_allowed_count = len(allowed)
        self.restricted = True

    def lift_restriction(self) -> None:
        self.root_allowed_count = -1

    # ------------------------------------------------------------------------------- selection

    @cython.cfunc
    def add_child(self, node: cython.int, last: cython.int) -> cython.int:
        """Open ``node``'s next move (after its child ``last``, NO_NODE for the first)."""
        nodes: Nodes = self.nodes
        k: cython.int = nodes.child_count[node]
        child: cython.int = nodes.new_node(nodes.edge_move(nodes.block[node], k))
        if last == NO_NODE:
            nodes.first_child[node] = child
        else:
            nodes.next_sibling[last] = child
        nodes.child_count[node] = k + 1
        return child

    @cython.cfunc
    def select(self, node: cython.int) -> cython.int:
        """PUCT's choice among ``node``'s children and its next unopened move (which it opens when chosen)."""
        nodes: Nodes = self.nodes
        b: cython.int = nodes.block[node]
        count: cython.int = nodes.edge_count(b)
        opened: cython.int = nodes.child_count[node]
        coeff: cython.double = self.exploration(node)
        parent_q: cython.double = 0.0
        best: cython.int = NO_NODE
        best_score: cython.double = NEVER
        visited_policy: cython.double = 0.0
        fresh: cython.int = NO_NODE
        fresh_u: cython.double = -1.0
        c: cython.int = nodes.first_child[node]
        last: cython.int = NO_NODE
        k: cython.int = 0
        prior: cython.double
        score: cython.double
        u: cython.double
        fpu: cython.double
        visits: cython.double
        while c != NO_NODE:
            prior = nodes.edge_prior(b, k)
            visits = nodes.visits[c]
            if visits:
                visited_policy += prior
            if nodes.proven[c] != UNPROVEN:
                if nodes.proven[c] == LOSS:
                    score = AVOID
                else:
                    score = DRAW + coeff * prior / (1 + visits + nodes.in_flight[c])
                if score > best_score:
                    best_score, best = score, c
            elif visits:
                score = nodes.value_sum[c] / visits + coeff * prior / (1 + visits + nodes.in_flight[c])
                if score > best_score:
                    best_score, best = score, c
            else:
                u = prior / (1 + nodes.in_flight[c])
                if u > fresh_u:
                    fresh_u, fresh = u, c
            last = c
            c = nodes.next_sibling[c]
            k += 1
        if nodes.visits[node]:
            parent_q = -nodes.value_sum[node] / nodes.visits[node]
        fpu = parent_q - self.fpu_reduction * sqrt(visited_policy)
        if fresh != NO_NODE and fpu + coeff * fresh_u > best_score:
            best_score, best = fpu + coeff * fresh_u, fresh
        if opened < count and fpu + coeff * nodes.edge_prior(b, opened) > best_score:
            best = self.add_child(node, last)
        return best

    @cython.ccall
    def exploration(self, node: cython.int) -> cython.double:
        """cpuct(N) * sqrt(N): the coefficient of P / (1 + n) at ``node``."""
        n: cython.double = self.nodes.visits[node] + self.nodes.in_flight[node]
        cpuct: cython.double = self.cpuct + self.cpuct_factor * log((n + self.cpuct_base) / self.cpuct_base)
        return cpuct * sqrt(n - 1 if n - 1 > 1 else 1.0)

    @cython.cfunc
    def select_uct(self, node: cython.int) -> cython.int:
        """UCB1 (random rollouts, whose priors say nothing): every move once, then Q + c * sqrt(ln N / n)."""
        nodes: Nodes = self.nodes
        c: cython.int = nodes.first_child[node]
        last: cython.int = NO_NODE
        best: cython.int = NO_NODE
        best_score: cython.double = NEVER
        log_n: cython.double
        n: cython.double
        score: cython.double
        total: cython.double = nodes.visits[node] + nodes.in_flight[node]
        while c != NO_NODE:
            last = c
            c = nodes.next_sibling[c]
        if nodes.child_count[node] < nodes.edge_count(nodes.block[node]):
            return self.add_child(node, last)
        log_n = log(total if total > 1 else 1.0)
        c = nodes.first_child[node]
        while c != NO_NODE:
            n = nodes.visits[c] + nodes.in_flight[c]
            if nodes.proven[c] != UNPROVEN:
                if nodes.proven[c] == LOSS:
                    score = AVOID
                else:
                    score = nodes.proven[c] + self.uct_c * sqrt(log_n / (n if n > 1 else 1.0))
            elif n == 0:
                return c
            else:
                score = (nodes.value_sum[c] / (nodes.visits[c] if nodes.visits[c] > 1 else 1)
                         + self.uct_c * sqrt(log_n / n))
            if score > best_score:
                best_score, best = score, c
            c = nodes.next_sibling[c]
        return best

    # ------------------------------------------------------------------------------- a descent

    @cython.cfunc
    def descend(self) -> cython.int:
        """Walk from the root to a node to settle or evaluate, visits in flight on the way, the board and the
        positions' records following; returns the depth (the path is ``self.path[0 .. depth]``)."""
        nodes: Nodes = self.nodes
        board: Board = self.board
        node: cython.int = self.root
        depth: cython.int = 0
        move: cython.int
        frm: cython.int
        to: cython.int
        ep: cython.int
        pawn_double: cython.bint
        self.path[0] = node
        nodes.in_flight[node] += 1
        while nodes.block[node] != NO_BLOCK and nodes.proven[node] == UNPROVEN:
            if depth == MAX_DEPTH:
                nodes.proven[node] = DRAW   # (a line this long is a shuffle: no search reaches it but by one)
                nodes.plies[node] = 0
                break
            node = self.select_uct(node) if self.uct else self.select(node)
            move = nodes.move[node]
            frm = move & 63
            to = (move >> 6) & 63
            pawn_double = (board.squares[frm] & 7) == PAWN and (frm ^ to) == 16
            board.make(move)
            ep = NO_SQUARE
            if pawn_double and board.ep_would_be_attacked((frm + to) >> 1):
                ep = (frm + to) >> 1
            depth += 1
            self.positions.copy_board(self.root_index + depth, board, ep)
            self.path[depth] = node
            nodes.in_flight[node] += 1
        return depth

    @cython.cfunc
    @cython.exceptval(check=False)
    def unwind(self, depth: cython.int) -> cython.void:
        while depth:
            self.board.unmake()
            depth -= 1

    @cython.cfunc
    @cython.exceptval(check=False)
    def count(self, depth: cython.int) -> cython.void:
        self.playouts += 1
        self.depth_sum += depth
        if depth > self.seldepth:
            self.seldepth = depth

    # ------------------------------------------------------------------------------- backup and the solver

    @cython.cfunc
    @cython.exceptval(check=False)
    def backup(self, paths: cython.int[::1], at: cython.int, depth: cython.int, value: cython.double,
               draw: cython.double, proven_changed: cython.bint, in_flight: cython.bint) -> cython.void:
        """One visit of ``value`` (for the player who moved into the leaf ``paths[at + depth]``) up to the root,
        ``paths[at]``; a proof changed at the leaf goes up as far as it decides the parents."""
        nodes: Nodes = self.nodes
        i: cython.int
        node: cython.int
        if not nodes.visits[paths[at + depth]]:
            self.visited += 1
        i = depth
        while i >= 0:
            node = paths[at + i]
            nodes.visits[node] += 1
            nodes.value_sum[node] += value
            nodes.draw_sum[node] += draw
            if in_flight:
                nodes.in_flight[node] -= 1
            if i and proven_changed:
                proven_changed = nodes.proven[paths[at + i - 1]] == UNPROVEN and self.prove(paths[at + i - 1])
            value = -value
            i -= 1

    @cython.ccall
    @cython.exceptval(check=False)
    def prove(self, node: cython.int) -> cython.bint:
        """Settle ``node`` from its children if they decide it; True if it became proven. A child that wins (for the
        player moving into it) makes ``node`` lost; once every move is opened and proven, a draw if one draws, else a
        win, by the opponent's slowest loss."""
        nodes: Nodes = self.nodes
        c: cython.int = nodes.first_child[node]
        fastest_win: cython.int = -1
        draw_plies: cython.int = -1
        slowest_loss: cython.int = -1
        unproven: cython.bint = False
        while c != NO_NODE:
            if nodes.proven[c] == WIN:
                if fastest_win < 0 or nodes.plies[c] < fastest_win:
                    fastest_win = nodes.plies[c]
            elif nodes.proven[c] == DRAW:
                if draw_plies < 0 or nodes.plies[c] < draw_plies:
                    draw_plies = nodes.plies[c]
            elif nodes.proven[c] == LOSS:
                if nodes.plies[c] > slowest_loss:
                    slowest_loss = nodes.plies[c]
            else:
                unproven = True
            c = nodes.next_sibling[c]
        if fastest_win >= 0:
            nodes.proven[node] = LOSS
            nodes.plies[node] = fastest_win + 1
            return True
        if unproven or nodes.child_count[node] < nodes.edge_count(nodes.block[node]):
            return False
        if draw_plies >= 0:
            nodes.proven[node] = DRAW
            nodes.plies[node] = draw_plies + 1
        else:
            nodes.proven[node] = WIN
            nodes.plies[node] = slowest_loss + 1
        return True

    # ------------------------------------------------------------------------------- gathering leaves

    def gather(self, batch: Batch, room: int, playout_limit: int = -1, collisions: int = -1) -> int:
        """Descend up to ``room`` times to new leaves to evaluate, leaving them in ``batch``; settle on the way what
        needs no evaluation (proven nodes, finished games, positions the cache knows). Ends early after ``room``
        settled leaves or ``collisions`` (default ``room``) descents into leaves already in flight, whose visits in
        flight stay until the end so that the next descents turn elsewhere, or at ``playout_limit`` simulations.
        Returns the batch's leaves. (The batch holds at most its capacity of leaves and of collisions.)"""
        room = min(room, batch.capacity)
        return self.gather_c(batch, room, playout_limit, room if collisions < 0 else min(collisions, batch.capacity))

    @cython.cfunc
    def gather_c(self, batch: Batch, room: cython.int, playout_limit: cython.longlong,
                 collisions: cython.int) -> cython.int:
        nodes: Nodes = self.nodes
        settled: cython.int = 0
        depth: cython.int
        leaf: cython.int
        j: cython.int
        batch.size = batch.rows = batch.collided = batch.steer_count = 0
        while (batch.size < room and batch.collided < collisions and settled < room
               and nodes.proven[self.root] == UNPROVEN and (playout_limit < 0 or self.playouts < playout_limit)):
            depth = self.descend()
            leaf = self.path[depth]
            if nodes.proven[leaf] != UNPROVEN:
                self.count(depth)
                self.backup(self.path, 0, depth, nodes.proven[leaf], 1.0 if nodes.proven[leaf] == DRAW else 0.0,
                            False, True)
                settled += 1
            elif nodes.in_flight[leaf] > 1:
                for j in range(depth + 1):
                    batch.collided_paths[batch.collided * PATH + j] = self.path[j]
                batch.collided_depth[batch.collided] = depth
                batch.collided += 1
            else:
                self.count(depth)
                if self.visit_new(batch, depth):
                    settled += 1
            self.unwind(depth)
        for leaf in range(batch.collided):   # their visits in flight go now
            for j in range(batch.collided_depth[leaf] + 1):
                nodes.in_flight[batch.collided_paths[leaf * PATH + j]] -= 1
        return batch.size

    @cython.cfunc
    def visit_new(self, batch: Batch, depth: cython.int) -> cython.bint:
        """The leaf ``self.path[depth]`` (the board stands on it), visited first: settled at once (True: a finished
        game, a cache hit) or added to ``batch``."""
        nodes: Nodes = self.nodes
        board: Board = self.board
        leaf: cython.int = self.path[depth]
        start: cython.int = board.ply * MAX_MOVES
        end: cython.int = board.generate_legal(start)
        count: cython.int
        result: cython.int = UNPROVEN
        plies: cython.int = 0
        i: cython.int
        j: cython.int
        k: cython.int
        b: cython.int
        key: cython.ulonglong = 0
        if depth == 0 and self.root_allowed_count >= 0:
            end = self.keep_allowed(start, end)
        count = end - start
        if depth > 0:   # (the root is searched whatever the game's state: the caller saw that it has moves)
            if count == 0:
                result = LOSS if board.in_check() else DRAW
            elif board.halfmove >= 100:
                result = DRAW
            elif popcount(board.occupied) <= 4 and board.is_insufficient_material():
                result = DRAW
            elif board.is_repetition():
                result = DRAW
            elif self.tb_pieces and popcount(board.occupied) <= self.tb_pieces and not board.castling:
                found = self.tablebase.result(self.python_board(depth))
                if found is not None:
                    result = cython.cast(cython.int, found)
                    plies = TB_PLIES
                    self.tb_hits += 1
        if result != UNPROVEN:
            nodes.proven[leaf] = -result
            nodes.plies[leaf] = plies
            self.backup(self.path, 0, depth, -result, 1.0 if result == DRAW else 0.0, True, True)
            return True
        private: cython.bint = depth == 0 and (self.root_allowed_count >= 0 or not self.steer_root)
        if not private:   # (the key finds the position in the cache, and a second one in the batch)
            key = self.positions.cache_key(self.root_index + depth, self.history)
            if self.cache_on:
                b = nodes.cache_get(key)
                if b != NO_BLOCK and nodes.edge_count(b) == count:
                    self.attach(self.path, 0, depth, b, True)
                    return True
        i = batch.size
        batch.node[i] = leaf
        batch.depth[i] = depth
        for j in range(depth + 1):
            batch.paths[i * PATH + j] = self.path[j]
        for j in range(count):
            batch.moves[i * MAX_MOVES + j] = board.moves[start + j]
        batch.move_count[i] = count
        batch.key[i] = key
        batch.made[i] = NO_BLOCK
        batch.flags[i] = 0
        if (popcount(board.by_color[WHITE]) == 1 or popcount(board.by_color[BLACK]) == 1) and (
                depth > 0 or self.steer_root):
            batch.flags[i] = STEER
            batch.steer_count += 1
        self.look_at_moves(batch, i)
        self.write_fields(batch, i, depth)
        batch.source[i] = -1
        if key:
            for j in range(i):
                if batch.key[j] == key and batch.move_count[j] == count:
                    batch.source[i] = j
                    if batch.flags[j] & STEER and not batch.flags[i] & STEER:
                        batch.flags[i] |= STEER
                        batch.steer_count += 1
                    break
        if batch.source[i] >= 0:
            batch.row[i] = batch.row[batch.source[i]]
        else:
            batch.row[i] = batch.rows
            if len(batch.planes):
                for k in range(ROW):
                    batch.planes[batch.rows * ROW + k] = 0.0
                self.positions.write(self.root_index + depth, batch.planes[batch.rows * ROW:(batch.rows + 1) * ROW],
                                     self.history)
            batch.rows += 1
        batch.size += 1
        return False

    @cython.cfunc
    def keep_allowed(self, start: cython.int, end: cython.int) -> cython.int:
        """Keep the generated root moves that ``restrict_root`` allows (all of them when none is legal)."""
        board: Board = self.board
        kept: cython.int = start
        i: cython.int
        j: cython.int
        for i in range(start, end):
            for j in range(self.root_allowed_count):
                if self.root_allowed[j] == board.moves[i]:
                    board.moves[kept] = board.moves[i]
                    kept += 1
                    break
        return kept if kept > start else end

    @cython.cfunc
    def look_at_moves(self, batch: Batch, i: cython.int) -> cython.void:
        """Find a mate in one among the leaf's moves (``batch.mate``, -1: none) and mark its forcing moves
        (captures, promotions, checks: ``batch.forcing``)."""
        board: Board = self.board
        count: cython.int = batch.move_count[i]
        k: cython.int
        move: cython.int
        check: cython.bint
        after: cython.int
        batch.mate[i] = -1
        for k in range(count):
            move = batch.moves[i * MAX_MOVES + k]
            forcing: cython.bint = board.is_capture(move) or (move >> 12) != 0
            board.make(move)
            check = board.in_check()
            if check and batch.mate[i] < 0:
                after = board.ply * MAX_MOVES
                if board.generate_legal(after) == after:
                    batch.mate[i] = k
            board.unmake()
            batch.forcing[i * MAX_MOVES + k] = 1 if forcing or check else 0

    @cython.cfunc
    def write_fields(self, batch: Batch, i: cython.int, depth: cython.int) -> cython.void:
        """The leaf's position as python-chess needs it (for Python evaluators and the lone king's steering)."""
        board: Board = self.board
        at: cython.int = i * FIELDS
        t: cython.int
        batch.fields[at] = board.by_color[WHITE]
        batch.fields[at + 1] = board.by_color[BLACK]
        for t in range(1, 7):
            batch.fields[at + 1 + t] = board.by_type[t]
        batch.fields[at + 8] = board.castling
        batch.fields[at + 9] = board.turn | (board.ep << 1) | ((1 if board.chess960 else 0) << 8)
        batch.fields[at + 10] = board.halfmove
        batch.fields[at + 11] = self.root_fullmove + (depth + (0 if self.states_turn_white() else 1)) // 2

    @cython.cfunc
    def states_turn_white(self) -> cython.bint:
        return ((self.board.turn == WHITE) == (self.board.ply % 2 == 0))

    def python_board(self, depth: int) -> chess.Board:
        """The board's position (``depth`` plies below the root) as a python-chess board."""
        board: Board = self.board
        fullmove = self.root_fullmove + (depth + (0 if self.states_turn_white() else 1)) // 2
        return convert.chess_board((board.by_color[WHITE], board.by_color[BLACK], board.by_type[1], board.by_type[2],
                                    board.by_type[3], board.by_type[4], board.by_type[5], board.by_type[6]),
                                   board.castling, board.turn == WHITE, board.ep, board.halfmove, fullmove,
                                   board.chess960)

    # ------------------------------------------------------------------------------- evaluations coming back

    def finish(self, batch: Batch, policy: np.ndarray, values: np.ndarray, draws: np.ndarray, columns: np.ndarray,
               temperature: float, floor: float) -> None:
        """A network's evaluation of ``batch``'s rows: ``policy`` [rows, width] logits (float32), ``values`` and
        ``draws`` per row, ``columns`` [2, move ids] the policy column of each move by side to move. Every leaf but
        those Python steers (``Batch.steered``) gets its block and is backed up."""
        if not np.isfinite(policy.sum(dtype=np.float64) + values.sum() + draws.sum()):   # (one pass, no copy)
            # A net that overflows (int8 saturating, a damaged file) must not put NaN into the tree, where every
            # comparison with it is false: such a row counts as an even position (value 0) with even priors.
            policy = np.where(np.isfinite(policy).all(axis=1, keepdims=True), policy, 0.0).astype(np.float32)
            values = np.where(np.isfinite(values), values, 0.0)
            draws = np.where(np.isfinite(draws), draws, 0.0)
        self.finish_c(batch, memoryview(np.ascontiguousarray(policy, dtype=np.float32).reshape(-1)), policy.shape[1],
                      memoryview(np.ascontiguousarray(values, dtype=np.float64)),
                      memoryview(np.ascontiguousarray(draws, dtype=np.float64)),
                      memoryview(np.ascontiguousarray(columns, dtype=np.int32).reshape(-1)), temperature, floor)

    @cython.cfunc
    def finish_c(self, batch: Batch, policy: cython.float[::1], width: cython.int, values: cython.double[::1],
                 draws: cython.double[::1], columns: cython.int[::1], temperature: cython.double,
                 floor: cython.double) -> cython.void:
        i: cython.int
        k: cython.int
        r: cython.int
        count: cython.int
        at: cython.int
        logit: cython.double
        top: cython.double
        total: cython.double
        for i in range(batch.size):
            if batch.source[i] >= 0:
                if not batch.flags[i] & STEER:
                    self.take(batch, i, batch.made[batch.source[i]])
                continue
            r = batch.row[i]
            count = batch.move_count[i]
            at = (batch.fields[i * FIELDS + 9] & 1) * MOVE_IDS
            top = NEVER
            for k in range(count):
                logit = policy[r * width + columns[at + batch.moves[i * MAX_MOVES + k]]]
                batch.priors[k] = logit
                if logit > top:
                    top = logit
            total = 0.0
            for k in range(count):
                batch.priors[k] = fast_exp((batch.priors[k] - top) / temperature)
                total += batch.priors[k]
            for k in range(count):
                batch.priors[k] = batch.priors[k] / total
            if floor > 0.0:
                self.raise_forcing(batch, i, floor)
            if batch.flags[i] & STEER:   # Python steers it (or not) and makes its block
                for k in range(count):
                    batch.stash[i * MAX_MOVES + k] = batch.priors[k]
                batch.stash_value[2 * i] = values[r]
                batch.stash_value[2 * i + 1] = draws[r]
                continue
            self.take(batch, i, self.make_block(batch, i, values[r], draws[r], True))

    def finish_leaf(self, batch: Batch, i: int, value: float, draw: float, priors: list, cache: bool = True) -> None:
        """The evaluation of leaf ``i`` from Python (an evaluator of python-chess boards, or the steering of a lone
        king's ending): ``priors`` aligned with the leaf's moves. A duplicate takes its first occurrence's block."""
        k: cython.int
        if batch.source[i] >= 0 and batch.made[batch.source[i]] != NO_BLOCK:
            self.take(batch, i, batch.made[batch.source[i]])
            return
        for k in range(batch.move_count[i]):
            batch.priors[k] = priors[k]
        self.take(batch, i, self.make_block(batch, i, value, draw, cache))

    @cython.cfunc
    def raise_forcing(self, batch: Batch, i: cython.int, floor: cython.double) -> cython.void:
        """Every forcing move's prior at least ``floor``, the others scaled to keep the sum (engine/evaluators/
        forcing.py's rule): none when forcing moves would take more than MOST_FORCING of it."""
        count: cython.int = batch.move_count[i]
        k: cython.int
        forcing_mass: cython.double = 0.0
        quiet_mass: cython.double = 0.0
        scale: cython.double
        for k in range(count):
            if batch.forcing[i * MAX_MOVES + k]:
                forcing_mass += batch.priors[k] if batch.priors[k] > floor else floor
            else:
                quiet_mass += batch.priors[k]
        if forcing_mass > MOST_FORCING or quiet_mass <= 0.0:
            return
        scale = (1.0 - forcing_mass) / quiet_mass
        for k in range(count):
            if batch.forcing[i * MAX_MOVES + k]:
                if batch.priors[k] < floor:
                    batch.priors[k] = floor
            else:
                batch.priors[k] = batch.priors[k] * scale

    @cython.cfunc
    def make_block(self, batch: Batch, i: cython.int, value: cython.double, draw: cython.double,
                   cache: cython.bint) -> cython.int:
        """The block of leaf ``i`` from ``batch.priors``: moves best prior first (a stable sort), a mate in one in
        front; cached under the leaf's key unless ``cache`` is false or it has none."""
        nodes: Nodes = self.nodes
        count: cython.int = batch.move_count[i]
        k: cython.int
        j: cython.int
        o: cython.int
        mate: cython.int = batch.mate[i]
        b: cython.int
        for k in range(count):   # insertion sort: a few dozen moves
            j = k
            while j > 0 and batch.priors[batch.order[j - 1]] < batch.priors[k]:
                batch.order[j] = batch.order[j - 1]
                j -= 1
            batch.order[j] = k
        if mate >= 0:
            j = 0
            while batch.order[j] != mate:
                j += 1
            while j > 0:
                batch.order[j] = batch.order[j - 1]
                j -= 1
            batch.order[0] = mate
        b = nodes.new_block(count, value, draw)
        for k in range(count):
            o = batch.order[k]
            nodes.set_edge(b, k, batch.moves[i * MAX_MOVES + o], batch.priors[o])
        if mate >= 0:
            nodes.set_first_mates(b)
        if cache and self.cache_on and batch.key[i]:
            nodes.cache_put(batch.key[i], b)
        return b

    @cython.cfunc
    def take(self, batch: Batch, i: cython.int, b: cython.int) -> cython.void:
        """Leaf ``i`` gets block ``b`` and its value goes up its path."""
        batch.made[i] = b
        self.attach(batch.paths, i * PATH, batch.depth[i], b, True)

    @cython.cfunc
    def attach(self, paths: cython.int[::1], at: cython.int, depth: cython.int, b: cython.int,
               in_flight: cython.bint) -> cython.void:
        """Give the leaf ``paths[at + depth]`` block ``b`` and back its value up (or the mate its first move gives)."""
        nodes: Nodes = self.nodes
        leaf: cython.int = paths[at + depth]
        child: cython.int
        nodes.block[leaf] = b
        nodes.hold_block(b)
        if nodes.first_mates(b):
            child = self.add_child(leaf, NO_NODE)
            nodes.proven[child] = WIN   # checkmate there: terminal
            nodes.plies[child] = 0
            nodes.proven[leaf] = LOSS
            nodes.plies[leaf] = 1
            self.backup(paths, at, depth, LOSS, 0.0, True, in_flight)
            return
        self.backup(paths, at, depth, -nodes.floats[b], nodes.floats[b + 1], False, in_flight)

    def abandon(self, batch: Batch) -> None:
        """Undo the visits in flight of leaves whose evaluations will not come (a search stopped meanwhile)."""
        nodes: Nodes = self.nodes
        for i in range(batch.size):
            if batch.made[i] == NO_BLOCK:
                for j in range(batch.depth[i] + 1):
                    nodes.in_flight[batch.paths[i * PATH + j]] -= 1
                self.playouts -= 1
        batch.size = 0

    # ------------------------------------------------------------------------------- a leaf, for Python

    def leaf_board(self, batch: Batch, i: int) -> chess.Board:
        """Leaf ``i``'s position as a python-chess board (no move stack)."""
        return convert.chess_board(*self.leaf_fields(batch, i))

    def leaf_moves(self, batch: Batch, i: int) -> list:
        """Leaf ``i``'s legal moves, as the board's move ids (castling: the king takes its rook)."""
        return [batch.moves[i * MAX_MOVES + k] for k in range(batch.move_count[i])]

    def leaf_fields(self, batch: Batch, i: int) -> tuple:
        """Leaf ``i``'s position as plain ints (``convert.chess_board``'s arguments): what a worker process gets."""
        at = i * FIELDS
        flags = batch.fields[at + 9]
        return (tuple(batch.fields[at + j] for j in range(8)), batch.fields[at + 8], bool(flags & 1),
                (flags >> 1) & 127, batch.fields[at + 10], batch.fields[at + 11], bool(flags >> 8 & 1))

    def stashed(self, batch: Batch, i: int) -> tuple:
        """(value, draw, priors) the network gave a leaf Python steers (its source's, for a duplicate)."""
        j = batch.source[i] if batch.source[i] >= 0 else i
        return (batch.stash_value[2 * j], batch.stash_value[2 * j + 1],
                [batch.stash[j * MAX_MOVES + k] for k in range(batch.move_count[j])])

    # ------------------------------------------------------------------------------- the root, for the probe

    def expand_root_fully(self) -> None:
        """Give the root a child for every move (the policy then never opens one)."""
        nodes: Nodes = self.nodes
        last = NO_NODE
        c = nodes.first_child[self.root]
        while c != NO_NODE:
            last = c
            c = nodes.next_sibling[c]
        while nodes.child_count[self.root] < nodes.edge_count(nodes.block[self.root]):
            last = self.add_child(self.root, last)

    def set_root_priors(self, priors: dict) -> None:
        """Give the root's moves (each a child: ``expand_root_fully``) these priors (by move id, normalised here)
        and order its moves and children by them, best first."""
        nodes: Nodes = self.nodes
        old = nodes.block[self.root]
        children = []
        c = nodes.first_child[self.root]
        while c != NO_NODE:
            children.append(c)
            c = nodes.next_sibling[c]
        total = sum(priors.values()) or 1.0
        ranked = sorted(children, key=lambda c: priors[nodes.move[c]], reverse=True)
        b = nodes.new_block(len(ranked), nodes.floats[old], nodes.floats[old + 1])
        for k, c in enumerate(ranked):
            nodes.set_edge(b, k, nodes.move[c], priors[nodes.move[c]] / total)
        nodes.hold_block(b)
        nodes.drop_block(old)
        nodes.block[self.root] = b
        for k, c in enumerate(ranked):
            nodes.next_sibling[c] = ranked[k + 1] if k + 1 < len(ranked) else NO_NODE
        nodes.first_child[self.root] = ranked[0] if ranked else NO_NODE

    # ------------------------------------------------------------------------------- RamLimitMb

    def free_given_up(self, goal: int, smallest: int, stopped: object) -> int:
        """Free the subtrees the search has given up on most (smallest share of their parent's visits first) until
        about ``goal`` visited nodes are freed, never one holding a proof a solver made or a visit in flight, nor
        one smaller than ``smallest`` visits; returns the visited nodes freed (engine/search/memory.py)."""
        nodes: Nodes = self.nodes
        candidates = []
        todo = [self.root]
        while todo:
            node = todo.pop()
            if nodes.proven[node] != UNPROVEN or nodes.first_child[node] == NO_NODE:
                continue
            most = 0   # (every child with the most visits stays: the reported line goes through one of them)
            c = nodes.first_child[node]
            while c != NO_NODE:
                most = max(most, nodes.visits[c])
                c = nodes.next_sibling[c]
            c = nodes.first_child[node]
            while c != NO_NODE:
                if nodes.visits[c] >= smallest:
                    todo.append(c)
                    if (nodes.visits[c] < most and nodes.first_child[c] != NO_NODE and not nodes.in_flight[c]
                            and nodes.proven[c] == UNPROVEN):
                        candidates.append((nodes.visits[c] / nodes.visits[node], c))
                c = nodes.next_sibling[c]
        candidates.sort()
        freed = 0
        gone = set()
        for _, c in candidates:
            if freed >= goal or stopped():
                break
            if c in gone or not self._freeable(c, gone, stopped):
                continue
            freed += nodes.free_below(c)
        self.visited -= freed
        return freed

    def _freeable(self, top: int, gone: set, stopped: object) -> bool:
        """No proof below ``top`` but finished games' (which a new visit finds again), and no stop while looking (a
        subtree can hold millions of nodes); marks what it saw."""
        nodes: Nodes = self.nodes
        todo = [top]
        seen = []
        while todo:
            node = todo.pop()
            c = nodes.first_child[node]
            while c != NO_NODE:
                if nodes.proven[c] != UNPROVEN and not self._terminal(c):
                    return False
                seen.append(c)
                if len(seen) % FREE_STOP_CHECK == 0 and stopped():
                    return False
                todo.append(c)
                c = nodes.next_sibling[c]
        gone.update(seen)
        return True

    def bytes_held(self) -> int:
        """What the tree and the cache hold: nodes, blocks and the cache's table."""
        return sum(self.nodes.bytes_held().values())

    # ------------------------------------------------------------------------------- views

    def node(self, index: int) -> Node:
        return Node(self, index)

    @property
    def root_node(self) -> Node:
        return Node(self, self.root)

    def chess_move(self, move: int) -> chess.Move:
        """A root move's id as python-chess writes it at the root."""
        return convert.chess_move(self.root_board, move)

    def chess_line(self, moves: list) -> list:
        """A line of move ids from the root as python-chess moves."""
        return convert.chess_line(self.root_board, moves)


@cython.final
@cython.cclass
class Node:
    """A view of one of ``tree``'s nodes: what the reports, the probe and the tests read of it."""

    def __init__(self, tree: Tree, index: int) -> None:
        self.tree = tree
        self.index = index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Node) and other.index == self.index and other.tree is self.tree

    def __hash__(self) -> int:
        return self.index

    def __repr__(self) -> str:
        return f"Node({self.index}, n={self.n}, q={self.q:.3f})"

    @property
    def n(self) -> int:
        return self.tree.nodes.visits[self.index]

    @property
    def w(self) -> float:
        return self.tree.nodes.value_sum[self.index]

    @property
    def d(self) -> float:
        return self.tree.nodes.draw_sum[self.index]

    @property
    def in_flight(self) -> int:
        return self.tree.nodes.in_flight[self.index]

    @property
    def proven(self):
        """WIN, DRAW or LOSS (1.0, 0.0, -1.0) for the player who moved into this node, None while unknown."""
        p = self.tree.nodes.proven[self.index]
        return None if p == UNPROVEN else float(p)

    @proven.setter
    def proven(self, value) -> None:
        self.tree.nodes.proven[self.index] = UNPROVEN if value is None else int(value)

    @property
    def plies(self) -> int:
        return self.tree.nodes.plies[self.index]

    @plies.setter
    def plies(self, value: int) -> None:
        self.tree.nodes.plies[self.index] = value

    @property
    def move(self) -> int:
        """The id of the move into this node (the board's: castling is the king taking its rook)."""
        return self.tree.nodes.move[self.index]

    @property
    def terminal(self) -> bool:
        """The game is over here (or drawn by repetition, or settled by a tablebase): nothing below it."""
        return self.tree._terminal(self.index)

    @property
    def expanded(self) -> bool:
        return self.tree.nodes.block[self.index] != NO_BLOCK

    def edge_count(self) -> int:
        b = self.tree.nodes.block[self.index]
        return self.tree.nodes.edge_count(b) if b != NO_BLOCK else 0

    def move_id(self, k: int) -> int:
        return self.tree.nodes.edge_move(self.tree.nodes.block[self.index], k)

    @property
    def moves(self):
        b = self.tree.nodes.block[self.index]
        return None if b == NO_BLOCK else [self.tree.nodes.edge_move(b, k) for k in range(self.tree.nodes.edge_count(b))]

    @property
    def priors(self) -> list:
        b = self.tree.nodes.block[self.index]
        return [] if b == NO_BLOCK else [self.tree.nodes.edge_prior(b, k) for k in range(self.tree.nodes.edge_count(b))]

    @property
    def v(self):
        """The evaluator's value here (side to move's view); None until expanded."""
        b = self.tree.nodes.block[self.index]
        return None if b == NO_BLOCK else self.tree.nodes.floats[b]

    @property
    def q(self) -> float:
        """Mean value for the player who moved into this node (its result once proven)."""
        p = self.proven
        if p is not None:
            return p
        n = self.n
        return self.w / n if n else 0.0

    @property
    def children(self) -> tuple:
        out = []
        c = self.tree.nodes.first_child[self.index]
        while c != NO_NODE:
            out.append(Node(self.tree, c))
            c = self.tree.nodes.next_sibling[c]
        return tuple(out)

    def children_visits(self) -> list:
        """The children's visits, in the order of their moves (what smart pruning reads after every batch)."""
        nodes: Nodes = self.tree.nodes
        out = []
        c = nodes.first_child[self.index]
        while c != NO_NODE:
            out.append(nodes.visits[c])
            c = nodes.next_sibling[c]
        return out

    def child(self, move: int):
        for c in self.children:
            if c.move == move:
                return c
        return None

    def visited_policy(self) -> float:
        """The prior mass of the children visited so far."""
        return sum(p for c, p in zip(self.children, self.priors) if c.n)

    def ranked_children(self, demoted=()) -> list:
        """Children from best to worst: proven wins (fastest first), then by visits and Q, then the ``demoted``
        moves (by id) the same way, proven losses last (slowest first)."""
        def rank(c: Node) -> tuple:
            p = c.proven
            if p == 1.0:
                return (3, -c.plies, 0, 0.0)
            if p == -1.0:
                return (0, c.plies, c.n, 0.0)
            return (1 if c.move in demoted else 2, 0, c.n + c.in_flight, c.q if c.n else -2.0)
        return sorted(self.children, key=rank, reverse=True)

    def principal_variation(self, max_len: int = 64) -> list:
        """Move ids of the most-visited line below this node."""
        line, node = [], self
        while len(line) < max_len:
            children = node.children
            if not children:
                break
            node = node.ranked_children()[0]
            if node.n == 0 and node.proven is None:
                break
            line.append(node.move)
        return line
