"""lc0 nets converted to ONNX files on disk: ``arbor net convert``'s output, and the cache that lets a second
start load an lc0 weight file as fast as an ONNX file.

Converted nets are cached in the user's cache folder under the SHA-256 of the weight file's content and the
converter's version, written atomically, so no reader ever sees a partial file. The 8-bit copies of
:mod:`engine.evaluators.quantize` are kept in the same folder, written the same way.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Union

from .lc0_onnx import CONVERTER_VERSION, build_onnx, convert
from .lc0_weights import Lc0Network, parse, read_file


def convert_file(source: Union[str, os.PathLike], target: Union[str, os.PathLike]) -> Lc0Network:
    """Convert the lc0 weight file ``source`` into the ONNX file ``target`` (written atomically); returns the net."""
    net = parse(read_file(source))
    write_atomically(Path(target), build_onnx(net).SerializeToString())
    return net


def cache_dir() -> Path:
    """Where converted nets are kept: ``%LOCALAPPDATA%\\arbor\\cache`` on Windows, ``~/Library/Caches/arbor`` on
    macOS, ``$XDG_CACHE_HOME/arbor`` (default ``~/.cache/arbor``) elsewhere."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA")
        return Path(base) / "arbor" / "cache" if base else Path.home() / "AppData" / "Local" / "arbor" / "cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "arbor"
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base and os.path.isabs(base) else Path.home() / ".cache") / "arbor"


def cache_path(raw: bytes) -> Path:
    """The cache file of the conversion of a weight file with content ``raw``."""
    digest = hashlib.sha256(raw).hexdigest()
    return cache_dir() / f"lc0-{digest}.v{CONVERTER_VERSION}.onnx"


def onnx_for(path: Union[str, os.PathLike], refresh: bool = False) -> Union[str, bytes]:
    """The ONNX model of lc0 weight file ``path``: the cached file's path, converting on a miss (or when
    ``refresh``). When the cache cannot be written, the model's bytes. Raises EvaluatorError."""
    raw = read_file(path)
    target = cache_path(raw)
    if target.is_file() and not refresh:
        return str(target)
    model = convert(raw)
    try:
        write_atomically(target, model)
    except OSError:
        return model  # a read-only home: convert at every start rather than fail
    return str(target)


def write_atomically(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` so that no reader ever sees a partial file (temporary file, then rename)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
