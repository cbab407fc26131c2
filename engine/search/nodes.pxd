# C declarations of nodes.py (Cython's pure-Python mode: the .py is the source, this file its types).
cimport cython

cpdef enum:
    NO_NODE = -1
    NO_BLOCK = -1
    UNPROVEN = 2
    HEAD = 3
    BLOCK_LIMIT = 256
    BUCKET = 4
cdef unsigned int MATE_FLAG, ONE_REFERENCE, MOST_REFERENCES, AGE_MASK
cdef long long MAX_UNITS
cdef double PRIOR_UNIT

cdef unsigned int encode_prior(double p) noexcept
cdef double decode_prior(unsigned int u) noexcept


@cython.final
cdef class Nodes:
    cdef public long long capacity, used, live
    cdef public int free_head
    cdef unsigned int[::1] visits
    cdef unsigned short[::1] in_flight
    cdef double[::1] value_sum, draw_sum
    cdef signed char[::1] proven
    cdef unsigned short[::1] plies, move
    cdef unsigned char[::1] child_count
    cdef int[::1] first_child, next_sibling, block
    cdef public long long arena_capacity, top, arena_live
    cdef unsigned int[::1] units
    cdef unsigned short[::1] halves
    cdef float[::1] floats
    cdef int[::1] block_free
    cdef int[::1] stack
    cdef public long long buckets, cache_count
    cdef public unsigned int clock
    cdef unsigned long long[::1] cache_keys
    cdef int[::1] cache_blocks
    cdef unsigned int[::1] cache_ages

    cpdef int new_node(self, int move) except? -1
    cpdef long long free_below(self, int top) except? -1
    cdef int push_children(self, int node, int depth)
    cdef void release(self, int i) noexcept
    cpdef clear(self)
    cpdef int new_block(self, int count, float value, float draw) except? -1
    cdef void set_edge(self, int b, int k, int move, double prior) noexcept
    cdef int edge_count(self, int b) noexcept
    cdef int edge_move(self, int b, int k) noexcept
    cdef double edge_prior(self, int b, int k) noexcept
    cdef bint first_mates(self, int b) noexcept
    cdef void set_first_mates(self, int b) noexcept
    cdef void hold_block(self, int b) noexcept
    cdef void drop_block(self, int b) noexcept
    cpdef cache_resize(self, long long entries)
    cpdef cache_clear(self)
    cdef int bucket(self, unsigned long long key) noexcept
    cpdef int cache_get(self, unsigned long long key) noexcept
    cpdef void cache_put(self, unsigned long long key, int b) noexcept
