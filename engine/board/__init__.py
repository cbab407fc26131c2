"""The rules of chess, fast: ``board.py`` is a compiled bitboard board (moves, make and unmake, checks, repetition
keys) for the code that plays millions of moves in positions no one sees; ``convert.py`` moves positions and moves
between it and python-chess, which stays the rules library at the edges (UCI input, FEN, SAN, Syzygy, the tests).
``game.py`` and ``movegen.py`` give the tree's positions in packed form and their legal moves."""
