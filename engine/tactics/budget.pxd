# C declarations of budget.py (Cython's pure-Python mode: the .py is the source, this file its types).
cdef int CLOCK_EVERY


cdef class Budget:
    cdef public long long nodes
    cdef long long max_nodes
    cdef double deadline, yield_every, last_yield
    cdef object stopped, clock
    cdef public bint aborted

    cdef bint tick(self)
