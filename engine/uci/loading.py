"""The evaluator the options ask for: finding the network, and loading it without blocking the input loop.

Loading a network takes half a second on a quiet machine and several on a busy one (onnxruntime builds its
session, the 8-bit copy is checked against the float net). A GUI that sends ``go`` without ``isready`` first, or
right after changing ``WeightsFile``, must still have its ``stop``, ``isready`` and ``quit`` read meanwhile, so the
load runs in a thread of its own and a search waits for it there (:meth:`EvaluatorLoader.wait`).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Callable, Optional

from ..evaluators.base import Evaluator, EvaluatorError
from ..params import AUTODISCOVER, Params
from ..search.pipeline import Pipeline
from .. import compiled

# Changing one of these rebuilds the evaluator at the next isready or go.
EVALUATOR_OPTIONS = {"evaluator", "weights_file", "network_precision", "threads", "minibatch_size",
                     "nn_cache_size"}


def nets_dirs() -> list[Path]:
    """Where ``<autodiscover>`` looks for networks, in order (the first folder holding an ``.onnx`` wins): the
    PyInstaller bundle, the installed package (``pip install .`` puts the bundled net in ``engine/nets/``),
    then the source tree's ``nets/`` (a user's own net) and ``nets/default/`` (the bundled net)."""
    dirs = []
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        dirs.append(Path(bundle) / "nets")
    package = Path(__file__).resolve().parent.parent   # engine/
    dirs += [package / "nets", package.parent / "nets", package.parent / "nets" / "default"]
    return dirs


def discover_network() -> Optional[str]:
    for d in nets_dirs():
        if d.is_dir():
            found = sorted(p for p in d.glob("*.onnx") if p.is_file())
            if found:
                return str(found[0])
    return None


def make_evaluator(params: Params, say: Callable[[str], None]) -> tuple[Evaluator, Optional[str]]:
    """Build the evaluator the options ask for. Returns it and, when the choice fell back to the
    heuristic against the user's wish, the reason (to repeat on every ``go``)."""
    from ..evaluators.heuristic import HeuristicEvaluator
    choice = params.evaluator
    if choice == "rollout":
        from ..evaluators.rollout import RolloutEvaluator
        return RolloutEvaluator(), None
    if choice == "heuristic":
        return HeuristicEvaluator(params), None
    path = params.weights_file
    if path == AUTODISCOVER:
        path = discover_network()
    problem = None
    if path:
        try:
            from ..evaluators.network import NetworkEvaluator
            evaluator = NetworkEvaluator(path, params)
            say(f"loaded network {path}" + (f" ({evaluator.precision_note})" if evaluator.precision_note else ""))
            return evaluator, None
        except EvaluatorError as e:
            problem = f"cannot use network: {e}"
        except Exception as e:  # a broken file must never kill the engine
            problem = f"cannot use network {path}: {type(e).__name__}: {e}"
    else:
        problem = "no network file found (set WeightsFile)"
    if choice == "network" or params.weights_file not in ("", AUTODISCOVER):
        say(f"{problem}; using the heuristic evaluator")
    else:
        say("no network found: using the heuristic evaluator")
    return HeuristicEvaluator(params), (problem if choice == "network" else None)


class EvaluatorLoader:
    """The evaluator and its worker pipeline, built in a background thread on demand.

    The input thread alone calls :meth:`start`, :meth:`wait` without a ``stop`` and :meth:`drop`, and only while no
    search runs; a search thread calls :meth:`wait` with its ``stop`` event. ``evaluator``, ``pipeline`` and
    ``problem`` (why the options' choice fell back to the heuristic) are set once the load has ended.

    The loading thread then stays, idle, until :meth:`drop`: it started the worker processes (``Threads``), and the
    kernel ends a worker when the thread that started it ends (``workers.py``, ``PR_SET_PDEATHSIG``).
    """

    def __init__(self, params: Params, say: Callable[[str], None]) -> None:
        self.params, self.say = params, say
        self.evaluator: Optional[Evaluator] = None
        self.pipeline: Optional[Pipeline] = None
        self.problem: Optional[str] = None
        self._thread: Optional[threading.Thread] = None
        self._loaded = threading.Event()
        self._release = threading.Event()

    @property
    def ready(self) -> bool:
        return self.evaluator is not None

    def start(self) -> None:
        """Begin loading, unless the evaluator is loaded or loading."""
        if self._thread is None:
            self._loaded, self._release = threading.Event(), threading.Event()
            self._thread = threading.Thread(target=self._load, args=(self._loaded, self._release), daemon=True,
                                            name="arbor-load")
            self._thread.start()

    def wait(self, stop: Optional[threading.Event] = None) -> bool:
        """Load (or finish loading) and return whether the evaluator is ready; with ``stop``, return as soon as it
        is set, the load going on behind."""
        self.start()
        loaded = self._loaded
        if stop is None:
            loaded.wait()
        else:
            while not loaded.wait(0.005):
                if stop.is_set():
                    break
        return self.ready

    def drop(self) -> None:
        """Forget the evaluator (the options that make it changed); the next :meth:`wait` loads anew. Waits for a
        load under way, never starts one."""
        if self._thread is None:
            return
        self._loaded.wait()
        if self.pipeline is not None:
            self.pipeline.close()
        if self.evaluator is not None:
            self.evaluator.close()
        self.evaluator, self.pipeline, self.problem = None, None, None
        self._release.set()
        self._thread.join()
        self._thread = None

    def _load(self, loaded: threading.Event, release: threading.Event) -> None:
        compiled.prepare()   # here, not in the first search, which must answer 'stop' at once
        try:
            evaluator, problem = make_evaluator(self.params, self.say)
            pipeline = Pipeline(evaluator, self.params.threads)
        except Exception as e:  # the engine must go on, with the evaluator that needs nothing loaded
            from ..evaluators.heuristic import HeuristicEvaluator
            problem = f"cannot build the evaluator: {type(e).__name__}: {e}"
            self.say(f"{problem}; using the heuristic evaluator")
            evaluator = HeuristicEvaluator(self.params)
            pipeline = Pipeline(evaluator, 1)
        if pipeline.problem:
            self.say(f"Threads: {pipeline.problem}")
        self.pipeline, self.problem = pipeline, problem
        self.evaluator = evaluator  # last: it is what ``ready`` reads
        loaded.set()
        release.wait()
