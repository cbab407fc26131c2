"""Every engine option, declared once: its UCI name, type, default, range and help text.

The UCI loop prints these for ``uci`` and parses ``setoption`` through them; the search, the time
manager and the evaluators read the current values from a :class:`Params` instance by attribute
(``params.cpuct``). UCI has no float type, so real-valued options are sent as ``type string``
(as lc0 does) and range-checked here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional



class OptionError(ValueError):
    """A ``setoption`` names an unknown option or gives a value of the wrong type or range."""


@dataclass(frozen=True)
class Option:
    name: str                 # UCI name
    attr: str                 # attribute on Params
    kind: str                 # check | spin | combo | string | button | float
    default: Any
    help: str
    min: Optional[float] = None
    max: Optional[float] = None
    choices: tuple[str, ...] = field(default_factory=tuple)

    def uci_line(self) -> str:
        """The ``option`` line this option announces after ``uci``."""
        if self.kind == "button":
            return f"option name {self.name} type button"
        if self.kind == "check":
            return f"option name {self.name} type check default {'true' if self.default else 'false'}"
        if self.kind == "spin":
            return f"option name {self.name} type spin default {self.default} min {int(self.min)} max {int(self.max)}"
        if self.kind == "combo":
            vars_ = " ".join(f"var {c}" for c in self.choices)
            return f"option name {self.name} type combo default {self.default} {vars_}"
        default = format_float(self.default) if self.kind == "float" else (self.default or "<empty>")
        return f"option name {self.name} type string default {default}"

    def parse(self, text: str) -> Any:
        """Convert a ``setoption`` value; raise :class:`OptionError` saying what is wrong."""
        text = text.strip()
        if self.kind == "check":
            if text.lower() not in ("true", "false"):
                raise OptionError(f"option {self.name} expects true or false, got '{text}'")
            return text.lower() == "true"
        if self.kind in ("spin", "float"):
            try:
                value = int(text) if self.kind == "spin" else float(text)
            except ValueError:
                kind = "an integer" if self.kind == "spin" else "a number"
                raise OptionError(f"option {self.name} expects {kind}, got '{text}'") from None
            if value != value or not (self.min <= value <= self.max):
                raise OptionError(
                    f"option {self.name} must be between {format_float(self.min)} and "
                    f"{format_float(self.max)}, got '{text}'")
            return value
        if self.kind == "combo":
            for choice in self.choices:
                if choice.lower() == text.lower():
                    return choice
            raise OptionError(f"option {self.name} must be one of {', '.join(self.choices)}, got '{text}'")
        if self.kind == "string":
            return "" if text == "<empty>" else text
        return None  # button


def format_float(x: Optional[float]) -> str:
    return f"{x:g}" if x is not None else ""


AUTODISCOVER = "<autodiscover>"
# UCI_Elo's range: the default engine's (the network's) weakest measured row of engine/search/strength.py's table to
# its full strength, the table's top row (tests/test_strength.py holds the two together).
ELO_MIN, ELO_MAX = 710, 2100
# RamLimitMb's top, and what 0 means: the tree's blocks of moves and priors have 32-bit offsets
# (engine/search/nodes.py), 8 GiB of them at most, holes between them included.
TREE_MAX_MB = 6144


def ram_limit_mb(value: int) -> int:
    """What a ``RamLimitMb`` value holds the tree and the caches to: 0 is the tree's most."""
    return min(value or TREE_MAX_MB, TREE_MAX_MB)

OPTIONS: tuple[Option, ...] = (
    # Search
    Option("Simulations", "simulations", "spin", 0,
           "Simulations per move; 0 lets the clock and the go limits decide. 'go nodes' overrides it.",
           0, 1_000_000_000),
    Option("CPuct", "cpuct", "float", 1.745,
           "PUCT exploration constant: how much the priors pull the search away from the best Q.", 0.0, 100.0),
    Option("CPuctBase", "cpuct_base", "float", 38739.0,
           "Visit count scale at which the exploration constant starts to grow.", 1.0, 1e9),
    Option("CPuctFactor", "cpuct_factor", "float", 3.894,
           "Growth of the exploration constant with log(visits / CPuctBase).", 0.0, 1000.0),
    Option("FpuValue", "fpu_reduction", "float", 0.33,
           "First-play urgency: an unvisited move is valued at the parent's Q minus this times "
           "sqrt(sum of the priors of visited moves).", -10.0, 10.0),
    Option("UCTExploration", "uct_c", "float", 1.414,
           "Exploration constant of the classic UCB1 rule used with Evaluator=rollout.", 0.0, 100.0),
    Option("MultiPV", "multipv", "spin", 1, "Number of root moves reported with their lines.", 1, 500),
    Option("SmartPruningFactor", "smart_pruning", "float", 1.33,
           "On the clock, stop early when the best move cannot be overtaken; larger stops sooner, "
           "0 disables. Never applies to 'go movetime'.", 0.0, 10.0),
    Option("ForcingPriorFloor", "forcing_prior_floor", "float", 0.0,
           "Least prior of a capture, promotion or direct check at every node, the other moves scaled down: a "
           "sacrifice the policy rates low still gets looked at. 0 disables; off under UCI_LimitStrength.",
           0.0, 0.5),
    Option("TacticalProbeShare", "tactical_probe_share", "float", 0.5,
           "Share of a 'go movetime' search first spent on exact forcing lines at the root: mates by checks (proven at"
           " once) and a short alpha-beta whose winning moves get more prior once it has searched 4 plies; 'go "
           "infinite' spends up to a second, and a search limited to 100 simulations or more ('go nodes', Simulations)"
           " the same share of its work, at 1,000 probe positions a simulation (10 where the probe runs interpreted)."
           " Clock searches have TacticalClockShare; ponder and depth searches never probe, nor do the simulations "
           "of UCI_LimitStrength. 0 disables.", 0.0, 0.9),
    Option("TacticalClockShare", "tactical_clock_share", "float", 0.1,
           "Share of each move's planned time on the clock first spent on the root probe, as TacticalProbeShare is "
           "of a 'go movetime'; none where that share is under 5 ms (a clock nearly out). 0 disables.", 0.0, 0.5),
    Option("TacticalVetoCp", "tactical_veto_cp", "spin", 100,
           "In a search that ran the root probe (TacticalProbeShare) 4 plies deep or more, a move the probe scores "
           "this many centipawns below its best gets a tenth of its prior and is not played, nor shown first, until "
           "the tree proves it or has searched it 10,000 times: a few plies of exact tactics outweigh a small tree's "
           "judgement. 0 disables.", 0, 100_000),
    Option("ClearTree", "clear_tree", "button", None, "Forget the search tree and the evaluation cache."),
    Option("RamLimitMb", "ram_limit_mb", "spin", 2048,
           "Memory for the search tree and the network cache, in MB (estimated from their sizes; the "
           "cache keeps to half). "
           "When it is reached the search frees the lines it has given up on, keeping their statistics, and "
           f"goes on. 0 means as much as the tree can hold, {TREE_MAX_MB} MB.", 0, TREE_MAX_MB),
    # Evaluation
    Option("Evaluator", "evaluator", "combo", "auto",
           "auto uses the network when WeightsFile loads and the heuristic otherwise.",
           choices=("auto", "network", "heuristic", "rollout")),
    Option("WeightsFile", "weights_file", "string", AUTODISCOVER,
           "lc0 network: an ONNX file or lc0's own .pb.gz / .pb weights; <autodiscover> uses Arbor's bundled net "
           "(or one put in its nets folder), <empty> uses none."),
    Option("NetworkPrecision", "network_precision", "combo", "auto",
           "Arithmetic of the network's residual tower. int8: faster on CPUs with 8-bit dot products (AVX-512 VNNI, "
           "AVX-VNNI, Arm's dot product), the more so the larger the net, and a little less exact; refused, with a "
           "message, if the result strays too far from the float net. auto: int8 where the CPU has 8-bit dot "
           "products and the 8-bit net passes that check, float elsewhere; isready's 'info string loaded network' "
           "says which.",
           choices=("auto", "float", "int8")),
    Option("Threads", "threads", "spin", 1,
           "CPU cores the search may use (at most; no more than the cores the engine may run on). With a network "
           "the search runs on N threads, each with onnxruntime on one thread, sharing one tree; an evaluator "
           "written in Python gets N - 1 worker processes beside the search.", 1, 256),
    Option("MinibatchSize", "minibatch_size", "spin", 8,
           "Leaves gathered per network evaluation (by each of Threads' threads). More run the network a little "
           "faster per leaf; fewer keep the search on its best lines, which is worth more (lc0's CPU backend takes "
           "7). The worker processes of an evaluator written in Python take leaves in chunks of their own.", 1, 1024),
    Option("NNCacheSize", "nn_cache_size", "spin", 200_000,
           "Evaluations kept in the cache (the network's shares its moves and priors with the tree: 16 bytes each "
           "while their node lives, about 150 after; the heuristic's about 1 KB each); the heuristic's worker "
           "processes share it evenly. 0 disables the cache.",
           0, 100_000_000),
    Option("PolicyTemperature", "policy_temperature", "float", 1.359,
           "Softmax temperature applied to the network's policy (a change empties the network's cache).",
           0.01, 100.0),
    Option("VerboseMoveStats", "verbose_move_stats", "check", False,
           "After each search print lc0-style statistics for every root move."),
    Option("SyzygyPath", "syzygy_path", "string", "",
           "Folders with Syzygy endgame tablebases (.rtbw, .rtbz), separated by ':' (';' on Windows); "
           "<empty> uses none."),
    # Time and protocol
    Option("MoveOverhead", "move_overhead", "spin", 100,
           "Milliseconds kept back per move for GUI and operating-system latency.", 0, 10_000),
    Option("Ponder", "ponder", "check", False, "Let the GUI search on the opponent's time ('go ponder')."),
    Option("UCI_Chess960", "chess960", "check", False,
           "Chess960 (Fischer random): positions in X-FEN or Shredder-FEN, castling written king-takes-rook (e1h1)."),
    Option("UCI_LimitStrength", "limit_strength", "check", False,
           "Play at the strength UCI_Elo asks for: fewer visits and, below full strength, a move drawn from the "
           "search's visits rather than always the most visited."),
    Option("UCI_Elo", "uci_elo", "spin", ELO_MAX,
           "The strength UCI_LimitStrength plays at, on Stockfish 15.1's UCI_Elo scale "
           "(docs/strength.md).", ELO_MIN, ELO_MAX),
    Option("UCI_ShowWDL", "show_wdl", "check", False, "Add 'wdl W D L' (per mille) to info lines."),
    Option("LogFile", "log_file", "string", "", "File that receives every line in and out, timestamped."),
)

OPTIONS_BY_NAME: dict[str, Option] = {o.name.lower(): o for o in OPTIONS}


class Params:
    """Current option values, one attribute per option (``Option.attr``)."""

    def __init__(self, **overrides: Any) -> None:
        for option in OPTIONS:
            if option.kind != "button":
                setattr(self, option.attr, option.default)
        for attr, value in overrides.items():
            if not any(o.attr == attr for o in OPTIONS):
                raise AttributeError(f"no option with attribute {attr}")
            setattr(self, attr, value)

    def set(self, name: str, text: str) -> Option:
        """Set an option by UCI name from its text value; raise :class:`OptionError` on bad input."""
        option = OPTIONS_BY_NAME.get(name.strip().lower())
        if option is None:
            raise OptionError(f"unknown option '{name.strip()}'")
        value = option.parse(text)
        if option.kind != "button":
            setattr(self, option.attr, value)
        return option
