"""Read a shipped ONNX net back into PyTorch, so that a training round starts from the shipped generation.

The shipped ``.onnx`` file is the only state a round needs from earlier rounds (it is in git; data and
checkpoints are not). ``export`` writes nets whose initializers keep the PyTorch names (``net.<module>``),
with each batch norm folded into the convolution before it (``<conv>.weight`` and ``<conv>.weight_bias``).

Unfolding gives each batch norm the statistics of its input on real positions: running mean ``mu`` and
variance ``var`` as measured, scale ``sqrt(var + eps)`` and shift ``mu + bias``. In evaluation mode the net
then computes exactly the ONNX net's function; in training mode, where a batch norm normalises by the
batch's own statistics, it computes nearly the same, so fine-tuning starts from the shipped net's play rather
than from a net whose every layer is rescaled at the first step.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from .model import ArborNet

PREFIX = "net."


class WarmStartError(ValueError):
    """The ONNX file is not a float net exported by this pipeline with the expected architecture."""


def onnx_weights(path: Path) -> dict[str, np.ndarray]:
    import onnx
    from onnx import numpy_helper
    model = onnx.load(str(path))
    if any(node.op_type in ("DequantizeLinear", "QuantizeLinear") for node in model.graph.node):
        raise WarmStartError(f"{path}: an int8 (quantized) net; warm start needs the float net it was made from")
    return {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}


def architecture(weights: dict[str, np.ndarray]) -> dict:
    """The ``ArborNet`` config that matches an exported net's weights."""
    try:
        filters = weights[PREFIX + "stem.0.0.weight"].shape[0]
        blocks = sum(1 for name in weights if name.startswith(PREFIX + "tower.") and name.endswith(".conv1.0.weight"))
        se = PREFIX + "tower.0.se.fc1.weight" in weights
        value_channels = weights[PREFIX + "value_conv.0.0.weight"].shape[0]
        value_hidden = weights[PREFIX + "value_fc.0.weight"].shape[0]
    except KeyError as e:
        raise WarmStartError(f"not a net exported by nets.training (no initializer {e.args[0]})") from None
    return {"blocks": blocks, "filters": filters, "se": se, "value_channels": value_channels,
            "value_hidden": value_hidden}


def _conv_bn_pairs(net: ArborNet) -> list[tuple[str, nn.Conv2d, nn.BatchNorm2d]]:
    pairs = []
    for name, module in net.named_modules():
        if isinstance(module, nn.Sequential) and len(module) == 2 and isinstance(module[0], nn.Conv2d) \
                and isinstance(module[1], nn.BatchNorm2d):
            pairs.append((name, module[0], module[1]))
    return pairs


def load_onnx(path: Path, calibration_planes: np.ndarray) -> ArborNet:
    """An ``ArborNet`` in evaluation mode computing the ONNX net at ``path``; its batch norms take their
    statistics from ``calibration_planes`` ([N, 112, 8, 8] of real positions; a few thousand are plenty)."""
    weights = onnx_weights(path)
    net = ArborNet(**architecture(weights))
    state = net.state_dict()
    folded: dict[str, np.ndarray] = {}     # conv name -> folded bias
    pairs = _conv_bn_pairs(net)
    for name, _, _ in pairs:
        key = f"{PREFIX}{name}.0.weight"
        if key not in weights or key + "_bias" not in weights:
            raise WarmStartError(f"{path}: no folded convolution {key}")
        state[f"{name}.0.weight"] = torch.from_numpy(weights[key].copy())
        folded[name] = weights[key + "_bias"]
    bn_names = {f"{name}.1" for name, _, _ in pairs}
    for key in state:
        module = key.rsplit(".", 1)[0]
        if module in bn_names or key.endswith(".0.weight") and key[:-len(".0.weight")] in folded:
            continue
        source = PREFIX + key
        if source not in weights:
            raise WarmStartError(f"{path}: no initializer {source}")
        if tuple(weights[source].shape) != tuple(state[key].shape):
            raise WarmStartError(f"{path}: {source} has shape {weights[source].shape}, expected "
                                 f"{tuple(state[key].shape)}")
        state[key] = torch.from_numpy(weights[source].copy())
    net.load_state_dict(state)
    # First an exact identity-plus-bias norm (mean 0, variance 1, scale sqrt(1 + eps)), so every layer's input
    # is what the ONNX net computes; then each norm takes its input's measured statistics.
    with torch.no_grad():
        for name, _, bn in pairs:
            bn.running_mean.zero_()
            bn.running_var.fill_(1.0)
            bn.weight.fill_(float(np.sqrt(1.0 + bn.eps)))
            bn.bias.copy_(torch.from_numpy(folded[name].copy()))
    net.eval()
    stats: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    hooks = [bn.register_forward_hook(lambda m, inputs, out, name=name: stats.__setitem__(
        name, (inputs[0].mean(dim=(0, 2, 3)), inputs[0].var(dim=(0, 2, 3), unbiased=False))))
        for name, _, bn in pairs]
    with torch.no_grad():
        net(torch.from_numpy(np.ascontiguousarray(calibration_planes, dtype=np.float32)))
    for hook in hooks:
        hook.remove()
    with torch.no_grad():
        for name, _, bn in pairs:
            mu, var = stats[name]
            var = var.clamp_min(1e-6)
            bn.running_mean.copy_(mu)
            bn.running_var.copy_(var)
            bn.weight.copy_(torch.sqrt(var + bn.eps))
            bn.bias.copy_(mu + torch.from_numpy(folded[name].copy()))
    return net
