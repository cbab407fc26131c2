"""Syzygy endgame tablebases (``SyzygyPath``), probed through python-chess.

- In the tree (:meth:`Tablebases.result`): a position within the tables' size and without
  castling rights gets its exact result, so the solver settles it at once. The 50-move rule is
  respected: a cursed win or a blessed loss is a draw.
- At the root (:meth:`Tablebases.root_moves`): DTZ keeps, among the moves that keep the best
  result, those that reach a capture, a pawn move or mate soonest when winning (so a won ending
  is actually won under the 50-move rule), and those that resist longest when losing.

A missing folder, a folder without tables or a corrupt file is reported through ``say`` and never
raised: the engine then searches without the tables concerned.
"""

from __future__ import annotations

import os
from typing import Callable, Optional, Sequence

import chess
import chess.syzygy

WIN, DRAW, LOSS = 1.0, 0.0, -1.0
HALFMOVE_LIMIT = 100  # the 50-move rule, in plies


class Tablebases:
    """The tables found in the ``SyzygyPath`` folders, and how many probes they answered."""

    def __init__(self, path: str, say: Callable[[str], None]) -> None:
        self.say = say
        self.path = path
        self.hits = 0
        self.max_pieces = 0
        self._broken_reported = False
        self._tables = chess.syzygy.Tablebase()
        folders = [f for f in path.split(os.pathsep) if f.strip()]
        found = 0
        for folder in folders:
            folder = folder.strip()
            if not os.path.isdir(folder):
                say(f"SyzygyPath: '{folder}' is not a folder; ignored")
                continue
            try:
                count = self._tables.add_directory(folder)
            except OSError as e:
                say(f"SyzygyPath: cannot read '{folder}': {e}")
                continue
            if not count:
                say(f"SyzygyPath: no Syzygy tables (.rtbw) in '{folder}'")
            found += count
            for name in os.listdir(folder):
                stem, ext = os.path.splitext(name)
                if ext in (".rtbw", ".rtbz") and "v" in stem:
                    self.max_pieces = max(self.max_pieces, len(stem) - 1)
        if found:
            say(f"Syzygy tablebases: {found} tables, up to {self.max_pieces} pieces")

    @property
    def loaded(self) -> bool:
        return self.max_pieces > 0

    def covers(self, board: chess.Board) -> bool:
        """Small enough for the tables, and without castling rights (the tables have none)."""
        return board.occupied.bit_count() <= self.max_pieces and not board.castling_rights

    def result(self, board: chess.Board) -> Optional[float]:
        """The exact result for the side to move (WIN, DRAW or LOSS), or None when not covered."""
        if not self.covers(board):
            return None
        wdl = self._probe(self._tables.probe_wdl, board)
        if wdl is None:
            return None
        return WIN if wdl == 2 else LOSS if wdl == -2 else DRAW

    def root_moves(self, board: chess.Board, moves: Sequence[chess.Move]) -> Optional[list[chess.Move]]:
        """The moves DTZ allows at the root, best first; None when the tables do not cover it."""
        if not self.covers(board):
            return None
        counter = board.halfmove_clock
        ranked: list[tuple[float, int, chess.Move]] = []
        probe = board.copy(stack=False)
        for move in moves:
            probe.push(move)
            outcome = self._move_outcome(probe, counter)
            probe.pop()
            if outcome is None:
                return None
            ranked.append((*outcome, move))
        best = max(value for value, _, _ in ranked)
        if best == WIN:      # fastest to a zeroing move or mate
            plies = min(p for v, p, _ in ranked if v == WIN)
        elif best == LOSS:   # longest resistance
            plies = max(p for v, p, _ in ranked if v == LOSS)
        else:
            return [m for v, _, m in ranked if v == DRAW]
        return [m for v, p, m in ranked if v == best and p == plies]

    def _move_outcome(self, child: chess.Board, counter: int) -> Optional[tuple[float, int]]:
        """(result for the mover, plies to the next zeroing move or mate) of the move just played."""
        if child.is_checkmate():
            return WIN, 0
        if child.halfmove_clock == 0:  # a capture or pawn move: the count starts again
            wdl = self._probe(self._tables.probe_wdl, child)
            if wdl is None:
                return None
            return (WIN if wdl == -2 else LOSS if wdl == 2 else DRAW), 1
        dtz = self._probe(self._tables.probe_dtz, child)  # the opponent's view
        if dtz is None:
            return None
        if dtz == 0:
            return DRAW, 0
        plies = abs(dtz) + 1
        if counter + plies > HALFMOVE_LIMIT:  # the 50-move rule comes first
            return DRAW, plies
        return (WIN if dtz < 0 else LOSS), plies

    def _probe(self, probe: Callable[[chess.Board], int], board: chess.Board) -> Optional[int]:
        try:
            value = probe(board)
        except chess.syzygy.MissingTableError:
            return None
        except Exception as e:  # a corrupt or truncated file must not end the search
            if not self._broken_reported:
                self._broken_reported = True
                self.say(f"Syzygy: a table could not be read ({type(e).__name__}: {e}); "
                         "positions it covers are searched without it")
            return None
        self.hits += 1
        return value
