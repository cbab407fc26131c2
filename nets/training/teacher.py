"""Step 2, cheaper: labels from a teacher network (an lc0-format ONNX net, MeanGirl-8 say) instead of Stockfish.

The teacher reads the stored encoder rows exactly as the engine would feed it (``rows_to_planes``) and gives, for
every position, its policy over the legal moves (softmax of its logits, as its prior) and its win/draw/loss.
Stockfish at depth 6 labels about 480 positions a second on two cores; a 4x32 net on onnxruntime labels thousands
a second on one. A teacher labels shard has the Stockfish labels' fields, so the two load and train together:

- ``moves`` uint16 [N, K]: the teacher's K likeliest legal moves, likeliest first (``NO_MOVE`` pads);
- ``probs`` float32 [N, K]: their probabilities (over all legal moves; the K carry nearly all the mass);
- ``scores`` int32 [N, K]: zeros (a teacher gives no centipawns; the soft target comes from ``probs``);
- ``wdl`` float32 [N, 3], ``legal`` uint8 [N, 233]: as in Stockfish's labels;
- ``teacher`` str: the teacher file's name (its provenance), ``depth`` uint8 0.

A teacher with a value head only (``/output/value``, MeanGirl-8's kind) knows the expected score but not how
much of it is draws, and a WDL head trained on its ``((1 + v) / 2, 0, (1 - v) / 2)`` would unlearn draws. Then a
second net with a WDL head (``draws``: the shipped net) gives the draw share: the target keeps the teacher's
W - L = v exactly and takes the draw probability D of the second net, capped at 1 - |v| so W and L stay >= 0.
The shard then names both (``teacher`` is "TEACHER + draws from NET").

``value``: a WDL net whose win/draw/loss replaces the teacher's as the value target (``teacher`` is "TEACHER
policy + value from NET"): the teacher for the policy only. Round 11 found MeanGirl-8's policy worth keeping and its
value, copied into a 6x48, worse than the shipped net's own (docs/training.md).

A shard depends only on its positions shard and the teacher's file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.evaluators.contract import INPUT_NAME, POLICY_NAME, VALUE_NAME, WDL_NAME, wdl_probabilities
from engine.evaluators.lc0_planes import rows_to_planes

from .data import LEGAL_BYTES, NO_MOVE, POLICY_SIZE, board_from_row, legal_mask, save_shard, unlabelled

TOP_MOVES = 16   # moves kept per position: a 4x32 net leaves well under 1% of its policy beyond its 16 likeliest
BATCH = 256


class TeacherError(ValueError):
    """A net that cannot teach: not the contract's ONNX, or a value-only teacher without a net for draws."""


def net_session(net: Path, needs: tuple[str, ...]):
    """An onnxruntime session for ``net`` and the output names it answers ``needs`` with (``/output/wdl`` or, failing
    that, ``/output/value``)."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1   # one shard per core: the shards run in parallel
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(net), options, providers=["CPUExecutionProvider"])
    outputs = {o.name for o in session.get_outputs()}
    value = WDL_NAME if WDL_NAME in outputs else VALUE_NAME
    names = tuple(value if name == WDL_NAME else name for name in needs)
    if INPUT_NAME not in {i.name for i in session.get_inputs()} or not set(names) <= outputs:
        raise TeacherError(f"{net}: needs {INPUT_NAME} in and {' and '.join(names)} out (nets/README.md); convert "
                           "lc0's .pb.gz files with 'arbor net convert'")
    return session, names


def legal_priors(logits: np.ndarray, legal: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """[N, POLICY_SIZE] priors: the softmax of ``logits / temperature`` over each row's legal moves (``legal``: a
    boolean mask, the labels' packed masks unpacked), zero elsewhere."""
    z = np.where(legal, logits.astype(np.float64) / temperature, -np.inf)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def value_only(net: Path) -> bool:
    """Whether ``net`` has a tanh value head and no WDL head (then teaching needs a net for draws)."""
    import onnxruntime as ort
    return WDL_NAME not in {o.name for o in ort.InferenceSession(str(net)).get_outputs()}


def wdl_with_draws(value: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """[N, 3] win/draw/loss with W - L = ``value`` [N] and D = ``draws`` [N], capped at 1 - |value|."""
    value = np.clip(value.astype(np.float64), -1.0, 1.0)
    draw = np.minimum(np.clip(draws.astype(np.float64), 0.0, 1.0), 1.0 - np.abs(value))
    return np.stack([(1.0 - draw + value) / 2, draw, (1.0 - draw - value) / 2], axis=1).astype(np.float32)


def teach_shard(positions: str, out: str, net: str, draws: str = "", top: int = TOP_MOVES, value: str = "") -> dict:
    """Label ``positions`` (a shard file) with the teacher ``net`` into ``out/<same name>``; returns counts.
    ``draws``: a WDL net for the draw share, needed when ``net`` has a value head only; ``value``: a WDL net whose
    win/draw/loss is the value target instead of the teacher's."""
    todo = unlabelled(positions, out)
    if todo is None:
        return {"shard": Path(positions).name, "skipped": True}
    path, data = todo
    rows, fullmoves = data["rows"], data["fullmove"]
    n = len(rows)
    legal = np.zeros((n, LEGAL_BYTES), dtype=np.uint8)
    for i in range(n):
        legal[i] = legal_mask(board_from_row(rows[i], int(fullmoves[i])))
    session, names = net_session(Path(net), (POLICY_NAME, WDL_NAME))
    taught_value = names[1] == VALUE_NAME
    if taught_value and not (draws or value):
        raise TeacherError(f"{net} has a value head only: name a net with a WDL head for the draw share")
    if draws and value:
        raise TeacherError("a net for the draw share and a net for the whole value exclude each other")
    draw_session = net_session(Path(draws), (WDL_NAME,))[0] if taught_value and not value else None
    value_session = None
    if value:
        value_session, value_names = net_session(Path(value), (WDL_NAME,))
        if value_names != (WDL_NAME,):
            raise TeacherError(f"{value}: the net for the value target needs a WDL head ({WDL_NAME})")
    moves = np.full((n, top), NO_MOVE, dtype=np.uint16)
    probs = np.zeros((n, top), dtype=np.float32)
    wdl = np.zeros((n, 3), dtype=np.float32)
    for start in range(0, n, BATCH):
        part = slice(start, min(n, start + BATCH))
        planes = rows_to_planes(rows[part])
        logits, taught = session.run(list(names), {INPUT_NAME: planes})
        mask = np.unpackbits(legal[part], axis=1, count=POLICY_SIZE).astype(bool)
        p = legal_priors(logits, mask)
        order = np.argsort(-p, axis=1, kind="stable")[:, :top]
        chosen = np.take_along_axis(p, order, axis=1)
        counts = mask.sum(axis=1)
        present = np.arange(top)[None, :] < counts[:, None]
        moves[part] = np.where(present, order, NO_MOVE)
        probs[part] = np.where(present, chosen, 0.0)
        if value_session is not None:
            wdl[part] = wdl_probabilities(value_session.run([WDL_NAME], {INPUT_NAME: planes})[0])
        elif draw_session is None:
            wdl[part] = wdl_probabilities(taught)
        else:
            draw_share = wdl_probabilities(draw_session.run([WDL_NAME], {INPUT_NAME: planes})[0])[:, 1]
            wdl[part] = wdl_with_draws(taught[:, 0], draw_share)
    name = Path(net).name + (f" + draws from {Path(draws).name}" if draw_session is not None else "")
    if value_session is not None:
        name = f"{Path(net).name} policy + value from {Path(value).name}"
    save_shard(path, moves=moves, probs=probs, scores=np.zeros((n, top), dtype=np.int32), wdl=wdl, legal=legal,
               depth=np.array(0, dtype=np.uint8), teacher=np.array(name))
    return {"shard": path.name, "positions": n}
