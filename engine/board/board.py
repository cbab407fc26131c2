# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The compiled board: bitboards, pseudo-legal move generation by stage, make and unmake, check detection and
repetition keys, for a search that makes and unmakes millions of moves in positions it never shows anyone.

python-chess stays the rules library everywhere else; this board exists because the probe spends its whole life
making and unmaking moves, and python-chess's objects cost it twenty times a compiled board's time. It is written
in Cython's pure-Python mode: compiled at install (``board.pxd`` holds the C declarations), the same code run by the
interpreter where nothing could compile it. So every shift left and every product is masked to 64 bits (free in C,
needed for Python's unbounded ints), and module-level constants are declared with C types.

A move is an int, ``from | to << 6 | promotion << 12``, as the tree's move ids, except castling, which is always
the king taking its own rook (Chess960's form, for standard chess too); ``engine/tactics/__init__.py`` converts at
the edge. Squares and colours are python-chess's (a1 = 0, White = 1); a piece on the board is its type (pawn 1 to
king 6) plus 8 for White. Results are the same, node for node, compiled or interpreted (tests/test_tactics_core.py).
"""

from __future__ import annotations

from array import array
from typing import Sequence

try:
    import cython
except ImportError:
    from .. import cython_shim as cython

COMPILED = cython.compiled   # this module runs compiled (core.py reports it)

Bitboard = cython.typedef(cython.ulonglong)

if not cython.compiled:   # compiled, these are C constants: board.pxd declares the same values
    PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING = 1, 2, 3, 4, 5, 6
    BLACK, WHITE = 0, 1
    NO_SQUARE = 64
    STACK = 256       # deepest stack of made moves (the tree stops at MAX_DEPTH below it, the probe well short)
    MAX_MOVES = 256   # a position has at most 218 legal moves; 256 slots a ply
    EARLIER = 128     # positions before the root kept for repetitions (the 50-move rule's)
    # What ``undo_captured`` keeps besides the piece taken: the capture was en passant, or the move castled.
    EN_PASSANT = 16
    CASTLED = 32

FULL = cython.declare(Bitboard, 0xFFFF_FFFF_FFFF_FFFF)
FILE_A = cython.declare(Bitboard, 0x0101_0101_0101_0101)
FILE_H = cython.declare(Bitboard, 0x8080_8080_8080_8080)
RANK_1 = cython.declare(Bitboard, 0xFF)
RANK_8 = cython.declare(Bitboard, 0xFF00_0000_0000_0000)
BACK_RANKS = cython.declare(Bitboard, 0xFF00_0000_0000_00FF)
DARK_SQUARES = cython.declare(Bitboard, 0xAA55_AA55_AA55_AA55)
DEBRUIJN = cython.declare(Bitboard, 0x03F7_9D71_B4CB_0A89)

# Magic multipliers for the sliders' attack tables (Pradyumna Kannan's "fancy" magics: each maps the blockers on a
# square's lines to a slot of its own), found by a random search over sparse 64-bit numbers; init_tables() checks
# every one and raises if two blocker sets that attack differently would share a slot.
ROOK_MAGICS = (
    0x2080002080400010, 0x00C0002001401000, 0x2100110008402002, 0x0880080081041000, 0x0200020020041008,
    0x2300040008010012, 0x0C00283004008201, 0x0180010000407A80, 0x0168800080400020, 0x0010400040201000,
    0x1001002001001048, 0x1001002408100100, 0x0801000408010012, 0x4001000209000400, 0x08A20004C8020001,
    0x2002801145002280, 0x0080860021004200, 0x001000C009402002, 0x00B0002004002800, 0x100A808010020800,
    0x8101010008000410, 0x0244008002000480, 0x0000040010810208, 0x2000020000448534, 0x4104400480008033,
    0x0000810100204000, 0x0440430900200010, 0x4600240900100100, 0x0060080080040080, 0x0001000300080400,
    0x0004084400011002, 0x0023040200008041, 0x0580050043002080, 0x0400804002802008, 0x0001002001004010,
    0x1000200901001000, 0x4410800801800C00, 0xA012003806001004, 0x0020100104008802, 0x0004808402000041,
    0x0010400170898000, 0x0080500020004004, 0x1040408012020020, 0x8010040008004040, 0x2001080100110004,
    0x0000020004008080, 0x0021010810040002, 0x0800008C43020024, 0x0000800021005100, 0x0070201040008080,
    0x0000D04282006A00, 0x0010014400080240, 0x0001080110050100, 0x0012000810240600, 0x0402000801040200,
    0x028100108A004100, 0x0050800300102045, 0x8208210040120882, 0x8010600101183441, 0x020B000910006045,
    0x0241001002480005, 0x0081000400880241, 0x0000009008024124, 0x0048122980410402)
BISHOP_MAGICS = (
    0x0848020822040013, 0x8010A40085821200, 0x0008008430840822, 0x0808048108040000, 0x1304042100008104,
    0x5001012010204023, 0x81048801B8200420, 0x200A008084012000, 0x0040102001042084, 0x840A505042428020,
    0x0000700102202920, 0x44101C0C10800002, 0x0040040422000000, 0x0180020802090202, 0x4020020811041202,
    0x000104308C042000, 0x4140661002424400, 0x0028012008010460, 0x0188062102002A00, 0x0014004840102008,
    0x0105000290400002, 0x8001022200410400, 0x104A041918013446, 0x008A000082008238, 0x04A0060008100430,
    0x0008220008820801, 0x2508041208005010, 0x4008080200202020, 0x2441001013004000, 0x0030008060407000,
    0x4008108000420800, 0x0012021050290100, 0x0210080482200500, 0xCC01112048100480, 0x0020402806500440,
    0x00048E0080580080, 0x0040102020020080, 0x0028010440080807, 0x4601041108008800, 0x8040810E04104200,
    0x901210110400088A, 0xA003080212081050, 0x00C1004048401004, 0x900000A014400800, 0x0008021040405401,
    0x4020008206002090, 0x0004190424030100, 0x0424008A02026250, 0x8004088250900040, 0x1C00430088A04200,
    0x0001020094040001, 0x8040210020880061, 0x2010040450442032, 0x0800840850044001, 0x0004040802140004,
    0x0004080A04222020, 0x8088802110022000, 0x1081A10416114400, 0x0205010A24060820, 0x0000000720411080,
    0x1008000208430400, 0x580C026028810840, 0x802020441020A110, 0x12C0022401020018)
ROOK_DIRECTIONS = ((1, 0), (-1, 0), (0, 1), (0, -1))      # (rank step, file step)
BISHOP_DIRECTIONS = ((1, 1), (1, -1), (-1, 1), (-1, -1))
KNIGHT_STEPS = ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2))
KING_STEPS = ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1))
ZOBRIST_SEED = 0x5EED_A4B0_4C0F_FEE5

# The tables, filled once by init_tables() (the first Board does it): attacks by square, the squares between two
# squares, and the Zobrist keys of the position's parts.
KNIGHT_ATTACKS = cython.declare(Bitboard[::1], array("Q", bytes(8 * 64)))
KING_ATTACKS = cython.declare(Bitboard[::1], array("Q", bytes(8 * 64)))
PAWN_ATTACKS = cython.declare(Bitboard[::1], array("Q", bytes(8 * 128)))    # [colour * 64 + square]
BETWEEN = cython.declare(Bitboard[::1], array("Q", bytes(8 * 4096)))        # [a * 64 + b], neither end included
ROOK_MASK = cython.declare(Bitboard[::1], array("Q", bytes(8 * 64)))
ROOK_MAGIC = cython.declare(Bitboard[::1], array("Q", bytes(8 * 64)))
ROOK_SHIFT = cython.declare(cython.int[::1], array("i", bytes(4 * 64)))
ROOK_OFFSET = cython.declare(cython.int[::1], array("i", bytes(4 * 64)))
ROOK_TABLE = cython.declare(Bitboard[::1], array("Q", bytes(8 * 102400)))
BISHOP_MASK = cython.declare(Bitboard[::1], array("Q", bytes(8 * 64)))
BISHOP_MAGIC = cython.declare(Bitboard[::1], array("Q", bytes(8 * 64)))
BISHOP_SHIFT = cython.declare(cython.int[::1], array("i", bytes(4 * 64)))
BISHOP_OFFSET = cython.declare(cython.int[::1], array("i", bytes(4 * 64)))
BISHOP_TABLE = cython.declare(Bitboard[::1], array("Q", bytes(8 * 5248)))
LSB_INDEX = cython.declare(cython.int[::1], array("i", bytes(4 * 64)))
PIECE_KEYS = cython.declare(Bitboard[::1], array("Q", bytes(8 * 16 * 64)))  # [piece * 64 + square]
CASTLING_KEYS = cython.declare(Bitboard[::1], array("Q", bytes(8 * 64)))     # by the castling rook's square
EP_KEYS = cython.declare(Bitboard[::1], array("Q", bytes(8 * 8)))            # by the en passant file
SIDE_KEY = cython.declare(Bitboard, 0)
TABLES_READY = cython.declare(cython.bint, False)


# ----------------------------------------------------------------------------------------- bit tricks

@cython.ccall
@cython.exceptval(check=False)
def lsb(b: Bitboard) -> cython.int:
    """The lowest set square of a non-empty bitboard (de Bruijn multiplication: no compiler intrinsic needed)."""
    return LSB_INDEX[(((b & -b) * DEBRUIJN) & FULL) >> 58]


@cython.ccall
@cython.exceptval(check=False)
def popcount(b: Bitboard) -> cython.int:
    n: cython.int = 0
    while b:
        b &= b - 1
        n += 1
    return n


@cython.ccall
@cython.exceptval(check=False)
def rook_attacks(square: cython.int, occupied: Bitboard) -> Bitboard:
    return ROOK_TABLE[ROOK_OFFSET[square]
                      + ((((occupied & ROOK_MASK[square]) * ROOK_MAGIC[square]) & FULL) >> ROOK_SHIFT[square])]


@cython.ccall
@cython.exceptval(check=False)
def bishop_attacks(square: cython.int, occupied: Bitboard) -> Bitboard:
    return BISHOP_TABLE[BISHOP_OFFSET[square]
                        + ((((occupied & BISHOP_MASK[square]) * BISHOP_MAGIC[square]) & FULL) >> BISHOP_SHIFT[square])]


@cython.ccall
@cython.exceptval(check=False)
def attacks_of(piece_type: cython.int, color: cython.int, square: cython.int, occupied: Bitboard) -> Bitboard:
    """The squares a piece attacks from ``square`` with ``occupied`` blocking its lines."""
    if piece_type == PAWN:
        return PAWN_ATTACKS[color * 64 + square]
    if piece_type == KNIGHT:
        return KNIGHT_ATTACKS[square]
    if piece_type == BISHOP:
        return bishop_attacks(square, occupied)
    if piece_type == ROOK:
        return rook_attacks(square, occupied)
    if piece_type == QUEEN:
        return bishop_attacks(square, occupied) | rook_attacks(square, occupied)
    return KING_ATTACKS[square]


# ----------------------------------------------------------------------------------------- the tables

def _on_board(rank: int, file: int) -> bool:
    return 0 <= rank < 8 and 0 <= file < 8


def _slide(square: int, occupied: int, directions: tuple) -> int:
    """A slider's attacks from ``square``, walked ray by ray (only to fill the tables)."""
    attacks = 0
    for dr, df in directions:
        rank, file = square // 8 + dr, square % 8 + df
        while _on_board(rank, file):
            attacks |= 1 << (rank * 8 + file)
            if occupied >> (rank * 8 + file) & 1:
                break
            rank, file = rank + dr, file + df
    return attacks


def _relevant(square: int, directions: tuple) -> int:
    """The squares whose occupancy can block a slider on ``square``: its lines without their last squares."""
    mask = 0
    for dr, df in directions:
        rank, file = square // 8 + dr, square % 8 + df
        while _on_board(rank + dr, file + df):
            mask |= 1 << (rank * 8 + file)
            rank, file = rank + dr, file + df
    return mask


def _fill_magics(directions: tuple, magics: tuple, masks, shifts, offsets, table) -> None:
    offset = 0
    for square in range(64):
        mask = _relevant(square, directions)
        bits = bin(mask).count("1")
        masks[square], shifts[square], offsets[square] = mask, 64 - bits, offset
        filled = {}
        subset = 0
        while True:   # every subset of the mask (the carry-rippler)
            slot = ((subset * magics[square]) & 0xFFFF_FFFF_FFFF_FFFF) >> (64 - bits)
            attacks = _slide(square, subset, directions)
            if filled.setdefault(slot, attacks) != attacks:
                raise ValueError(f"the magic of square {square} maps two blocker sets to slot {slot}")
            table[offset + slot] = attacks
            subset = (subset - mask) & mask
            if not subset:
                break
        offset += 1 << bits


def init_tables() -> None:
    """Fill the attack tables and the Zobrist keys (a tenth of a second compiled, two interpreted)."""
    global SIDE_KEY, TABLES_READY
    if TABLES_READY:
        return
    for i in range(64):
        LSB_INDEX[(((1 << i) * 0x03F79D71B4CB0A89) & 0xFFFF_FFFF_FFFF_FFFF) >> 58] = i
    for square in range(64):
        rank, file = square // 8, square % 8
        knight = king = 0
        for dr, df in KNIGHT_STEPS:
            if _on_board(rank + dr, file + df):
                knight |= 1 << ((rank + dr) * 8 + file + df)
        for dr, df in KING_STEPS:
            if _on_board(rank + dr, file + df):
                king |= 1 << ((rank + dr) * 8 + file + df)
        KNIGHT_ATTACKS[square], KING_ATTACKS[square] = knight, king
        for color, dr in ((WHITE, 1), (BLACK, -1)):
            pawn = 0
            for df in (-1, 1):
                if _on_board(rank + dr, file + df):
                    pawn |= 1 << ((rank + dr) * 8 + file + df)
            PAWN_ATTACKS[color * 64 + square] = pawn
    for a in range(64):
        for dr, df in ROOK_DIRECTIONS + BISHOP_DIRECTIONS:
            rank, file, between = a // 8 + dr, a % 8 + df, 0
            while _on_board(rank, file):
                BETWEEN[a * 64 + rank * 8 + file] = between
                between |= 1 << (rank * 8 + file)
                rank, file = rank + dr, file + df
    _fill_magics(ROOK_DIRECTIONS, ROOK_MAGICS, ROOK_MASK, ROOK_SHIFT, ROOK_OFFSET, ROOK_TABLE)
    _fill_magics(BISHOP_DIRECTIONS, BISHOP_MAGICS, BISHOP_MASK, BISHOP_SHIFT, BISHOP_OFFSET, BISHOP_TABLE)
    for square in range(64):
        ROOK_MAGIC[square], BISHOP_MAGIC[square] = ROOK_MAGICS[square], BISHOP_MAGICS[square]
    state = ZOBRIST_SEED   # splitmix64: the same keys in every process and on every machine
    keys = []
    for _ in range(16 * 64 + 64 + 8 + 1):
        state = (state + 0x9E37_79B9_7F4A_7C15) & 0xFFFF_FFFF_FFFF_FFFF
        z = ((state ^ (state >> 30)) * 0xBF58_476D_1CE4_E5B9) & 0xFFFF_FFFF_FFFF_FFFF
        z = ((z ^ (z >> 27)) * 0x94D0_49BB_1331_11EB) & 0xFFFF_FFFF_FFFF_FFFF
        keys.append(z ^ (z >> 31))
    for i in range(16 * 64):
        PIECE_KEYS[i] = keys[i]
    for i in range(64):
        CASTLING_KEYS[i] = keys[16 * 64 + i]
    for i in range(8):
        EP_KEYS[i] = keys[16 * 64 + 64 + i]
    SIDE_KEY = keys[16 * 64 + 64 + 8]
    TABLES_READY = True


# ----------------------------------------------------------------------------------------- the board

@cython.final
@cython.cclass
class Board:
    """A position and the stack of moves made from it. ``setup`` places a position; ``make`` and ``unmake`` play
    and take back moves (pseudo-legal ones: ``left_in_check`` then says whether the move was legal); the
    ``generate_*`` methods write moves into ``moves`` from a given index and return the index after the last.

    ``key`` is the position's Zobrist key: pieces, side to move, castling rights (by rook square) and the en
    passant file, the last only where an en passant capture is legal, as python-chess and the tree count
    positions the same. ``keys`` holds the keys of the positions before the root (``setup``'s ``earlier``), then
    the root's and each made move's, for repetitions."""

    def __init__(self) -> None:
        init_tables()
        self.by_type = array("Q", bytes(8 * 7))      # [piece type], both colours; [0] unused
        self.by_color = array("Q", bytes(8 * 2))
        self.squares = array("b", bytes(64))
        self.moves = array("i", bytes(4 * STACK * MAX_MOVES))
        self.undo_move = array("i", bytes(4 * STACK))
        self.undo_captured = array("i", bytes(4 * STACK))
        self.undo_castling = array("Q", bytes(8 * STACK))
        self.undo_ep = array("i", bytes(4 * STACK))
        self.undo_halfmove = array("i", bytes(4 * STACK))
        self.undo_reversible = array("i", bytes(4 * STACK))
        self.keys = array("Q", bytes(8 * (EARLIER + STACK + 1)))
        self.check_squares = array("Q", bytes(8 * 8 * STACK))   # [ply * 8 + piece type]
        self.occupied = 0
        self.turn = WHITE
        self.ep = NO_SQUARE
        self.castling = 0
        self.halfmove = 0
        self.reversible = 0
        self.ply = 0
        self.base = 0
        self.key = 0
        self.chess960 = False

    # ------------------------------------------------------------------------------- setting up

    def setup(self, white: int, pawns: int, knights: int, bishops: int, rooks: int, queens: int, kings: int,
              turn: bool, castling: int, ep: int, halfmove: int, chess960: bool, earlier: Sequence[int] = ()) -> None:
        """Place a position: python-chess's bitboards (``white``: White's pieces), its cleaned castling rights
        (rook squares), ``ep`` (a square, or ``NO_SQUARE``), and ``earlier``, the keys of positions that reaching
        again counts as a repetition (those since the last irreversible move; only the last ``EARLIER`` are kept)."""
        piece_type: cython.int
        square: cython.int
        bb: Bitboard
        self.ply = 0
        self.occupied = 0
        self.key = 0
        for square in range(64):
            self.squares[square] = 0
        for piece_type in range(7):
            self.by_type[piece_type] = 0
        self.by_color[0] = self.by_color[1] = 0
        for piece_type, bb in ((PAWN, pawns), (KNIGHT, knights), (BISHOP, bishops), (ROOK, rooks),
                               (QUEEN, queens), (KING, kings)):
            while bb:
                square = lsb(bb)
                bb &= bb - 1
                self.put(square, piece_type + 8 * (white >> square & 1))
        self.turn = WHITE if turn else BLACK
        if not self.turn:
            self.key ^= SIDE_KEY
        self.castling = castling
        bb = castling
        while bb:
            self.key ^= CASTLING_KEYS[lsb(bb)]
            bb &= bb - 1
        self.ep = NO_SQUARE
        if ep != NO_SQUARE and self.ep_capture_is_legal(ep):
            self.ep = ep
            self.key ^= EP_KEYS[ep & 7]
        self.halfmove = halfmove
        self.chess960 = chess960
        earlier = list(earlier)[-EARLIER:]
        self.base = len(earlier)
        for square in range(self.base):
            self.keys[square] = earlier[square]
        self.keys[self.base] = self.key
        self.reversible = self.base

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def put(self, square: cython.int, piece: cython.int) -> cython.void:
        bb: Bitboard = cython.cast(Bitboard, 1) << square
        self.squares[square] = piece
        self.by_type[piece & 7] |= bb
        self.by_color[piece >> 3] |= bb
        self.occupied |= bb
        self.key ^= PIECE_KEYS[piece * 64 + square]

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def remove(self, square: cython.int) -> cython.void:
        piece: cython.int = self.squares[square]
        bb: Bitboard = cython.cast(Bitboard, 1) << square
        self.squares[square] = 0
        self.by_type[piece & 7] ^= bb
        self.by_color[piece >> 3] ^= bb
        self.occupied ^= bb
        self.key ^= PIECE_KEYS[piece * 64 + square]

    # ------------------------------------------------------------------------------- attacks

    @cython.cfunc
    @cython.exceptval(check=False)
    def attackers(self, square: cython.int, occupied: Bitboard) -> Bitboard:
        """Pieces of both colours that attack ``square``, with ``occupied`` blocking the sliders' lines."""
        straight: Bitboard = self.by_type[ROOK] | self.by_type[QUEEN]
        diagonal: Bitboard = self.by_type[BISHOP] | self.by_type[QUEEN]
        return ((rook_attacks(square, occupied) & straight) | (bishop_attacks(square, occupied) & diagonal)
                | (KNIGHT_ATTACKS[square] & self.by_type[KNIGHT]) | (KING_ATTACKS[square] & self.by_type[KING])
                | (PAWN_ATTACKS[WHITE * 64 + square] & self.by_type[PAWN] & self.by_color[BLACK])
                | (PAWN_ATTACKS[BLACK * 64 + square] & self.by_type[PAWN] & self.by_color[WHITE])) & occupied

    @cython.cfunc
    @cython.exceptval(check=False)
    def attacked_by(self, color: cython.int, square: cython.int, occupied: Bitboard) -> cython.bint:
        them: Bitboard = self.by_color[color]
        if PAWN_ATTACKS[(color ^ 1) * 64 + square] & self.by_type[PAWN] & them:
            return True
        if KNIGHT_ATTACKS[square] & self.by_type[KNIGHT] & them or KING_ATTACKS[square] & self.by_type[KING] & them:
            return True
        if rook_attacks(square, occupied) & (self.by_type[ROOK] | self.by_type[QUEEN]) & them & occupied:
            return True
        return (bishop_attacks(square, occupied) & (self.by_type[BISHOP] | self.by_type[QUEEN]) & them
                & occupied) != 0

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def king_square(self, color: cython.int) -> cython.int:
        kings: Bitboard = self.by_type[KING] & self.by_color[color]
        return lsb(kings) if kings else NO_SQUARE

    @cython.ccall
    @cython.exceptval(check=False)
    def in_check(self) -> cython.bint:
        """The side to move is in check."""
        king: cython.int = self.king_square(self.turn)
        return king != NO_SQUARE and self.attacked_by(self.turn ^ 1, king, self.occupied)

    @cython.ccall
    @cython.exceptval(check=False)
    def left_in_check(self) -> cython.bint:
        """The side that has just moved left its king attacked: the move was not legal."""
        king: cython.int = self.king_square(self.turn ^ 1)
        return king != NO_SQUARE and self.attacked_by(self.turn, king, self.occupied)

    @cython.cfunc
    @cython.exceptval(check=False)
    def ep_capture_is_legal(self, ep: cython.int) -> cython.bint:
        """A pawn of the side to move can take en passant on ``ep`` without leaving its king attacked."""
        us: cython.int = self.turn
        captured: Bitboard = cython.cast(Bitboard, 1) << (ep - 8 if us == WHITE else ep + 8)
        pawns: Bitboard = PAWN_ATTACKS[(us ^ 1) * 64 + ep] & self.by_type[PAWN] & self.by_color[us]
        king: cython.int = self.king_square(us)
        occupied: Bitboard
        if self.occupied >> ep & 1:
            return False
        while pawns:
            occupied = (self.occupied ^ (pawns & -pawns) ^ captured) | (cython.cast(Bitboard, 1) << ep)
            if king == NO_SQUARE or not (self.attackers(king, occupied) & self.by_color[us ^ 1] & ~captured):
                return True
            pawns &= pawns - 1
        return False

    @cython.ccall
    @cython.exceptval(check=False)
    def ep_would_be_attacked(self, ep: cython.int) -> cython.bint:
        """A pawn of the side to move attacks the empty square ``ep`` (lc0's en passant flag, legal or not)."""
        return (PAWN_ATTACKS[(self.turn ^ 1) * 64 + ep] & self.by_type[PAWN] & self.by_color[self.turn]) != 0

    # ------------------------------------------------------------------------------- making moves

    @cython.cfunc
    @cython.exceptval(check=False)
    def make(self, move: cython.int) -> cython.void:
        """Play a pseudo-legal move (0: pass, as a null move does)."""
        us: cython.int = self.turn
        frm: cython.int = move & 63
        to: cython.int = (move >> 6) & 63
        promotion: cython.int = move >> 12
        piece: cython.int = self.squares[frm]
        captured: cython.int = self.squares[to]
        ply: cython.int = self.ply
        castling: Bitboard = self.castling
        changed: Bitboard
        back: cython.int = 0 if us == WHITE else 56
        self.undo_move[ply] = move
        self.undo_castling[ply] = castling
        self.undo_ep[ply] = self.ep
        self.undo_halfmove[ply] = self.halfmove
        self.undo_reversible[ply] = self.reversible
        self.key ^= SIDE_KEY
        if self.ep != NO_SQUARE:
            self.key ^= EP_KEYS[self.ep & 7]
        self.ep = NO_SQUARE
        self.halfmove += 1
        self.reversible += 1
        if move == 0:
            self.undo_captured[ply] = 0
            self.reversible = 0   # repetitions are not counted across a pass
        elif captured and (captured >> 3) == us:   # the king takes its own rook: castling
            self.undo_captured[ply] = CASTLED
            self.remove(frm)
            self.remove(to)
            self.put(back + 6 if to > frm else back + 2, piece)
            self.put(back + 5 if to > frm else back + 3, captured)
            castling &= ~(RANK_1 if us == WHITE else RANK_8)
        else:
            if captured:
                self.remove(to)
                self.halfmove = self.reversible = 0
            elif (piece & 7) == PAWN and (frm ^ to) & 7:   # a pawn's diagonal step onto an empty square
                captured = PAWN + 8 * (us ^ 1) + EN_PASSANT
                self.remove(to - 8 if us == WHITE else to + 8)
            self.undo_captured[ply] = captured
            self.remove(frm)
            self.put(to, promotion + 8 * us if promotion else piece)
            if (piece & 7) == PAWN:
                self.halfmove = self.reversible = 0
            elif (piece & 7) == KING:
                castling &= ~(RANK_1 if us == WHITE else RANK_8)
            castling &= ~((cython.cast(Bitboard, 1) << frm) | (cython.cast(Bitboard, 1) << to))
        changed = castling ^ self.castling
        while changed:
            self.key ^= CASTLING_KEYS[lsb(changed)]
            changed &= changed - 1
        self.castling = castling
        self.turn = us ^ 1
        self.ply = ply + 1
        if (piece & 7) == PAWN and (frm ^ to) == 16 and move != 0 and self.ep_capture_is_legal((frm + to) >> 1):
            self.ep = (frm + to) >> 1
            self.key ^= EP_KEYS[self.ep & 7]
        self.keys[self.base + self.ply] = self.key

    @cython.cfunc
    @cython.exceptval(check=False)
    def unmake(self) -> cython.void:
        """Take back the last move ``make`` played."""
        ply: cython.int = self.ply - 1
        move: cython.int = self.undo_move[ply]
        frm: cython.int = move & 63
        to: cython.int = (move >> 6) & 63
        us: cython.int = self.turn ^ 1
        captured: cython.int = self.undo_captured[ply]
        back: cython.int = 0 if us == WHITE else 56
        piece: cython.int
        if move == 0:
            pass
        elif captured == CASTLED:
            self.remove(back + 6 if to > frm else back + 2)
            self.remove(back + 5 if to > frm else back + 3)
            self.put(frm, KING + 8 * us)
            self.put(to, ROOK + 8 * us)
        else:
            piece = self.squares[to]
            self.remove(to)
            self.put(frm, PAWN + 8 * us if move >> 12 else piece)
            if captured & EN_PASSANT:
                self.put(to - 8 if us == WHITE else to + 8, captured ^ EN_PASSANT)
            elif captured:
                self.put(to, captured)
        self.ply = ply
        self.turn = us
        self.castling = self.undo_castling[ply]
        self.ep = self.undo_ep[ply]
        self.halfmove = self.undo_halfmove[ply]
        self.reversible = self.undo_reversible[ply]
        self.key = self.keys[self.base + ply]

    # ------------------------------------------------------------------------------- move generation

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def add_moves(self, n: cython.int, frm: cython.int, targets: Bitboard) -> cython.int:
        while targets:
            self.moves[n] = frm | lsb(targets) << 6
            n += 1
            targets &= targets - 1
        return n

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def add_pawn_move(self, n: cython.int, frm: cython.int, to: cython.int) -> cython.int:
        """A pawn's move, or its four promotions on the last rank (queen first)."""
        if to < 8 or to >= 56:
            self.moves[n] = frm | to << 6 | QUEEN << 12
            self.moves[n + 1] = frm | to << 6 | ROOK << 12
            self.moves[n + 2] = frm | to << 6 | BISHOP << 12
            self.moves[n + 3] = frm | to << 6 | KNIGHT << 12
            return n + 4
        self.moves[n] = frm | to << 6
        return n + 1

    @cython.ccall
    @cython.exceptval(check=False)
    def generate_moves(self, n: cython.int, from_mask: Bitboard, to_mask: Bitboard) -> cython.int:
        """Write the pseudo-legal moves of the side to move's pieces on ``from_mask`` to squares of ``to_mask`` into
        ``moves`` from index ``n``, castling left out (``generate_castling``); return the index after the last.
        Pieces by square, their targets by square; a pawn's captures (en passant last), then its pushes."""
        us: cython.int = self.turn
        own: Bitboard = self.by_color[us]
        enemies: Bitboard = self.by_color[us ^ 1]
        occupied: Bitboard = self.occupied
        pieces: Bitboard = own & ~self.by_type[PAWN] & from_mask
        pawns: Bitboard = own & self.by_type[PAWN] & from_mask
        empty: Bitboard = ~occupied & to_mask
        frm: cython.int
        to: cython.int
        targets: Bitboard
        single: Bitboard
        double: Bitboard
        while pieces:
            frm = lsb(pieces)
            pieces &= pieces - 1
            n = self.add_moves(n, frm, attacks_of(self.squares[frm] & 7, us, frm, occupied) & ~own & to_mask)
        if not pawns:
            return n
        targets = pawns
        while targets:
            frm = lsb(targets)
            targets &= targets - 1
            single = PAWN_ATTACKS[us * 64 + frm] & enemies & to_mask
            while single:
                n = self.add_pawn_move(n, frm, lsb(single))
                single &= single - 1
        if self.ep != NO_SQUARE and to_mask >> self.ep & 1:
            targets = PAWN_ATTACKS[(us ^ 1) * 64 + self.ep] & pawns
            while targets:
                self.moves[n] = lsb(targets) | self.ep << 6
                n += 1
                targets &= targets - 1
        if us == WHITE:
            single = ((pawns << 8) & FULL) & ~occupied
            double = ((single & 0xFF_0000) << 8) & empty
            single &= to_mask
        else:
            single = (pawns >> 8) & ~occupied
            double = ((single & 0x0000_FF00_0000_0000) >> 8) & empty
            single &= to_mask
        while single:
            to = lsb(single)
            single &= single - 1
            n = self.add_pawn_move(n, to - 8 if us == WHITE else to + 8, to)
        while double:
            to = lsb(double)
            double &= double - 1
            self.moves[n] = (to - 16 if us == WHITE else to + 16) | to << 6
            n += 1
        return n

    @cython.ccall
    @cython.exceptval(check=False)
    def en_passant_capturers(self) -> Bitboard:
        """The side to move's pawns that can take en passant (none when no en passant square is set)."""
        if self.ep == NO_SQUARE:
            return 0
        return PAWN_ATTACKS[(self.turn ^ 1) * 64 + self.ep] & self.by_type[PAWN] & self.by_color[self.turn]

    @cython.ccall
    @cython.exceptval(check=False)
    def generate_captures(self, n: cython.int) -> cython.int:
        """Every pseudo-legal capture (promotions that capture and en passant among them) from index ``n``."""
        to_mask: Bitboard = self.by_color[self.turn ^ 1]
        if self.ep != NO_SQUARE:
            to_mask |= cython.cast(Bitboard, 1) << self.ep
        return self.generate_moves(n, FULL, to_mask)

    @cython.ccall
    @cython.exceptval(check=False)
    def generate_quiets(self, n: cython.int) -> cython.int:
        """Every pseudo-legal move that captures nothing (pushes that promote and castling among them)."""
        empty: Bitboard = ~self.occupied & FULL
        if self.ep != NO_SQUARE:
            empty &= ~(cython.cast(Bitboard, 1) << self.ep)
        return self.generate_castling(self.generate_moves(n, FULL, empty))

    @cython.ccall
    @cython.exceptval(check=False)
    def generate_castling(self, n: cython.int) -> cython.int:
        """The legal castling moves (the king takes its own rook), for standard chess and Chess960 alike."""
        rooks: Bitboard = self.castling & (RANK_1 if self.turn == WHITE else RANK_8)
        while rooks:
            if self.castling_is_legal(lsb(rooks)):
                self.moves[n] = self.king_square(self.turn) | lsb(rooks) << 6
                n += 1
            rooks &= rooks - 1
        return n

    @cython.cfunc
    @cython.exceptval(check=False)
    def castling_is_legal(self, rook: cython.int) -> cython.bint:
        """The king may castle with the rook on ``rook`` (which holds a castling right): both on the back rank, the
        squares both cross and land on empty but for themselves, and no square of the king's way attacked, its
        own first (no castling out of check)."""
        us: cython.int = self.turn
        back: cython.int = 0 if us == WHITE else 56
        king: cython.int = self.king_square(us)
        king_to: cython.int
        rook_to: cython.int
        king_bb: Bitboard
        rook_bb: Bitboard
        occupied: Bitboard
        path: Bitboard
        if king == NO_SQUARE or king < back or king > back + 7 or self.squares[rook] != ROOK + 8 * us:
            return False
        king_to, rook_to = (back + 6, back + 5) if rook > king else (back + 2, back + 3)
        king_bb, rook_bb = cython.cast(Bitboard, 1) << king, cython.cast(Bitboard, 1) << rook
        occupied = self.occupied ^ king_bb ^ rook_bb
        if occupied & (BETWEEN[king * 64 + king_to] | BETWEEN[rook * 64 + rook_to]
                       | (cython.cast(Bitboard, 1) << king_to) | (cython.cast(Bitboard, 1) << rook_to)):
            return False
        path = BETWEEN[king * 64 + king_to] | king_bb
        while path:
            if self.attacked_by(us ^ 1, lsb(path), self.occupied ^ king_bb):
                return False
            path &= path - 1
        return not self.attacked_by(us ^ 1, king_to, occupied | (cython.cast(Bitboard, 1) << rook_to))

    @cython.ccall
    @cython.exceptval(check=False)
    def generate_legal(self, n: cython.int) -> cython.int:
        """Every legal move from index ``n``: captures first, then the others."""
        end: cython.int = self.generate_quiets(self.generate_captures(n))
        i: cython.int
        kept: cython.int = n
        for i in range(n, end):
            self.make(self.moves[i])
            if not self.left_in_check():
                self.moves[kept] = self.moves[i]
                kept += 1
            self.unmake()
        return kept

    @cython.ccall
    @cython.exceptval(check=False)
    def is_pseudo_legal(self, move: cython.int) -> cython.bint:
        """``move`` (any int: a table's or a killer's, made in another position) is pseudo-legal here."""
        us: cython.int = self.turn
        frm: cython.int = move & 63
        to: cython.int = (move >> 6) & 63
        promotion: cython.int = move >> 12
        piece: cython.int = self.squares[frm]
        target: cython.int = self.squares[to]
        last_rank: cython.bint = to >= 56 if us == WHITE else to < 8
        step: cython.int = 8 if us == WHITE else -8
        if piece == 0 or (piece >> 3) != us or move >= 6 << 12 or frm == to:
            return False
        if (piece & 7) == KING and target == ROOK + 8 * us:
            return not promotion and self.castling >> to & 1 and self.castling_is_legal(to)
        if target and (target >> 3) == us:
            return False
        if (piece & 7) != PAWN:
            return not promotion and attacks_of(piece & 7, us, frm, self.occupied) >> to & 1
        if last_rank != (promotion >= KNIGHT and promotion <= QUEEN):
            return False
        if (frm ^ to) & 7:
            return PAWN_ATTACKS[us * 64 + frm] >> to & 1 and (target != 0 or to == self.ep)
        if target:
            return False
        if to == frm + step:
            return True
        return (to == frm + 2 * step and self.squares[frm + step] == 0
                and (frm >> 3) == (1 if us == WHITE else 6))

    @cython.ccall
    @cython.exceptval(check=False)
    def is_capture(self, move: cython.int) -> cython.bint:
        target: cython.int = self.squares[(move >> 6) & 63]
        if target:
            return (target >> 3) != self.turn
        return ((move >> 6) & 63) == self.ep and (self.squares[move & 63] & 7) == PAWN and ((move ^ (move >> 6)) & 7)

    @cython.ccall
    @cython.exceptval(check=False)
    def is_castling(self, move: cython.int) -> cython.bint:
        target: cython.int = self.squares[(move >> 6) & 63]
        return target != 0 and (target >> 3) == self.turn

    @cython.ccall
    @cython.exceptval(check=False)
    def gives_check(self, move: cython.int) -> cython.bint:
        """The pseudo-legal ``move`` checks the other king."""
        checks: cython.bint
        self.make(move)
        checks = self.in_check()
        self.unmake()
        return checks

    # ------------------------------------------------------------------------------- checks to come

    @cython.ccall
    @cython.exceptval(check=False)
    def find_check_squares(self) -> cython.bint:
        """Fill ``check_squares[ply * 8 + piece type]`` for this ply: the squares from which a piece of the side to
        move would give direct check to the other king (pawns: squares they would attack it from; kings never
        check). False, and no squares, when the other side has no king."""
        king: cython.int = self.king_square(self.turn ^ 1)
        at: cython.int = self.ply * 8
        diagonal: Bitboard = 0
        straight: Bitboard = 0
        if king != NO_SQUARE:
            diagonal = bishop_attacks(king, self.occupied)
            straight = rook_attacks(king, self.occupied)
        self.check_squares[at + PAWN] = PAWN_ATTACKS[(self.turn ^ 1) * 64 + king] if king != NO_SQUARE else 0
        self.check_squares[at + KNIGHT] = KNIGHT_ATTACKS[king] if king != NO_SQUARE else 0
        self.check_squares[at + BISHOP] = diagonal
        self.check_squares[at + ROOK] = straight
        self.check_squares[at + QUEEN] = diagonal | straight
        self.check_squares[at + KING] = 0
        return king != NO_SQUARE

    @cython.ccall
    @cython.exceptval(check=False)
    def discoverers(self) -> Bitboard:
        """The side to move's pieces that alone stand between one of its sliders and the other king: moving one
        may give a discovered check."""
        us: cython.int = self.turn
        king: cython.int = self.king_square(us ^ 1)
        snipers: Bitboard
        between: Bitboard
        found: Bitboard = 0
        if king == NO_SQUARE:
            return 0
        snipers = ((rook_attacks(king, 0) & (self.by_type[ROOK] | self.by_type[QUEEN]))
                   | (bishop_attacks(king, 0) & (self.by_type[BISHOP] | self.by_type[QUEEN]))) & self.by_color[us]
        while snipers:
            between = BETWEEN[king * 64 + lsb(snipers)] & self.occupied
            if between and not (between & (between - 1)):
                found |= between
            snipers &= snipers - 1
        return found & self.by_color[us]

    # ------------------------------------------------------------------------------- draws

    @cython.ccall
    @cython.exceptval(check=False)
    def is_repetition(self) -> cython.bint:
        """The position stood on the board before, with the same side to move, since the last capture, pawn move
        or pass (earlier positions from ``setup`` included)."""
        i: cython.int = self.base + self.ply - 1
        lowest: cython.int = self.base + self.ply - self.reversible
        while i >= lowest:   # (one by one: ``earlier`` need not alternate sides; the key tells the side to move)
            if self.keys[i] == self.key:
                return True
            i -= 1
        return False

    @cython.ccall
    @cython.exceptval(check=False)
    def is_insufficient_material(self) -> cython.bint:
        """Neither side can mate by any series of legal moves (python-chess's rule: a lone minor piece, or bishops
        all on one colour of square)."""
        return self.has_insufficient_material(WHITE) and self.has_insufficient_material(BLACK)

    @cython.cfunc
    @cython.exceptval(check=False)
    def has_insufficient_material(self, color: cython.int) -> cython.bint:
        own: Bitboard = self.by_color[color]
        other: Bitboard = self.by_color[color ^ 1]
        bishops: Bitboard = self.by_type[BISHOP]
        if own & (self.by_type[PAWN] | self.by_type[ROOK] | self.by_type[QUEEN]):
            return False
        if own & self.by_type[KNIGHT]:   # a knight mates only with help: the opponent's pieces or its own
            return popcount(own) <= 2 and not (other & ~self.by_type[KING] & ~self.by_type[QUEEN])
        if own & bishops:   # bishops on one colour, and nothing that could block the king for them
            return ((not (bishops & DARK_SQUARES) or not (bishops & ~DARK_SQUARES & FULL))
                    and not self.by_type[PAWN] and not self.by_type[KNIGHT])
        return True

    # ------------------------------------------------------------------------------- for tests and the edge

    def push(self, move: int) -> None:
        """``make``, for Python: the stack's room checked (compiled, ``make`` checks nothing)."""
        if self.ply >= STACK - 1:
            raise IndexError(f"the probe's board holds at most {STACK - 1} moves")
        self.make(move)

    def pop(self) -> None:
        """``unmake``, for Python."""
        if self.ply == 0:
            raise IndexError("no move to take back")
        self.unmake()

    def perft(self, depth: int) -> int:
        """The number of legal move sequences of ``depth`` plies (move generation's standard check)."""
        if self.ply + depth >= STACK:
            raise IndexError(f"the probe's board holds at most {STACK - 1} moves")
        return self.count_sequences(depth)

    @cython.cfunc
    def count_sequences(self, depth: cython.int) -> cython.longlong:
        start: cython.int = self.ply * MAX_MOVES
        end: cython.int
        i: cython.int
        total: cython.longlong = 0
        if depth == 0:
            return 1
        end = self.generate_legal(start)
        if depth == 1:
            return end - start
        for i in range(start, end):
            self.make(self.moves[i])
            total += self.count_sequences(depth - 1)
            self.unmake()
        return total

    def legal_moves(self) -> list:
        """The legal moves, as ints (captures first)."""
        start: cython.int = self.ply * MAX_MOVES
        if self.ply >= STACK - 1:
            raise IndexError(f"the probe's board holds at most {STACK - 1} moves")
        return [self.moves[i] for i in range(start, self.generate_legal(start))]

    def piece_at(self, square: int) -> int:
        return self.squares[square]
