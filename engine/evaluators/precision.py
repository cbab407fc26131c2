"""``NetworkPrecision auto``: whether this CPU has 8-bit dot products, which make the int8 tower pay.

onnxruntime runs an int8 convolution faster than a float one only where the CPU multiplies and adds 8-bit numbers
in one instruction: x86's VNNI (``avx512_vnni``, or ``avx_vnni`` on CPUs without AVX-512) and Arm's dot product
(``asimddp``). Elsewhere int8 is no faster and a little less exact, so ``auto`` keeps the float net. Where the CPU
cannot be read (no ``/proc/cpuinfo``, Windows), ``auto`` means float: a slower net is better than a wrong guess.
"""

from __future__ import annotations

import platform
import sys
from functools import lru_cache

#: CPU flags (as Linux's /proc/cpuinfo names them) of an 8-bit dot-product instruction onnxruntime uses.
INT8_DOT_PRODUCT_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "asimddp"})
CPUINFO = "/proc/cpuinfo"
#: The vector arithmetic onnxruntime's kernels choose between, widest first: (CPU flag, its usual name).
VECTOR_EXTENSIONS = (("avx512_vnni", "AVX-512 VNNI"), ("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"),
                     ("asimddp", "NEON dot product"), ("asimd", "NEON"))


def cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The flags of ``/proc/cpuinfo``'s text: x86's ``flags`` lines and Arm's ``Features`` lines."""
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            flags.update(value.split())
    return frozenset(flags)


@lru_cache(maxsize=1)
def _first_processor() -> str:
    """``/proc/cpuinfo``'s block for the first processor ('' where there is none): every core has the same flags."""
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as f:
            return f.read().split("\n\n", 1)[0]
    except OSError:
        return ""


@lru_cache(maxsize=1)
def int8_dot_products() -> bool:
    """Whether this CPU has an 8-bit dot-product instruction (read once per process)."""
    if sys.platform == "darwin" and platform.machine() == "arm64":
        return True  # every Apple silicon CPU has Arm's dot product
    return bool(cpu_flags(_first_processor()) & INT8_DOT_PRODUCT_FLAGS)


@lru_cache(maxsize=1)
def cpu_signature() -> str:
    """This CPU's model and flags, or the platform's words for it: what tells one CPU's arithmetic from another's,
    for keys of things measured on it."""
    lines = [line for line in _first_processor().splitlines()
             if line.partition(":")[0].strip().lower() in ("model name", "flags", "features", "cpu part")]
    return "\n".join(lines) if lines else f"{platform.machine()} {platform.processor()}"


@lru_cache(maxsize=1)
def cpu_description() -> str:
    """This CPU in a few words, its model and widest vector arithmetic ("AMD EPYC, AVX2"): the machine a measured speed
    or match result names, since the network's nodes a second turn on that arithmetic (the same engine searched a
    third of the nodes on an AVX2 EPYC that it searched on an AVX-512 VNNI one)."""
    block = _first_processor()
    model = next((line.partition(":")[2] for line in block.splitlines()
                  if line.partition(":")[0].strip().lower() == "model name"), "") or platform.processor()
    model = " ".join(model.replace("(R)", "").replace("(TM)", "").split()) or platform.machine() or "unknown CPU"
    flags = cpu_flags(block)
    widest = next((name for flag, name in VECTOR_EXTENSIONS if flag in flags), "")
    return f"{model}, {widest}" if widest else model
