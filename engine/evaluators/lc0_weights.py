"""lc0's own weight files (``.pb.gz``, ``.pb``): recognise one and read it into an :class:`Lc0Network` of numpy
layers, with batch norm folded into the convolutions. :mod:`engine.evaluators.lc0_onnx` builds the ONNX network from
it, and :mod:`engine.evaluators.lc0_cache` keeps the conversion on disk.

What is supported (anything else is refused with an :class:`EvaluatorError` naming it):

- input format ``INPUT_CLASSICAL_112_PLANE`` (the planes of :mod:`engine.evaluators.lc0_planes`);
- residual convolution bodies (``NETWORK_CLASSICAL``, ``NETWORK_SE`` and their ``_WITH_HEADFORMAT`` forms), with or
  without squeeze-excitation, ReLU or Mish activation, batch norm folded into the convolutions;
- classical (fully connected) and convolution policy heads, classical (tanh) and WDL value heads; a moves-left head
  is ignored (Arbor's search does not use it);
- weights encoded as LINEAR16, FLOAT16, BFLOAT16 or FLOAT32.

The file format is lc0's ``proto/net.proto``, read with :mod:`engine.evaluators.lc0_proto`. Every layer's size is
checked against the shape the body and heads need, so a file is never half-read into a wrong net.
"""

from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple, Optional, Union

import numpy as np

from .base import EvaluatorError
from .lc0_policy import POLICY_SIZE
from .lc0_proto import Message, ProtoError

#: ``Net.magic`` of every lc0 weight file.
WEIGHTS_MAGIC = 0x1C0
GZIP_MAGIC = b"\x1f\x8b"
#: First byte of a serialized lc0 ``Net``: field 1 (magic) as fixed32. An ONNX model starts with field 1
#: (ir_version) as a varint, 0x08.
NET_FIRST_BYTE = 0x0D
FILE_SUFFIXES = (".pb", ".pb.gz")

INPUT_PLANES = 112
#: Planes of the convolution policy head: 73 AlphaZero-style move planes, padded to 80 by lc0.
CONV_POLICY_PLANES = 80
#: Batch-norm epsilon of lc0's training (and of its weight loader).
BN_EPSILON = 1e-5

# --------------------------------------------------------------------------------------------------- net.proto
# Field numbers of the messages of lc0's proto/net.proto that a convolutional net uses.
class _NetField:
    MAGIC, MIN_VERSION, FORMAT, WEIGHTS, ONNX_MODEL = 1, 3, 4, 10, 11


class _FormatField:
    WEIGHTS_ENCODING, NETWORK_FORMAT = 1, 2


class _NetworkFormatField:
    INPUT, OUTPUT, NETWORK, POLICY, VALUE, MOVES_LEFT, DEFAULT_ACTIVATION = 1, 2, 3, 4, 5, 6, 7


class _WeightsField:
    INPUT, RESIDUAL, POLICY, IP_POL_W, IP_POL_B = 1, 2, 3, 4, 5
    VALUE, IP1_VAL_W, IP1_VAL_B, IP2_VAL_W, IP2_VAL_B = 6, 7, 8, 9, 10
    POLICY1 = 11
    #: Present only in attention-body (transformer) nets.
    ATTENTION = (25, 27, 37)  # ip_emb_w, encoder, ip_emb_preproc_w
    MULTI_HEADS = (44, 45)    # value_heads, policy_heads


class _ConvBlockField:
    WEIGHTS, BIASES, BN_MEANS, BN_STDDIVS, BN_GAMMAS, BN_BETAS = 1, 2, 3, 4, 5, 6


class _ResidualField:
    CONV1, CONV2, SE = 1, 2, 3


class _SEField:
    W1, B1, W2, B2 = 1, 2, 3, 4


class _LayerField:
    MIN_VAL, MAX_VAL, PARAMS, ENCODING, DIMS = 1, 2, 3, 4, 5


class Encoding(IntEnum):
    UNKNOWN_ENCODING = 0
    LINEAR16 = 1
    FLOAT16 = 2
    BFLOAT16 = 3
    FLOAT32 = 4


class InputFormat(IntEnum):
    INPUT_UNKNOWN = 0
    INPUT_CLASSICAL_112_PLANE = 1
    INPUT_112_WITH_CASTLING_PLANE = 2
    INPUT_112_WITH_CANONICALIZATION = 3
    INPUT_112_WITH_CANONICALIZATION_HECTOPLIES = 4
    INPUT_112_WITH_CANONICALIZATION_V2 = 5
    INPUT_112_WITH_CANONICALIZATION_HECTOPLIES_ARMAGEDDON = 132
    INPUT_112_WITH_CANONICALIZATION_V2_ARMAGEDDON = 133


class NetworkStructure(IntEnum):
    NETWORK_UNKNOWN = 0
    NETWORK_CLASSICAL = 1
    NETWORK_SE = 2
    NETWORK_CLASSICAL_WITH_HEADFORMAT = 3
    NETWORK_SE_WITH_HEADFORMAT = 4
    NETWORK_ONNX = 5
    NETWORK_ATTENTIONBODY_WITH_HEADFORMAT = 6
    NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT = 7
    NETWORK_AB_LEGACY_WITH_MULTIHEADFORMAT = 134


class PolicyFormat(IntEnum):
    POLICY_UNKNOWN = 0
    POLICY_CLASSICAL = 1
    POLICY_CONVOLUTION = 2
    POLICY_ATTENTION = 3


class ValueFormat(IntEnum):
    VALUE_UNKNOWN = 0
    VALUE_CLASSICAL = 1
    VALUE_WDL = 2
    VALUE_PARAM = 3


class MovesLeftFormat(IntEnum):
    MOVES_LEFT_NONE = 0
    MOVES_LEFT_V1 = 1


class DefaultActivation(IntEnum):
    DEFAULT_ACTIVATION_RELU = 0
    DEFAULT_ACTIVATION_MISH = 1


SUPPORTED_INPUTS = (InputFormat.INPUT_CLASSICAL_112_PLANE,)
SUPPORTED_NETWORKS = (NetworkStructure.NETWORK_CLASSICAL, NetworkStructure.NETWORK_SE,
                      NetworkStructure.NETWORK_CLASSICAL_WITH_HEADFORMAT, NetworkStructure.NETWORK_SE_WITH_HEADFORMAT)


def _name(enum: type[IntEnum], value: int) -> str:
    try:
        return enum(value).name
    except ValueError:
        return f"{enum.__name__} {value} (unknown)"


# ------------------------------------------------------------------------------------------------- the network
@dataclass
class Conv:
    """A convolution with batch norm folded in: ``weight`` [out, in, k, k], ``bias`` [out]."""
    weight: np.ndarray
    bias: np.ndarray


@dataclass
class Dense:
    """A fully connected layer in ONNX MatMul order: ``weight`` [in, out], ``bias`` [out]."""
    weight: np.ndarray
    bias: np.ndarray


@dataclass
class Residual:
    """One residual block; ``se`` is the squeeze-excitation unit's two layers, when it has one."""
    conv1: Conv
    conv2: Conv
    se: Optional[tuple[Dense, Dense]]


@dataclass
class Lc0Network:
    """A convolutional lc0 net, decoded: float32 arrays laid out as the ONNX graph uses them."""
    activation: str                # "relu" or "mish"
    input: Conv
    tower: list[Residual]
    policy_head: str               # "convolution" or "classical"
    policy_conv: Conv              # convolution head: 3x3 conv; classical head: 1x1 conv
    policy_out: Union[Conv, Dense]  # convolution head: 3x3 conv to 80 planes; classical head: dense to 1858
    value_conv: Conv
    value_fc1: Dense
    value_fc2: Dense
    wdl: bool
    moves_left: bool               # the file has a moves-left head (not converted)

    @property
    def filters(self) -> int:
        return int(self.input.bias.shape[0])

    def describe(self) -> str:
        """E.g. ``6x64 SE, convolution policy, WDL value`` (blocks x filters)."""
        se = " SE" if any(block.se is not None for block in self.tower) else ""
        mish = ", mish" if self.activation == "mish" else ""
        value = "WDL" if self.wdl else "classical"
        moves_left = ", moves-left head not used" if self.moves_left else ""
        return f"{len(self.tower)}x{self.filters}{se}{mish}, {self.policy_head} policy, {value} value{moves_left}"


# ------------------------------------------------------------------------------------------------------ reading
def _decode_layer(layer: Optional[Message], file_encoding: int, what: str) -> np.ndarray:
    """The float32 values of a ``Weights.Layer`` (empty when the layer is absent)."""
    if layer is None:
        return np.zeros(0, np.float32)
    params = layer.blob(_LayerField.PARAMS)
    encoding = layer.uint(_LayerField.ENCODING) or file_encoding or Encoding.LINEAR16
    if encoding == Encoding.LINEAR16:
        _check_size(params, 2, what)
        low, high = np.float32(layer.float32(_LayerField.MIN_VAL)), np.float32(layer.float32(_LayerField.MAX_VAL))
        theta = np.frombuffer(params, "<u2").astype(np.float32) / np.float32(0xFFFF)
        # low * (1 - theta) + high * theta, as lc0 computes it: its build fuses the first product into the sum
        # (one rounding, which the float64 sum reproduces), and then these weights equal lc0's bit for bit.
        values = (np.float64(low) * (np.float32(1) - theta) + high * theta).astype(np.float32)
    elif encoding == Encoding.FLOAT16:
        _check_size(params, 2, what)
        values = np.frombuffer(params, "<f2").astype(np.float32)
    elif encoding == Encoding.BFLOAT16:
        _check_size(params, 2, what)
        values = (np.frombuffer(params, "<u2").astype(np.uint32) << 16).view(np.float32)
    elif encoding == Encoding.FLOAT32:
        _check_size(params, 4, what)
        values = np.frombuffer(params, "<f4").astype(np.float32)
    else:
        raise EvaluatorError(f"{what}: weight encoding {_name(Encoding, encoding)} is not supported")
    dims = layer.uints(_LayerField.DIMS)
    if dims and int(np.prod(dims)) != values.size:
        raise EvaluatorError(f"{what}: {values.size} values where its dims {dims} say {int(np.prod(dims))}")
    if not np.isfinite(values).all():
        raise EvaluatorError(f"{what}: weights that are not finite numbers (corrupt file)")
    return values


def _check_size(params: bytes, width: int, what: str) -> None:
    if len(params) % width:
        raise EvaluatorError(f"{what}: {len(params)} bytes of weights, not a whole number of values (corrupt file)")


class _Reader:
    """Decodes the layers of one ``Weights`` message, checking every size against the shape it must have."""

    def __init__(self, file_encoding: int) -> None:
        self.encoding = file_encoding

    def layer(self, parent: Optional[Message], field: int, what: str) -> np.ndarray:
        return _decode_layer(parent.message(field) if parent is not None else None, self.encoding, what)

    def conv(self, block: Optional[Message], in_channels: int, kernel: int, what: str) -> Conv:
        """A ``ConvBlock``: its output channel count comes from its biases or batch norm."""
        if block is None:
            raise EvaluatorError(f"{what} is missing (truncated or corrupt file)")
        weight = self.layer(block, _ConvBlockField.WEIGHTS, what + " weights")
        bias = self.layer(block, _ConvBlockField.BIASES, what + " biases")
        means = self.layer(block, _ConvBlockField.BN_MEANS, what + " bn_means")
        variances = self.layer(block, _ConvBlockField.BN_STDDIVS, what + " bn_stddivs")  # variances, despite the name
        gammas = self.layer(block, _ConvBlockField.BN_GAMMAS, what + " bn_gammas")
        betas = self.layer(block, _ConvBlockField.BN_BETAS, what + " bn_betas")
        out = bias.size or means.size
        if not out or weight.size != out * in_channels * kernel * kernel:
            raise EvaluatorError(f"{what}: {weight.size} weights for {out} outputs of {in_channels}x{kernel}x{kernel} "
                                 "(truncated or corrupt file)")
        if not bias.size:
            bias = np.zeros(out, np.float32)
        weight = weight.reshape(out, in_channels, kernel, kernel)
        if means.size:  # fold batch norm: gamma * (conv + bias - mean) / sqrt(var + eps) + beta
            if variances.size != out:
                raise EvaluatorError(f"{what}: {variances.size} batch-norm variances for {out} channels")
            gammas = gammas if gammas.size else np.ones(out, np.float32)
            betas = betas if betas.size else np.zeros(out, np.float32)
            if means.size != out or gammas.size != out or betas.size != out:
                raise EvaluatorError(f"{what}: batch-norm sizes do not match its {out} channels")
            # lc0's own float32 operations (the last one fused, as its build compiles it): the folded weights then
            # equal leela2onnx's bit for bit.
            scale = gammas * (np.float32(1) / np.sqrt(variances + np.float32(BN_EPSILON)))
            weight = weight * scale[:, None, None, None]
            bias = ((-scale).astype(np.float64) * (means - bias) + betas).astype(np.float32)
        return Conv(np.ascontiguousarray(weight, np.float32), bias.astype(np.float32))

    def dense(self, parent: Message, w_field: int, b_field: int, in_size: int, what: str,
              out_size: Optional[int] = None) -> Dense:
        """A fully connected layer; lc0 stores the weights [out, in], ONNX's MatMul wants [in, out]."""
        weight = self.layer(parent, w_field, what + " weights")
        bias = self.layer(parent, b_field, what + " biases")
        out = bias.size
        if not out or (out_size is not None and out != out_size) or weight.size != out * in_size:
            want = f"{out_size if out_size is not None else out} outputs"
            raise EvaluatorError(f"{what}: {weight.size} weights and {out} biases, expected {in_size} inputs and "
                                 f"{want} (truncated or corrupt file)")
        return Dense(np.ascontiguousarray(weight.reshape(out, in_size).T), bias)


def _decompress(raw: bytes) -> bytes:
    if raw[:2] != GZIP_MAGIC:
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise EvaluatorError(f"corrupt or truncated gzip data ({exc})") from None


def parse(raw: bytes) -> Lc0Network:
    """Decode an lc0 weight file's bytes (gzip'd or not). Raises EvaluatorError for what cannot be used."""
    data = _decompress(raw)
    if data[:2] in (b"1\n", b"2\n"):
        raise EvaluatorError("lc0's old text weight format is not supported (only protobuf .pb/.pb.gz files)")
    try:
        return _parse_net(Message(data))
    except ProtoError as exc:
        raise EvaluatorError(f"not an lc0 weight file, or a truncated or corrupt one ({exc})") from None


class _Format(NamedTuple):
    """What ``Net.format`` says, once lc0's defaults for older files are applied."""
    weights_encoding: int
    policy: int
    value: int
    moves_left: int
    activation: int


def _read_format(net: Message) -> _Format:
    """The file's format; EvaluatorError for one Arbor cannot run (checked before any weight is decoded)."""
    magic = net.uint(_NetField.MAGIC)
    if magic != WEIGHTS_MAGIC:
        raise EvaluatorError(f"not an lc0 weight file (magic {magic:#x}, expected {WEIGHTS_MAGIC:#x})")
    fmt = net.message(_NetField.FORMAT)
    file_encoding = fmt.uint(_FormatField.WEIGHTS_ENCODING) if fmt is not None else 0
    nf = fmt.message(_FormatField.NETWORK_FORMAT) if fmt is not None else None
    if nf is None:  # the oldest files: lc0 reads them as classical input, body and heads
        input_format, network = InputFormat.INPUT_CLASSICAL_112_PLANE, NetworkStructure.NETWORK_CLASSICAL
        policy, value, moves_left, activation = PolicyFormat.POLICY_CLASSICAL, ValueFormat.VALUE_CLASSICAL, 0, 0
    else:
        input_format = nf.uint(_NetworkFormatField.INPUT)
        network = nf.uint(_NetworkFormatField.NETWORK)
        policy = nf.uint(_NetworkFormatField.POLICY)
        value = nf.uint(_NetworkFormatField.VALUE)
        moves_left = nf.uint(_NetworkFormatField.MOVES_LEFT)
        activation = nf.uint(_NetworkFormatField.DEFAULT_ACTIVATION)
    if input_format not in SUPPORTED_INPUTS:
        raise EvaluatorError(f"input format {_name(InputFormat, input_format)} is not supported "
                             "(only INPUT_CLASSICAL_112_PLANE)")
    if network not in SUPPORTED_NETWORKS:
        raise EvaluatorError(f"network structure {_name(NetworkStructure, network)} is not supported "
                             "(only residual convolution bodies)")
    if network in (NetworkStructure.NETWORK_CLASSICAL, NetworkStructure.NETWORK_SE):
        # Files from before the head formats existed: lc0 reads their heads as classical.
        policy, value = PolicyFormat.POLICY_CLASSICAL, ValueFormat.VALUE_CLASSICAL
    if policy == PolicyFormat.POLICY_ATTENTION:
        raise EvaluatorError("policy head POLICY_ATTENTION is not supported (only convolution and classical heads)")
    if value not in (ValueFormat.VALUE_UNKNOWN, ValueFormat.VALUE_CLASSICAL, ValueFormat.VALUE_WDL):
        raise EvaluatorError(f"value head {_name(ValueFormat, value)} is not supported (only classical and WDL)")
    if activation not in (DefaultActivation.DEFAULT_ACTIVATION_RELU, DefaultActivation.DEFAULT_ACTIVATION_MISH):
        raise EvaluatorError(f"default activation {_name(DefaultActivation, activation)} is not supported")
    return _Format(file_encoding, policy, value, moves_left, activation)


def _parse_net(net: Message) -> Lc0Network:
    fmt = _read_format(net)
    weights = net.message(_NetField.WEIGHTS)
    if weights is None:
        raise EvaluatorError("the file holds no weights (truncated or corrupt file)")
    if any(weights.has(f) for f in _WeightsField.ATTENTION):
        raise EvaluatorError("attention (transformer) bodies are not supported (only residual convolution bodies)")
    if any(weights.has(f) for f in _WeightsField.MULTI_HEADS):
        raise EvaluatorError("multi-head policy/value formats are not supported")

    read = _Reader(fmt.weights_encoding)
    W = _WeightsField
    stem = read.conv(weights.message(W.INPUT), INPUT_PLANES, 3, "input convolution")
    filters = stem.bias.size
    tower = []
    for i, block in enumerate(weights.messages(W.RESIDUAL)):
        name = f"residual block {i}"
        conv1 = read.conv(block.message(_ResidualField.CONV1), filters, 3, name + " conv1")
        conv2 = read.conv(block.message(_ResidualField.CONV2), filters, 3, name + " conv2")
        se_msg = block.message(_ResidualField.SE)
        se = None
        if se_msg is not None:
            fc1 = read.dense(se_msg, _SEField.W1, _SEField.B1, filters, name + " SE layer 1")
            fc2 = read.dense(se_msg, _SEField.W2, _SEField.B2, fc1.bias.size, name + " SE layer 2", 2 * filters)
            se = (fc1, fc2)
        tower.append(Residual(conv1, conv2, se))

    policy1 = weights.message(W.POLICY1)
    if policy1 is not None and policy1.has(_ConvBlockField.WEIGHTS):
        # As leela2onnx: a policy1 block makes the convolution head, whatever the format field says.
        policy_head = "convolution"
        policy_conv = read.conv(policy1, filters, 3, "policy convolution 1")
        policy_out: Union[Conv, Dense] = read.conv(weights.message(W.POLICY), filters, 3, "policy convolution 2")
        if policy_out.bias.size != CONV_POLICY_PLANES:
            raise EvaluatorError(f"policy convolution 2 has {policy_out.bias.size} planes, expected "
                                 f"{CONV_POLICY_PLANES}")
    else:
        if fmt.policy == PolicyFormat.POLICY_CONVOLUTION:
            raise EvaluatorError("convolution policy head without its first convolution (truncated or corrupt file)")
        policy_head = "classical"
        policy_conv = read.conv(weights.message(W.POLICY), filters, 1, "policy convolution")
        policy_out = read.dense(weights, W.IP_POL_W, W.IP_POL_B, policy_conv.bias.size * 64, "policy dense layer",
                                POLICY_SIZE)

    wdl = fmt.value == ValueFormat.VALUE_WDL
    value_conv = read.conv(weights.message(W.VALUE), filters, 1, "value convolution")
    value_fc1 = read.dense(weights, W.IP1_VAL_W, W.IP1_VAL_B, value_conv.bias.size * 64, "value dense layer 1")
    value_fc2 = read.dense(weights, W.IP2_VAL_W, W.IP2_VAL_B, value_fc1.bias.size, "value dense layer 2",
                           3 if wdl else 1)
    return Lc0Network(
        activation="mish" if fmt.activation == DefaultActivation.DEFAULT_ACTIVATION_MISH else "relu",
        input=stem, tower=tower, policy_head=policy_head, policy_conv=policy_conv, policy_out=policy_out,
        value_conv=value_conv, value_fc1=value_fc1, value_fc2=value_fc2, wdl=wdl,
        moves_left=fmt.moves_left == MovesLeftFormat.MOVES_LEFT_V1)


# ------------------------------------------------------------------------------------------------------ files
def is_lc0_weights(path: Union[str, os.PathLike]) -> bool:
    """Whether ``path`` should be read as an lc0 weight file: by its extension, else by its first bytes (gzip, or
    a protobuf starting with lc0's magic field; an ONNX model starts otherwise)."""
    if str(path).lower().endswith(FILE_SUFFIXES):
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(2)
    except OSError:
        return False  # the ONNX loader reports it
    return head == GZIP_MAGIC or head[:1] == bytes([NET_FIRST_BYTE])


def read_file(path: Union[str, os.PathLike]) -> bytes:
    """The bytes of ``path``; a file that cannot be read raises EvaluatorError."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise EvaluatorError(f"cannot read the file ({exc.strerror or exc})") from None
