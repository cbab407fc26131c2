# C declarations of tree.py (Cython's pure-Python mode: the .py is the source, this file its types).
cimport cython
from libc.math cimport floor, ldexp, log, sqrt
from engine.board.board cimport Board, popcount, BLACK, MAX_MOVES, NO_SQUARE, PAWN, WHITE
from engine.evaluators.lc0_input cimport Positions
from engine.search.nodes cimport Nodes, NO_BLOCK, NO_NODE, UNPROVEN

cpdef enum:
    WIN = 1
    DRAW = 0
    LOSS = -1
    TB_PLIES = 10000
    MAX_DEPTH = 240
    PATH = 242
    FIELDS = 12
    ROW = 7168
    STEER = 1
cdef double AVOID, NEVER, LN2_INV, EXP_C1, EXP_C2, MOST_FORCING
cdef int MOVE_IDS

cdef double fast_exp(double x) noexcept


@cython.final
cdef class Batch:
    cdef public int capacity, size, rows, collided, steer_count
    cdef int[::1] node, depth, paths, collided_depth, collided_paths, moves, move_count, mate, row, source, flags, made
    cdef int[::1] order
    cdef unsigned char[::1] forcing
    cdef unsigned long long[::1] key, fields
    cdef double[::1] priors, stash, stash_value
    cdef public object planes_array
    cdef float[::1] planes


@cython.final
cdef class Tree:
    cdef public Nodes nodes
    cdef public Board board, scratch
    cdef public Positions positions
    cdef int[::1] path, root_allowed
    cdef public int root_allowed_count, root_index, root
    cdef public long long visited
    cdef public bint restricted, uct, history, cache_on, steer_root
    cdef public double cpuct, cpuct_base, cpuct_factor, fpu_reduction, uct_c
    cdef public int tb_pieces
    cdef public object tablebase
    cdef public long long tb_hits, playouts, depth_sum, seldepth
    cdef public long long root_fullmove
    cdef public object start_key, game_moves, states, zobrist, made_with, root_board

    cdef int _child(self, int node, int move)
    cdef bint _terminal(self, int node)
    cdef int add_child(self, int node, int last)
    cdef int select(self, int node)
    cpdef double exploration(self, int node)
    cdef int select_uct(self, int node)
    cdef int descend(self)
    cdef void unwind(self, int depth) noexcept
    cdef void count(self, int depth) noexcept
    cdef void backup(self, int[::1] paths, int at, int depth, double value, double draw, bint proven_changed,
                     bint in_flight) noexcept
    cpdef bint prove(self, int node) noexcept
    cdef int gather_c(self, Batch batch, int room, long long playout_limit, int collisions)
    cdef bint visit_new(self, Batch batch, int depth)
    cdef int keep_allowed(self, int start, int end)
    cdef void look_at_moves(self, Batch batch, int i)
    cdef void write_fields(self, Batch batch, int i, int depth)
    cdef bint states_turn_white(self)
    cdef void finish_c(self, Batch batch, float[::1] policy, int width, double[::1] values, double[::1] draws,
                       int[::1] columns, double temperature, double floor)
    cdef void raise_forcing(self, Batch batch, int i, double floor)
    cdef int make_block(self, Batch batch, int i, double value, double draw, bint cache)
    cdef void take(self, Batch batch, int i, int b)
    cdef void attach(self, int[::1] paths, int at, int depth, int b, bint in_flight)


@cython.final
cdef class Node:
    cdef public Tree tree
    cdef public int index
