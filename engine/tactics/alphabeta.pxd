# C declarations of alphabeta.py (Cython's pure-Python mode: the .py is the source, this file its types).
cimport cython
from engine.tactics.budget cimport Budget
from engine.board.board cimport (Board, lsb, BISHOP, KING, KNIGHT, MAX_MOVES, NO_SQUARE, PAWN, QUEEN, ROOK,
                                   STACK)

cdef int MATE, MATE_BOUND, INFINITY, MAX_PLY, EXACT, LOWER, UPPER, RESCORE, QUEEN_PROMOTION_FIRST, HISTORY_LIMIT
cdef int LOSING_SLOTS, FIRST, CAPTURES, KILLERS, QUIETS, LOSING, EVASIONS, DONE
cdef unsigned long long FULL, BACK_RANKS
cdef int[::1] EXCHANGE_VALUE, VICTIMS, ATTACKERS


@cython.final
cdef class AlphaBeta(Budget):
    cdef Board board
    cdef int[::1] tables
    cdef unsigned long long[::1] table_keys
    cdef int[::1] table_moves, table_values, table_depths
    cdef unsigned long long table_mask
    cdef int[::1] killers, history, order, losing, stage, cursor, end, losing_end, first_move
    cdef int null_move_min_depth, null_move_reduction, late_move_index, late_move_min_depth
    cdef int very_late_move_index, very_late_min_depth, futility_margin, futility_depth
    cdef int[::1] late_move_pruning
    cdef int late_move_pruning_depths, delta_margin, losing_capture_slack
    cdef bint quiescence_checks, losing_captures_last

    cpdef int static(self)
    cdef int gain(self, int move) noexcept
    cdef int after(self, int score, int move)
    cdef int captures(self, int n, int least_victim, bint quiet_position, bint keep_losing) noexcept
    cdef int quiet_checks(self, int n) noexcept
    cdef void start_moves(self, int first) noexcept
    cdef void start_evasions(self, int first) noexcept
    cdef int next_move(self, int ply) noexcept
    cdef void remember_cut(self, int move, int depth, int ply) noexcept
    cdef int search(self, int depth, int alpha, int beta, int ply, int score)
    cdef int quiesce(self, int alpha, int beta, int ply, int score, bint checks)
