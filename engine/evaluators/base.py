"""The contract between the search and an evaluator.

An evaluator written in Python gets leaves, python-chess boards with their legal moves, in batches of at most
:attr:`Evaluator.batch_size` through :meth:`Evaluator.evaluate`, and fills in ``value`` and ``priors``. A network
(``planes``) gets lc0's input planes, which the tree writes itself, through ``run_planes``, and gives back its raw
outputs; the tree decodes them (engine/evaluators/network.py).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Optional, Sequence

from ..params import ram_limit_mb


class Leaf:
    """One position the search wants evaluated.

    Inputs, set by the search (an evaluator must not mutate them):

    - ``board``: the position, usually a ``chess.Board`` whose move stack may be empty.
    - ``moves``: its legal moves (never empty), in the order ``priors`` must follow.
    - ``history``: the positions before ``board``, oldest first, starting at the game's first
      position (the start position or the FEN of the UCI ``position`` command). Filled only for
      evaluators whose :attr:`Evaluator.needs_history` is true; otherwise an empty tuple.

    - ``move_ids``: the search's compact names for ``moves`` (``Game.move_ids``), or None. A chess evaluator
      may read them instead of ``moves`` (the network evaluator's policy look-up does: a chess move id is
      its index into lc0's policy tables).

    Outputs, set by the evaluator:

    - ``value``: expected result in [-1, 1] for the side to move.
    - ``priors``: probabilities aligned with ``moves``, summing to 1.
    - ``wdl``: optional (win, draw, loss) probabilities for the side to move.
    - ``raw_value``: optional value-head output before any search-side adjustment (diagnostics).
    - ``mates``: optional list of the moves that mate at once (the search finds them itself).
    """

    __slots__ = ("board", "moves", "history", "value", "priors", "wdl", "raw_value", "mates", "move_ids")

    def __init__(self, board: Any, moves: list, history: Sequence[Any] = ()) -> None:
        self.board = board
        self.moves = moves
        self.history = history
        self.value: float = 0.0
        self.priors: list[float] = []
        self.wdl: Optional[tuple[float, float, float]] = None
        self.raw_value: Optional[float] = None
        self.mates: Optional[list] = None
        self.move_ids: Optional[list[int]] = None  # the search's own names for ``moves``


def cache_entries(params: Any, entry_bytes: int, processes: int = 1) -> int:
    """How many evaluations an evaluator's cache may keep: ``NNCacheSize``, but never more than half of
    ``RamLimitMb`` (the tree needs the rest to grow), shared evenly by the ``processes`` that keep a cache; 0 means
    no cache."""
    limit_mb = ram_limit_mb(int(getattr(params, "ram_limit_mb", 0)))
    size = min(int(params.nn_cache_size), limit_mb * (1 << 20) // 2 // entry_bytes)
    return size // max(1, processes)


class EvaluatorError(Exception):
    """An evaluator cannot be used (for example a network file that does not load)."""


class Evaluator(ABC):
    """Pluggable position evaluator.

    ``batch_size`` above 1 tells the search that the evaluator gains from batches: it then gathers
    ``MinibatchSize`` leaves per call. Evaluators that gain nothing from batching keep 1.
    ``planes`` says that the evaluator is a network taking lc0's input planes (``run_planes``, ``columns``,
    ``prior_floor``); ``needs_history`` that those planes show the positions before the leaf.
    ``uct`` asks for the classic UCB1 selection rule instead of PUCT (used by random rollouts,
    whose priors are uniform). ``copies_to_workers`` says that the evaluator pickles into worker processes
    (engine/search/workers.py): with ``Threads`` of 2 or more its leaves are then spread over them.
    """

    name: str = "base"
    batch_size: int = 1
    planes: bool = False
    needs_history: bool = False
    uct: bool = False
    copies_to_workers: bool = False
    # Processes whose caches share NNCacheSize and RamLimitMb evenly: the search's and its workers'
    # (engine/search/pipeline.py sets it, and tells the workers' copies).
    cache_processes: int = 1

    @abstractmethod
    def evaluate(self, leaves: list[Leaf]) -> None:
        """Fill ``value`` and ``priors`` (and ``wdl`` where known) of every leaf."""

    def set_inference_threads(self, threads: int) -> None:
        """Use ``threads`` threads inside one evaluation (an evaluator with a native runtime; others ignore it)."""

    def memory_bytes(self) -> int:
        """Estimated memory held by caches that grow during search (counted against RamLimitMb)."""
        return 0

    def clear(self) -> None:
        """Forget any evaluations it keeps (``ucinewgame``)."""

    def close(self) -> None:
        """Release resources (threads, sessions)."""
