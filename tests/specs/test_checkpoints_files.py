"""Checkpoint folders read by their safetensors headers (llm_cost.specs.checkpoint,
llm_cost.analyses.checkpoint): stored totals, bytes, scale tensors, and the tensors the config does
not explain or misses. The files are written here with the safetensors library; the expected
totals are the element counts of the arrays written, not anything the structure computes."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
st = pytest.importorskip("safetensors.numpy")

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "vocab_size": 64,
    "hidden_size": 16,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 32,
    "max_position_embeddings": 128,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def _tensors() -> dict:
    """A tiny Llama checkpoint with the names transformers' LlamaForCausalLM saves."""
    f16 = np.float16
    t = {
        "model.embed_tokens.weight": np.zeros((64, 16), f16),
        "model.norm.weight": np.zeros(16, f16),
        "lm_head.weight": np.zeros((64, 16), f16),
    }
    for i in range(2):
        p = f"model.layers.{i}"
        for name, shape in (
            ("self_attn.q_proj", (16, 16)),
            ("self_attn.k_proj", (8, 16)),
            ("self_attn.v_proj", (8, 16)),
            ("self_attn.o_proj", (16, 16)),
            ("mlp.gate_proj", (32, 16)),
            ("mlp.up_proj", (32, 16)),
            ("mlp.down_proj", (16, 32)),
        ):
            t[f"{p}.{name}.weight"] = np.zeros(shape, f16)
        t[f"{p}.input_layernorm.weight"] = np.zeros(16, f16)
        t[f"{p}.post_attention_layernorm.weight"] = np.zeros(16, f16)
    return t


def _folder(path: Path, tensors: dict, shards: int = 1) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(CONFIG))
    names = sorted(tensors)
    if shards == 1:
        st.save_file(tensors, str(path / "model.safetensors"))
        return path
    weight_map = {}
    for k in range(shards):
        part = {n: tensors[n] for n in names[k::shards]}
        fname = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        st.save_file(part, str(path / fname))
        weight_map.update(dict.fromkeys(part, fname))
    total = sum(a.nbytes for a in tensors.values())
    (path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map})
    )
    return path


def _elements(tensors: dict) -> int:
    return sum(a.size for a in tensors.values())


def test_matching_checkpoint(cli, tmp_path):
    t = _tensors()
    r = cli("params", str(_folder(tmp_path / "ckpt", t)), "--json")
    assert r.code == 0
    c = r.json()["checkpoint"]
    assert (
        c["stored_params"] == c["described_params"] == r.json()["total_params"] == _elements(t) == 6_736
    )  # 2 x 64 x 16 + 16 + 2 x (256 + 2 x 128 + 256 + 3 x 512 + 32)
    assert c["stored_bytes"] == 2 * _elements(t) and c["by_dtype"] == {"F16": [6_736, 13_472]}
    assert c["unexplained"] == [] and c["missing"] == []
    out = cli("params", str(tmp_path / "ckpt")).out
    assert "every stored tensor is explained and none is missing" in out


def test_sharded_index_is_followed(cli, tmp_path):
    t = _tensors()
    c = cli("params", str(_folder(tmp_path / "ckpt", t, shards=3)), "--json").json()["checkpoint"]
    assert c["files"] == 3 and c["tensors"] == len(t) and c["index_total_size"] == 2 * _elements(t)
    assert c["stored_params"] == _elements(t)


def test_extra_and_missing_tensors_are_named(cli, tmp_path):
    t = _tensors()
    t["model.layers.0.mlp.extra_proj.weight"] = np.zeros((4, 16), np.float16)
    del t["lm_head.weight"]
    c = cli("params", str(_folder(tmp_path / "ckpt", t)), "--json").json()["checkpoint"]
    assert c["unexplained"] == [{"role": "layers: extra_proj", "stored": 64, "described": 0}]
    assert c["missing"] == [{"role": "lm_head", "stored": 0, "described": 1_024}]
    out = cli("params", str(tmp_path / "ckpt")).out
    assert "not explained: layers: extra_proj" in out and "missing: lm_head" in out


def test_fp8_scales_are_not_parameters(cli, tmp_path):
    """An FP8 checkpoint: weights as one byte each, a float32 weight_scale_inv per block beside them."""
    t = _tensors()
    t["model.layers.0.self_attn.q_proj.weight"] = np.zeros((16, 16), np.uint8)  # stands in for F8_E4M3 bytes
    t["model.layers.0.self_attn.q_proj.weight_scale_inv"] = np.zeros((1, 1), np.float32)
    c = cli("params", str(_folder(tmp_path / "ckpt", t)), "--json").json()["checkpoint"]
    assert (c["scale_tensors"], c["scale_elements"], c["scale_bytes"]) == (1, 1, 4)
    assert c["stored_params"] == 6_736 and c["stored_bytes"] == 2 * 6_736 - 256
    assert c["unexplained"] == []


def test_only_the_header_is_read(tmp_path):
    """A header promising more data than the file has is refused by name; a valid header over a data
    section that is never decoded reads fine (the weights are not parsed)."""
    from llm_cost.core.errors import SpecError
    from llm_cost.specs.checkpoint import read_safetensors_header

    header = json.dumps({"w": {"dtype": "BF16", "shape": [1000, 1000], "data_offsets": [0, 2_000_000]}}).encode()
    bad = tmp_path / "short.safetensors"
    bad.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 10)
    with pytest.raises(SpecError, match=r"short\.safetensors: tensor 'w' ends at byte 2,000,000 of a 10-byte"):
        read_safetensors_header(bad)
    good = tmp_path / "big.safetensors"
    with good.open("wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.truncate(8 + len(header) + 2_000_000)  # a sparse data section nobody reads
    [t] = read_safetensors_header(good)
    assert (t.name, t.dtype, t.shape, t.nbytes) == ("w", "BF16", (1000, 1000), 2_000_000)


@pytest.mark.parametrize(
    "content,message",
    [
        (b"\x01\x02", r"not a safetensors file \(2 bytes"),
        (struct.pack("<Q", 10**12) + b"{}", r"header length 1,000,000,000,000 exceeds"),
        (struct.pack("<Q", 5) + b"{nope", r"header is not valid JSON"),
    ],
)
def test_malformed_headers_exit_2(cli, tmp_path, content, message):
    import re

    folder = _folder(tmp_path / "ckpt", {})
    (folder / "model.safetensors").write_bytes(content)
    r = cli("params", str(folder))
    assert r.code == 2 and re.search(message, r.err) and r.err.strip().count("\n") == 0


def test_missing_shard_is_named(cli, tmp_path):
    folder = _folder(tmp_path / "ckpt", _tensors(), shards=2)
    (folder / "model-00002-of-00002.safetensors").unlink()
    r = cli("params", str(folder))
    assert r.code == 2 and "shard model-00002-of-00002.safetensors is missing" in r.err


@pytest.mark.parametrize("total", [-5, 1.5, "12", True])
def test_an_index_total_size_that_is_no_byte_count_is_refused(cli, tmp_path, total):
    """issue 36 item 12: ``"total_size": -5`` was printed as ``"index_total_size": -5``."""
    folder = _folder(tmp_path / "ckpt", _tensors(), shards=2)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    index["metadata"]["total_size"] = total
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    r = cli("params", str(folder), "--json")
    assert r.code == 2 and "metadata.total_size must be a byte count, an integer >= 0" in r.err
