"""The search tree: nodes, their statistics, and reuse of a subtree between moves.

A node is created when its parent first selects it and expanded (given moves and priors) on its
first visit. Moves are kept sorted by prior, highest first; since every unvisited move has the
same first-play urgency, the search always opens the best-prior unopened move next, so the
created children are always a prefix of ``moves``. Selection therefore loops over the opened
children plus one.

Nodes are kept small (``arbor bench --memory`` measures them): the position in the game's packed form once the node
has children (a leaf's is worked out again from its parent's when its first child opens), and once expanded its
*edges* (engine/evaluators/edges.py): one ``bytes`` object with the evaluator's value and draw probability, the
16-bit move ids and their float16 priors, which a network's cache shares; and no children until the first one
opens (then a tuple). A child keeps no prior of its own: the children are a prefix of the edges, so the ``k``-th child's prior is
the parent's ``k``-th, which selection reads from the parent's edges in one call, and the prior mass already
visited (the FPU's) is summed on the way.
"""

from __future__ import annotations

from typing import Any, Container, Hashable, Optional, Sequence

from ..evaluators import edges as edges_


WIN, DRAW, LOSS = 1.0, 0.0, -1.0
# ``plies`` of a result proven by a tablebase: exact, but the distance to mate is unknown. Larger
# than any real mate distance, so the solver still prefers a real mate and reports no mate count.
TB_PLIES = 10_000
# Memory one tree node costs the process: RSS growth per node in 'go infinite' with NNCacheSize 0 was 489 to 543
# bytes with the default net (docs/performance.md); with a margin for the holes that freeing lines at the cap leaves.
# RamLimitMb converts to a node budget with it (engine/memory.py).
NODE_BYTES = 640
NO_CHILDREN: tuple = ()  # shared by every node until its first child opens

class Node:
    """One position in the tree.

    ``w`` and ``proven`` are from the view of the player who made the move into this node, so a
    parent picks the child with the highest Q = w / n. Nodes hold no parent pointer: the search
    carries the path, and a discarded subtree is freed at once by reference counting instead of
    waiting for (and pausing in) Python's cycle collector.
    """

    __slots__ = ("move", "state", "edges", "children", "n", "w", "d", "in_flight", "proven", "plies")

    def __init__(self, move: Optional[int]) -> None:
        self.move = move                   # move id (Game.move_ids) of the move into this node
        self.state: Any = None             # packed game state (Game.pack), kept once it has children (and the root)
        self.edges: Optional[bytes] = None  # value, draw, moves and priors (edges.pack); None until expanded
        self.children: tuple[Node, ...] = NO_CHILDREN
        self.n = 0                         # completed visits
        self.w = 0.0                       # sum of backed-up values
        self.d = 0.0                       # sum of draw probabilities
        self.in_flight = 0                 # visits selected but not yet backed up (batching)
        self.proven: Optional[float] = None  # exact value once known: WIN, DRAW or LOSS
        self.plies = 0                     # plies to the end of the game when proven

    @property
    def terminal(self) -> bool:
        """The game is over here (or drawn by repetition, or settled by a tablebase): a result with nothing below it.
        Told by the plies, without a slot of its own: a result the solver proves from children is at least one ply
        from the end, and a tablebase's counts none."""
        return self.proven is not None and (self.plies == 0 or self.plies == TB_PLIES)

    def edge_count(self) -> int:
        """Legal moves here (the root's: those it searches); 0 until expanded."""
        edges = self.edges
        return edges_.count(edges) if edges is not None else 0

    def move_id(self, k: int) -> int:
        """The id of the ``k``-th best-prior move (the ``k``-th child's, once it opens)."""
        return edges_.move_id(self.edges, k)  # type: ignore[arg-type]

    @property
    def moves(self) -> Optional[list[int]]:
        """Move ids, best prior first; None until expanded."""
        return edges_.move_ids(self.edges) if self.edges is not None else None

    @property
    def priors(self) -> Sequence[float]:
        """Priors, best first (the ``k``-th child's is the ``k``-th); empty until expanded."""
        return edges_.priors(self.edges) if self.edges is not None else ()

    def visited_policy(self) -> float:
        """The prior mass of the children visited so far."""
        return sum(p for c, p in zip(self.children, self.priors) if c.n)

    @property
    def v(self) -> Optional[float]:
        """The evaluator's own value here (side to move's view); None until expanded."""
        return edges_.value_and_draw(self.edges)[0] if self.edges is not None else None

    @property
    def q(self) -> float:
        """Mean value for the player who moved into this node."""
        if self.proven is not None:
            return self.proven
        return self.w / self.n if self.n else 0.0

    def child(self, move_id: int) -> Optional["Node"]:
        for c in self.children:
            if c.move == move_id:
                return c
        return None

    def add_child(self, move_id: int) -> "Node":
        """Open the next move (moves open in prior order: the children stay a prefix of the edges). The children are
        a tuple, made anew for each: one object of 40 + 8 bytes a child, where a list is two (over-allocated), and
        most nodes have one to three."""
        child = Node(move_id)
        self.children += (child,)
        return child

    def ranked_children(self, demoted: Container[int] = ()) -> list["Node"]:
        """Children from best to worst: proven wins (fastest first), then by visits and Q, then the ``demoted``
        moves (by id) the same way, proven losses last (slowest first)."""
        def rank(c: Node) -> tuple:
            if c.proven == WIN:
                return (3, -c.plies, 0, 0.0)
            if c.proven == LOSS:
                return (0, c.plies, c.n, 0.0)
            return (1 if c.move in demoted else 2, 0, c.n + c.in_flight, c.q if c.n else -2.0)
        return sorted(self.children, key=rank, reverse=True)

    def principal_variation(self, max_len: int = 64) -> list[int]:
        """Move ids of the most-visited line below this node."""
        line, node = [], self
        while node.children and len(line) < max_len:
            node = node.ranked_children()[0]
            if node.n == 0 and node.proven is None:
                break
            line.append(node.move)
        return line


def prove(node: Node) -> bool:
    """Settle ``node`` from its children if they decide it (the mate solver); True if it became proven.

    A child that wins (for the player moving into it) makes ``node`` lost; once every move is opened and proven,
    the best of them decides: a draw if one draws, otherwise a win, by the slowest loss of the opponent's."""
    children = node.children
    wins = [c.plies for c in children if c.proven == WIN]
    if wins:
        node.proven, node.plies = LOSS, min(wins) + 1
        return True
    if len(children) < node.edge_count() or any(c.proven is None for c in children):
        return False
    if any(c.proven == DRAW for c in children):
        node.proven = DRAW
        node.plies = min(c.plies for c in children if c.proven == DRAW) + 1
    else:
        node.proven, node.plies = WIN, max(c.plies for c in children) + 1
    return True


class Tree:
    """The root, the positions of the game that led to it, and reuse between searches."""

    def __init__(self, game: Any) -> None:
        self.game = game
        self.start_key: Any = None     # identifies the game's first position
        self.moves: list[int] = []     # ids of the moves played from it to the root
        self.history: list[Any] = []   # full states before the root, oldest first
        self.history_keys: list[Hashable] = []
        self.restricted = False        # the root's moves were cut down (go searchmoves, tablebases)
        # Nodes below the root (itself included) that have had a visit: what RamLimitMb counts (engine/memory.py).
        # After a reuse it is the new root's visits, an upper bound: each visit adds at most one node.
        self.nodes = 0
        self.root = self._new_root(None)

    def _new_root(self, state: Any) -> Node:
        root = Node(None)
        if state is not None:
            root.state = self.game.pack(state)
        return root

    def root_state(self) -> Any:
        """A fresh full state of the root position."""
        return self.game.unpack(self.root.state)

    def set_position(self, start_key: Any, states: Sequence[Any], moves: Sequence[Any],
                     keys: Optional[Sequence[Hashable]] = None) -> int:
        """Move the root to ``states[-1]``, reached from ``states[0]`` by ``moves``.

        ``keys``, when given, are the states' ``game.key``s, known to the caller. Keeps the subtree
        when the new game extends the old one; returns the visits kept.
        """
        old_root, old_moves = self.root, self.moves
        moves = self.game.move_ids(moves)
        self.history = list(states[:-1])
        self.history_keys = list(keys[:-1]) if keys is not None else [self.game.key(s) for s in self.history]
        reused = None
        if (start_key == self.start_key and old_root.state is not None
                and len(moves) >= len(old_moves) and moves[:len(old_moves)] == old_moves):
            reused = old_root
            for move in moves[len(old_moves):]:
                reused = reused.child(move)
                if reused is None or reused.edges is None:
                    reused = None
                    break
        self.start_key, self.moves = start_key, moves
        if reused is None or reused.terminal:
            self.root = self._new_root(states[-1])
            self.nodes = 0
            return 0
        if reused is not old_root:
            self.restricted = False
        if reused.state is None:   # a node without children kept no position
            reused.state = self.game.pack(states[-1])
        reused.move = None
        self.root = reused
        self.nodes = reused.n
        return reused.n

    def clear(self) -> None:
        """Forget the tree but keep the position."""
        old = self.root
        self.root = Node(None)
        self.root.state = old.state
        self.restricted = False
        self.nodes = 0
