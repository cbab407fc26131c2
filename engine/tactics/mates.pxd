# C declarations of mates.py (Cython's pure-Python mode: the .py is the source, this file its types).
cimport cython
from engine.tactics.budget cimport Budget
from engine.board.board cimport Board, KING, MAX_MOVES, NO_SQUARE

cdef unsigned long long FULL
cdef int FAILED_BITS


@cython.final
cdef class MateSearch(Budget):
    cdef Board board
    cdef unsigned long long[::1] failed_keys
    cdef int[::1] failed_stamps, order
    cdef int stamp

    cdef unsigned long long failed_slot(self, int n) noexcept
    cdef int checks(self, int start) noexcept
    cdef int replies(self, int start) noexcept
    cpdef int mating_check(self, int n)
    cdef bint all_defences_lose(self, int n)
