"""Small games with exact minimax values, for testing the tree search through the Game interface."""

from __future__ import annotations

import functools
import random
from typing import Optional, Sequence

# A state is (cells, player): cells hold 0 (empty), 1 or -1; player is the side to move (1 or -1).


class LineGame:
    """Players alternately place a piece; `k` in a row on one of `lines` wins."""

    def __init__(self, size: int, lines: Sequence[Sequence[int]]) -> None:
        self.size, self.lines = size, [tuple(line) for line in lines]

    def initial(self) -> tuple:
        return ((0,) * self.size, 1)

    def legal_moves(self, state: tuple) -> list[int]:
        cells, _ = state
        if self._winner(cells):
            return []
        return [i for i, c in enumerate(cells) if c == 0]

    def play(self, state: tuple, move: int) -> tuple:
        cells, player = state
        assert cells[move] == 0
        return (cells[:move] + (player,) + cells[move + 1:], -player)

    def _winner(self, cells: tuple) -> int:
        for line in self.lines:
            first = cells[line[0]]
            if first and all(cells[i] == first for i in line):
                return first
        return 0

    def result(self, state: tuple, moves: Sequence[int]) -> Optional[float]:
        cells, player = state
        winner = self._winner(cells)
        if winner:
            return 1.0 if winner == player else -1.0
        return 0.0 if not moves else None

    def key(self, state: tuple) -> tuple:
        return state

    def reversible_plies(self, state: tuple) -> int:
        return 0

    def winning_moves(self, state: tuple, moves: Sequence[int]) -> list[int]:
        return []

    def random_playout(self, state: tuple, rng: random.Random, max_plies: int) -> float:
        start_player = state[1]
        for _ in range(max_plies):
            moves = self.legal_moves(state)
            r = self.result(state, moves)
            if r is not None:
                return r if state[1] == start_player else -r
            state = self.play(state, rng.choice(moves))
        return 0.0

    # States are small tuples and moves are cell numbers: already compact.
    def pack(self, state: tuple) -> tuple:
        return state

    def unpack(self, packed: tuple) -> tuple:
        return packed

    def packed_key(self, packed: tuple) -> tuple:
        return self.key(packed)

    def successor(self, packed: tuple, move_id: int) -> tuple:
        return self.play(packed, move_id)

    def legal_moves_and_ids(self, state: tuple) -> tuple[list[int], list[int]]:
        moves = self.legal_moves(state)
        return moves, moves

    def move_ids(self, moves: Sequence[int]) -> list[int]:
        return list(moves)

    def move_from_id(self, move_id: int) -> int:
        return move_id

    @functools.lru_cache(maxsize=None)
    def minimax(self, state: tuple) -> float:
        """Exact value for the side to move."""
        moves = self.legal_moves(state)
        r = self.result(state, moves)
        if r is not None:
            return r
        return max(-self.minimax(self.play(state, m)) for m in moves)

    def states(self) -> set:
        seen, todo = set(), [self.initial()]
        while todo:
            s = todo.pop()
            if s in seen:
                continue
            seen.add(s)
            todo.extend(self.play(s, m) for m in self.legal_moves(s))
        return seen


def connect2() -> LineGame:
    """The seeds' Connect2: a 1x4 board, two adjacent pieces of one player win."""
    return LineGame(4, [(0, 1), (1, 2), (2, 3)])


def tictactoe() -> LineGame:
    rows = [(0, 1, 2), (3, 4, 5), (6, 7, 8)]
    cols = [(0, 3, 6), (1, 4, 7), (2, 5, 8)]
    diags = [(0, 4, 8), (2, 4, 6)]
    return LineGame(9, rows + cols + diags)
