# C declarations of lc0_input.py (Cython's pure-Python mode: the .py is the source, this file its types).
cimport cython
from engine.board.board cimport Board, lsb, BLACK, WHITE

cdef unsigned long long FULL, MIX, KEY_SEED, REPEATED_KEY, NO_HISTORY_KEY
cdef int HISTORY, PLANES, SQUARES, ROW, AUX, MAX_RULE50

cdef unsigned long long mix(unsigned long long h, unsigned long long x) noexcept


@cython.final
cdef class Positions:
    cdef public int capacity
    cdef public bint first_is_start
    cdef public object fill_array
    cdef unsigned long long[::1] fill
    cdef public unsigned long long fill_key
    cdef unsigned long long[::1] bitboards, castling, keys
    cdef int[::1] small
    cdef unsigned char[::1] repeated

    cdef void copy_board(self, int index, Board board, int ep) noexcept
    cdef bint same(self, int a, int b) noexcept
    cpdef bint repeats(self, int k) noexcept
    cdef void put(self, float[::1] out, int plane, unsigned long long bits, int flip) noexcept
    cdef void fill_plane(self, float[::1] out, int plane, float value) noexcept
    cdef void write(self, int k, float[::1] out, bint history) noexcept
    cpdef unsigned long long cache_key(self, int k, bint history) noexcept
