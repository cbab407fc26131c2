"""Grow a trained net into a larger shape that computes the same function, so that a larger net starts from what
the shipped one knows instead of from scratch (``train --init NET --grow --blocks B --filters F``).

- **Wider** (more filters): every old weight keeps its place; the new channels get a fresh net's initial weights,
  except that no old channel reads a new one (those weights start at zero). The new channels compute something
  of their own that nothing uses yet; training connects them.
- **Deeper** (more blocks): new residual blocks go after the old ones, each with its last convolution and its
  squeeze-excitation's additive half at zero, so a new block adds nothing to its input, and its input is already
  a ReLU's output: the block is the identity until training moves it.

In evaluation mode the grown net's outputs equal the old net's to float rounding (the tests check this). In
training mode, where batch norm uses each batch's own statistics, the old channels' statistics are the same as
before (they read no new channel), so fine-tuning starts from the old net's play.
"""

from __future__ import annotations

import torch

from .model import ArborNet


def grow(old: ArborNet, blocks: int, filters: int) -> ArborNet:
    """``old`` grown to ``blocks`` residual blocks of ``filters`` channels (neither smaller than before)."""
    config = dict(old.config)
    if blocks < config["blocks"] or filters < config["filters"]:
        raise ValueError(f"cannot shrink a {config['blocks']}x{config['filters']} net to {blocks}x{filters}")
    torch.manual_seed(0)  # the new weights are a fresh net's, the same for the same shapes
    new = ArborNet(blocks, filters, config["se"], config["value_channels"], config["value_hidden"])
    channels_old, channels_new = config["filters"], filters
    state = new.state_dict()
    with torch.no_grad():
        for name, value in old.state_dict().items():
            target = state[name]
            if name.endswith("se.fc2.weight") or name.endswith("se.fc2.bias"):
                _copy_se_excitation(value, target, channels_old, channels_new)
            else:
                _copy_corner(value, target)
        for i in range(config["blocks"], blocks):   # new blocks: the identity
            state[f"tower.{i}.conv2.0.weight"].zero_()
            if config["se"]:
                state[f"tower.{i}.se.fc2.weight"][channels_new:].zero_()
                state[f"tower.{i}.se.fc2.bias"][channels_new:].zero_()
    new.load_state_dict(state)
    return new


def _copy_corner(value: torch.Tensor, target: torch.Tensor) -> None:
    """Old values into the leading corner of ``target``; old outputs read nothing from the new inputs."""
    if value.dim() == 0:
        target.copy_(value)
        return
    corner = tuple(slice(0, n) for n in value.shape)
    target[corner] = value
    if value.dim() >= 2:
        target[: value.shape[0], value.shape[1]:] = 0


def _copy_se_excitation(value: torch.Tensor, target: torch.Tensor, old: int, new: int) -> None:
    """The SE's second layer gives a scale for each channel, then a shift for each: both halves keep their
    channels, which in the wider net start at 0 and at ``new``."""
    for half in range(2):
        rows_old = slice(half * old, half * old + old)
        rows_new = slice(half * new, half * new + old)
        if value.dim() == 2:
            target[rows_new, : value.shape[1]] = value[rows_old]
            target[rows_new, value.shape[1]:] = 0
        else:
            target[rows_new] = value[rows_old]
