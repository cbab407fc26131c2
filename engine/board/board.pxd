# C declarations of board.py (Cython's pure-Python mode: the .py is the source, this file its types).
cimport cython



# The constants the core's modules share (board.py gives the interpreter the same values).
cpdef enum:
    PAWN = 1
    KNIGHT = 2
    BISHOP = 3
    ROOK = 4
    QUEEN = 5
    KING = 6
    BLACK = 0
    WHITE = 1
    NO_SQUARE = 64
    STACK = 256
    MAX_MOVES = 256
    EARLIER = 128
    EN_PASSANT = 16
    CASTLED = 32

cdef unsigned long long FULL, FILE_A, FILE_H, RANK_1, RANK_8, BACK_RANKS, DARK_SQUARES, DEBRUIJN
cdef unsigned long long[::1] KNIGHT_ATTACKS, KING_ATTACKS, PAWN_ATTACKS, BETWEEN
cdef unsigned long long[::1] ROOK_MASK, ROOK_MAGIC, ROOK_TABLE, BISHOP_MASK, BISHOP_MAGIC, BISHOP_TABLE
cdef int[::1] ROOK_SHIFT, ROOK_OFFSET, BISHOP_SHIFT, BISHOP_OFFSET, LSB_INDEX
cdef unsigned long long[::1] PIECE_KEYS, CASTLING_KEYS, EP_KEYS
cdef unsigned long long SIDE_KEY
cdef bint TABLES_READY

cpdef int lsb(unsigned long long b) noexcept
cpdef int popcount(unsigned long long b) noexcept
cpdef unsigned long long rook_attacks(int square, unsigned long long occupied) noexcept
cpdef unsigned long long bishop_attacks(int square, unsigned long long occupied) noexcept
cpdef unsigned long long attacks_of(int piece_type, int color, int square, unsigned long long occupied) noexcept


@cython.final
cdef class Board:
    cdef public unsigned long long[::1] by_type, by_color, check_squares, keys, undo_castling
    cdef public signed char[::1] squares
    cdef public int[::1] moves, undo_move, undo_captured, undo_ep, undo_halfmove, undo_reversible
    cdef public unsigned long long occupied, castling, key
    cdef public int turn, ep, halfmove, reversible, ply, base
    cdef public bint chess960

    cdef void put(self, int square, int piece) noexcept
    cdef void remove(self, int square) noexcept
    cdef unsigned long long attackers(self, int square, unsigned long long occupied) noexcept
    cdef bint attacked_by(self, int color, int square, unsigned long long occupied) noexcept
    cdef int king_square(self, int color) noexcept
    cpdef bint in_check(self) noexcept
    cpdef bint left_in_check(self) noexcept
    cdef bint ep_capture_is_legal(self, int ep) noexcept
    cpdef bint ep_would_be_attacked(self, int ep) noexcept
    cdef void make(self, int move) noexcept
    cdef void unmake(self) noexcept
    cdef int add_moves(self, int n, int frm, unsigned long long targets) noexcept
    cdef int add_pawn_move(self, int n, int frm, int to) noexcept
    cpdef int generate_moves(self, int n, unsigned long long from_mask, unsigned long long to_mask) noexcept
    cpdef unsigned long long en_passant_capturers(self) noexcept
    cpdef int generate_captures(self, int n) noexcept
    cpdef int generate_quiets(self, int n) noexcept
    cpdef int generate_castling(self, int n) noexcept
    cdef bint castling_is_legal(self, int rook) noexcept
    cpdef int generate_legal(self, int n) noexcept
    cpdef bint is_pseudo_legal(self, int move) noexcept
    cpdef bint is_capture(self, int move) noexcept
    cpdef bint is_castling(self, int move) noexcept
    cpdef bint gives_check(self, int move) noexcept
    cpdef bint find_check_squares(self) noexcept
    cpdef unsigned long long discoverers(self) noexcept
    cpdef bint is_repetition(self) noexcept
    cpdef bint is_insufficient_material(self) noexcept
    cdef bint has_insufficient_material(self, int color) noexcept
    cdef long long count_sequences(self, int depth)
