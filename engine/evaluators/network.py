"""Network evaluator: lc0-format ONNX networks through onnxruntime, batched and cached.

The contract a network file must follow is in ``nets/README.md``. In short: input ``/input/planes`` float32
[B, 112, 8, 8] (see :mod:`engine.evaluators.lc0_planes`), outputs ``/output/policy`` [B, 1858] logits (see
:mod:`engine.evaluators.lc0_policy`) and ``/output/wdl`` [B, 3] or ``/output/value`` [B, 1]. lc0's own weight files
(``.pb.gz``, ``.pb``) load too: :mod:`engine.evaluators.lc0_weights` reads them and
:mod:`engine.evaluators.lc0_onnx` converts them to such a model, once (cached by :mod:`engine.evaluators.lc0_cache`).

Using it from a search: the tree (engine/search/tree.py) writes the input planes of its leaves straight from its
compiled board (engine/evaluators/lc0_input.py) and hands them to ``run_planes``, which returns the raw policy, the
values and the draw probabilities; the tree turns the policy into priors itself, through ``columns`` (each move's
column of the policy output), and caches them. ``evaluate(leaves)`` does the whole of it for python-chess boards
(``lc0_planes.py``'s encoder): the tools and the tests use it, and it is the reference the tree must agree with.

Priors are the softmax over the legal moves only of ``logit / PolicyTemperature``, with lc0's fast
approximate exponential so that priors match lc0's to a few hundredths of a percent. The temperature is read
at every call, and so is ``ForcingPriorFloor`` (engine/evaluators/forcing.py).

Where ``/output/policy`` is lc0's constant Gather of the network's raw policy planes, the Gather is taken out of
the loaded graph and the legal moves' logits are read from the raw policy directly (``raw_policy_model``).
"""

from __future__ import annotations

import copy
import os
from typing import Any, Optional, Union

import numpy as np

from ..board.moves import move_ids
from . import forcing, lc0_cache, lc0_planes, lc0_policy, lc0_weights, precision
from .base import Evaluator, EvaluatorError, Leaf
from .contract import (INPUT_NAME, META_HISTORY, META_INPUT_FORMAT, MLH_NAME, POLICY_NAME, VALUE_NAME, WDL_NAME, wdl_probabilities)

#: Networks up to this size are loaded without their policy Gather (see ``raw_policy_model``).
SKIP_GATHER_MAX_BYTES = 32 << 20

_F32_LN2_INV = np.float32(1.442695040)
_C1 = np.float32(0.6602339)
_C2 = np.float32(0.33976606)
_ONE = np.float32(1.0)


def fast_exp(x: np.ndarray) -> np.ndarray:
    """lc0's FastExp (a quadratic 2^x approximation), vectorised: same priors as lc0."""
    a = x.astype(np.float32, copy=False) * _F32_LN2_INV
    n = np.floor(a)
    f = a - n
    m = _ONE + f * (_C1 + _C2 * f)
    out = np.ldexp(m, n.astype(np.int32))
    out[a < -126] = 0.0
    return out


def segment_softmax(logits: np.ndarray, starts: np.ndarray, counts: np.ndarray, temperature: float) -> np.ndarray:
    """Softmax of ``logits / temperature`` within each segment [starts[i], starts[i] + counts[i])."""
    maxes = np.maximum.reduceat(logits, starts)
    x = (logits - np.repeat(maxes, counts)) / np.float32(temperature)
    e = fast_exp(x)
    sums = np.add.reduceat(e, starts)
    return e / np.repeat(sums, counts)


class NetworkEvaluator(Evaluator):
    """Evaluates leaves with an lc0-format ONNX network (see the module docstring)."""

    name = "network"
    uct = False
    planes = True

    def __init__(self, path: str, params: Any) -> None:
        self.path = path
        self.params = params
        if not os.path.exists(path):
            raise EvaluatorError(f"{path}: file not found")
        if not os.path.isfile(path):
            raise EvaluatorError(f"{path}: not a file")
        self._threads = int(getattr(params, "threads", 1))
        # One onnxruntime thread a session run: with more cores, more batches run at once (engine/search/pipeline.py).
        self._intra_op = 1
        # What onnxruntime loads: the file itself, or for lc0 weights their converted model (a cached file's path,
        # or the model's bytes when the cache cannot be written).
        self._model: Union[str, bytes] = path
        if lc0_weights.is_lc0_weights(path):
            self._model = self._convert(path)
            try:
                self._session = self._load()
            except EvaluatorError:
                if not isinstance(self._model, str):
                    raise
                # A cache file that does not load (damaged on disk): convert again, once.
                self._model = self._convert(path, refresh=True)
                self._session = self._load()
        else:
            self._session = self._load()
        self._check_signature()
        #: What the user should hear about the precision asked for (NetworkPrecision), or None.
        self.precision_note: Optional[str] = None
        setting = getattr(params, "network_precision", "float")
        if setting == "int8":
            self._quantize("NetworkPrecision int8")
        elif setting == "auto":
            if precision.int8_dot_products():
                self._quantize("NetworkPrecision auto, this CPU has 8-bit dot products")
            else:
                self.precision_note = "NetworkPrecision auto: float, this CPU has no 8-bit dot products"
        self._policy_map: Optional[np.ndarray] = None
        self._skip_policy_gather()
        self._columns = lc0_policy.id_columns(self._policy_map)  # move id -> column of the policy output
        #: [side to move, compiled board's move id] -> column of the policy output (the tree's look-up)
        self.columns = lc0_policy.core_columns(self._policy_map)
        meta = self._session.get_modelmeta().custom_metadata_map or {}
        fmt = meta.get(META_INPUT_FORMAT, "classical").strip().lower()
        if fmt not in ("classical", "1", "input_classical_112_plane"):
            raise EvaluatorError(f"{path}: unsupported input format '{fmt}' (only classical 112-plane)")
        hist = meta.get(META_HISTORY, "full").strip().lower()
        if hist not in ("full", "none"):
            raise EvaluatorError(f"{path}: metadata {META_HISTORY} must be 'full' or 'none', got '{hist}'")
        self.use_history = hist == "full"
        self.needs_history = self.use_history
        self.metadata = dict(meta)

    # ------------------------------------------------------------------ loading
    def _convert(self, path: str, refresh: bool = False) -> Union[str, bytes]:
        try:
            return lc0_cache.onnx_for(path, refresh)
        except EvaluatorError as exc:
            raise EvaluatorError(f"{path}: {exc}") from None
        except ImportError as exc:  # onnx is a dependency, but a stripped-down install may lack it
            raise EvaluatorError(f"{path}: converting lc0 weights needs the onnx package ({exc})") from None

    def _load(self):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        intra_op = self._intra_op
        opts.intra_op_num_threads = intra_op
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.log_severity_level = 3
        if intra_op > 1:
            # Do not let idle worker threads spin: the search's Python thread needs that core.
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            return ort.InferenceSession(self._model, sess_options=opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if "protobuf" in text.lower():
                raise EvaluatorError(f"{self.path}: not an ONNX model ({text})") from None
            raise EvaluatorError(f"{self.path}: cannot load the ONNX model ({text})") from None

    def _quantize(self, asked: str) -> None:
        """Run the tower in 8 bits (engine/evaluators/quantize.py); where it cannot be, say why and stay in float.
        ``asked`` says what asked for it, for the note."""
        from .quantize import tower_in_int8

        try:
            model, fidelity = tower_in_int8(self._model)
            float_model, self._model = self._model, model
            try:
                self._session = self._load()
                self._check_signature()
            except EvaluatorError:
                self._model = float_model
                self._session = self._load()
                self._check_signature()
                raise
        except EvaluatorError as exc:
            self.precision_note = f"{asked}: int8 not used, {exc}: the network runs in float"
            return
        self.precision_note = f"{asked}: tower in int8: {fidelity}"

    def _check_signature(self) -> None:
        sess = self._session
        inputs = {i.name: i for i in sess.get_inputs()}
        outputs = {o.name: o for o in sess.get_outputs()}
        path = self.path
        if INPUT_NAME not in inputs:
            raise EvaluatorError(f"{path}: no input {INPUT_NAME} (inputs: {', '.join(inputs) or 'none'})")
        if len(inputs) != 1:
            raise EvaluatorError(f"{path}: expected one input {INPUT_NAME}, found {', '.join(inputs)}")
        inp = inputs[INPUT_NAME]
        shape = list(inp.shape)
        if len(shape) != 4 or shape[1:] != [112, 8, 8]:
            raise EvaluatorError(f"{path}: input {INPUT_NAME} has shape {_fmt(shape)}, expected [batch, 112, 8, 8]")
        if inp.type not in ("tensor(float)", "tensor(float16)"):
            raise EvaluatorError(f"{path}: input {INPUT_NAME} has type {inp.type}, expected tensor(float)")
        self._input_dtype = np.float16 if inp.type == "tensor(float16)" else np.float32
        self._fixed_batch = shape[0] if isinstance(shape[0], int) and shape[0] > 0 else None
        if POLICY_NAME not in outputs:
            raise EvaluatorError(f"{path}: no output {POLICY_NAME} (outputs: {', '.join(outputs) or 'none'})")
        pshape = list(outputs[POLICY_NAME].shape)
        if len(pshape) != 2 or pshape[1] != lc0_policy.POLICY_SIZE:
            raise EvaluatorError(f"{path}: output {POLICY_NAME} has shape {_fmt(pshape)}, expected [batch, 1858]")
        if WDL_NAME in outputs:
            vshape = list(outputs[WDL_NAME].shape)
            if len(vshape) != 2 or vshape[1] != 3:
                raise EvaluatorError(f"{path}: output {WDL_NAME} has shape {_fmt(vshape)}, expected [batch, 3]")
            self.has_wdl = True
            value_name = WDL_NAME
        elif VALUE_NAME in outputs:
            vshape = list(outputs[VALUE_NAME].shape)
            if len(vshape) != 2 or vshape[1] != 1:
                raise EvaluatorError(f"{path}: output {VALUE_NAME} has shape {_fmt(vshape)}, expected [batch, 1]")
            self.has_wdl = False
            value_name = VALUE_NAME
        else:
            raise EvaluatorError(f"{path}: no output {WDL_NAME} or {VALUE_NAME} (outputs: {', '.join(outputs)})")
        self.has_mlh = MLH_NAME in outputs
        self._output_names = [POLICY_NAME, value_name]

    def _skip_policy_gather(self) -> None:
        """Read the legal moves' logits straight from the network's raw policy when ``/output/policy`` is only a
        constant Gather of it (lc0's map from its policy planes to the 1858 moves, in every lc0, leela2onnx and
        Arbor network): the same numbers without one pass over every move of every position. Any other shape of
        graph keeps the model as it is."""
        model = self._model
        size = os.path.getsize(model) if isinstance(model, str) else len(model)
        if size > SKIP_GATHER_MAX_BYTES:
            return  # a large net: its convolutions dwarf the Gather, and a rewritten copy would cost its size in RAM
        try:
            found = raw_policy_model(model)
        except Exception:  # onnx cannot parse what onnxruntime loaded: keep what works
            return
        if found is None:
            return
        rewritten, raw_name, columns = found
        original = self._model, self._session, self._output_names
        try:
            self._model = rewritten
            self._session = self._load()
            shape = next(o.shape for o in self._session.get_outputs() if o.name == raw_name)
            if len(shape) != 2 or (isinstance(shape[1], int) and shape[1] <= int(columns.max())):
                raise EvaluatorError("unexpected raw policy shape")
        except EvaluatorError:
            self._model, self._session, self._output_names = original
            return
        self._output_names = [raw_name, self._output_names[1]]
        self._policy_map = columns

    # ------------------------------------------------------------------ options read at call time
    @property
    def batch_size(self) -> int:  # type: ignore[override]
        return max(1, int(self.params.minibatch_size))

    def prior_floor(self) -> float:
        """The least prior of a forcing move (``ForcingPriorFloor``; 0 under ``UCI_LimitStrength``)."""
        return forcing.prior_floor(self.params)

    def set_inference_threads(self, threads: int) -> None:
        if threads != self._intra_op:
            self._intra_op = threads
            self._session = self._load()

    def __reduce__(self) -> tuple:
        """A worker process's copy (engine/search/workers.py) loads the same file, with one onnxruntime thread."""
        params = copy.copy(self.params)
        params.threads = 1
        return NetworkEvaluator, (self.path, params)

    def close(self) -> None:
        self._session = None

    # ------------------------------------------------------------------ evaluation
    def run_planes(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The network on [rows, 112, 8, 8] input planes: (raw policy [rows, width] float32, values [rows] and draw
        probabilities [rows], float64). Only onnxruntime's work: it lets go of the interpreter's lock, so threads may
        run several at once."""
        if planes.dtype != self._input_dtype:
            planes = planes.astype(self._input_dtype)
        fixed = self._fixed_batch
        if fixed is None:
            outputs = self._session.run(self._output_names, {INPUT_NAME: planes})
        else:
            parts = []
            for s in range(0, len(planes), fixed):
                chunk = planes[s:s + fixed]
                n = len(chunk)
                if n < fixed:
                    chunk = np.concatenate([chunk, np.zeros((fixed - n,) + chunk.shape[1:], chunk.dtype)])
                parts.append([o[:n] for o in self._session.run(self._output_names, {INPUT_NAME: chunk})])
            outputs = [np.concatenate([p[i] for p in parts]) for i in range(len(self._output_names))]
        policy, value_out = outputs
        values, draws = self._values(value_out)
        return np.asarray(policy, dtype=np.float32), values, draws

    def evaluate(self, leaves: list[Leaf]) -> None:
        """Fill ``value``, ``raw_value``, ``wdl`` and ``priors`` of every leaf, encoding its python-chess board (and
        history) with ``lc0_planes.py``.

        A batch holds a few hundred legal moves, and each numpy call costs microseconds whatever its size: the
        moves' columns are looked up in Python, so that the whole batch takes one index and one segmented softmax."""
        if not leaves:
            return
        rows = [lc0_planes.gather(leaf.board, leaf.history if self.use_history else (), self.use_history)
                for leaf in leaves]
        policy, values, draws = self.run_planes(lc0_planes.rows_to_planes(rows, np.float32))
        width = policy.shape[1]
        columns, id_table = self._columns, lc0_policy.id_table
        flat: list[int] = []
        counts_l: list[int] = []
        starts_l: list[int] = []
        start = 0
        for row, leaf in enumerate(leaves):
            ids = leaf.move_ids if leaf.move_ids is not None else move_ids(leaf.moves)
            table, offset = columns[id_table(leaf.board)], row * width
            flat += [table[m] + offset for m in ids]
            starts_l.append(start)
            counts_l.append(len(ids))
            start += len(ids)
        logits = policy.reshape(-1)[np.array(flat, dtype=np.int64)]
        temp = float(self.params.policy_temperature)
        probs = segment_softmax(logits, np.array(starts_l, dtype=np.int64), np.array(counts_l, dtype=np.int64), temp)
        priors = probs.tolist()
        floor = forcing.prior_floor(self.params)
        for i, leaf in enumerate(leaves):
            start, end = starts_l[i], starts_l[i] + counts_l[i]
            value, draw = float(values[i]), float(draws[i])
            leaf.value = leaf.raw_value = value
            leaf.wdl = ((1.0 + value - draw) * 0.5, draw, (1.0 - value - draw) * 0.5)
            leaf.priors = priors[start:end]
            forcing.apply(leaf, floor)

    def _values(self, value_out: Any) -> tuple[np.ndarray, np.ndarray]:
        """Each position's value (side to move's view) and draw probability from the value head's outputs (a network
        with a value head alone says no draws)."""
        value_out = np.asarray(value_out, dtype=np.float32)
        if not self.has_wdl:
            return value_out[:, 0].astype(np.float64), np.zeros(len(value_out))
        wdl = wdl_probabilities(value_out).astype(np.float64)
        return wdl[:, 0] - wdl[:, 2], wdl[:, 1]

    # ------------------------------------------------------------------ diagnostics
    @staticmethod
    def policy_index(board, move) -> int:
        """lc0 policy index of ``move`` in ``board`` (for VerboseMoveStats lines)."""
        return lc0_policy.policy_index(board, move)


def raw_policy_model(model: Union[str, bytes]) -> Optional[tuple[bytes, str, np.ndarray]]:
    """If ``/output/policy`` is a Gather along axis 1 with constant indices, of a tensor that is not a graph
    output: the model with that tensor as its output instead of the Gather, the tensor's name, and the indices
    (int64), so that ``raw[:, indices]`` is the policy. None for any other graph."""
    import onnx
    from onnx import numpy_helper

    proto = onnx.load_model_from_string(model) if isinstance(model, bytes) else onnx.load(model)
    graph = proto.graph
    gather = next((node for node in graph.node if POLICY_NAME in node.output), None)
    if gather is None or gather.op_type != "Gather" or len(gather.input) != 2 or gather.domain not in ("", "ai.onnx"):
        return None
    axis = next((onnx.helper.get_attribute_value(a) for a in gather.attribute if a.name == "axis"), 0)
    raw_name, index_name = gather.input
    if axis != 1 or any(o.name == raw_name for o in graph.output):
        return None
    indices = next((numpy_helper.to_array(t) for t in graph.initializer if t.name == index_name), None)
    if indices is None:
        constant = next((node for node in graph.node if node.op_type == "Constant" and index_name in node.output),
                        None)
        value = [a for a in constant.attribute if a.name == "value"] if constant is not None else []
        if not value:
            return None
        indices = numpy_helper.to_array(value[0].t)
    if indices.shape != (lc0_policy.POLICY_SIZE,) or indices.dtype.kind not in "iu" or indices.min() < 0:
        return None
    graph.node.remove(gather)
    outputs = list(graph.output)
    del graph.output[:]
    for out in outputs:
        graph.output.append(onnx.helper.make_tensor_value_info(raw_name, out.type.tensor_type.elem_type, None)
                            if out.name == POLICY_NAME else out)
    # Initializers and constants only the Gather used are left for onnxruntime's optimizer to drop.
    return proto.SerializeToString(), raw_name, indices.astype(np.int64)


def _fmt(shape: list) -> str:
    return "[" + ", ".join(str(d) if d is not None else "?" for d in shape) + "]"
