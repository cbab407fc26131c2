"""The rules of chess, fast: ``board.py`` is a compiled bitboard board (moves, make and unmake, checks, repetition
keys) for the code that plays millions of moves in positions no one sees (the tree, the root probe); ``convert.py``
moves positions and moves between it and python-chess, which stays the rules library at the edges (UCI input, FEN,
SAN, Syzygy, the evaluators written in Python, the tests); ``moves.py`` names python-chess's moves by small ints."""
