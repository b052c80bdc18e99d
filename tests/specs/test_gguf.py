"""GGUF files as MODEL (llm_cost.specs.gguf): metadata -> spec, bytes per quantisation type, fit.

The file is written here with llama.cpp's gguf package; every expected number below is arithmetic
on the tensors written (elements, and ggml block sizes: Q8_0 = 34 bytes per 32 values, Q4_K = 144
bytes per 256), not something llm-cost computes."""

from __future__ import annotations

from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
gguf = pytest.importorskip("gguf")

D, V, FF = 256, 64, 512
Q8 = lambda n: n // 32 * 34  # noqa: E731  bytes of n Q8_0 values
Q4K = lambda n: n // 256 * 144  # noqa: E731  bytes of n Q4_K values
# name -> (rows, cols, type); cols is ggml's ne0
TENSORS = {
    "token_embd.weight": (V, D, "F16"),
    "blk.0.attn_norm.weight": (1, D, "F32"),
    "blk.0.attn_q.weight": (D, D, "Q4_K"),
    "blk.0.attn_k.weight": (128, D, "Q4_K"),
    "blk.0.attn_v.weight": (128, D, "Q8_0"),
    "blk.0.attn_output.weight": (D, D, "Q4_K"),
    "blk.0.ffn_norm.weight": (1, D, "F32"),
    "blk.0.ffn_gate.weight": (FF, D, "Q4_K"),
    "blk.0.ffn_up.weight": (FF, D, "Q4_K"),
    "blk.0.ffn_down.weight": (D, FF, "Q8_0"),
    "output_norm.weight": (1, D, "F32"),
    "output.weight": (V, D, "Q8_0"),
}


def _write(path: Path, tensors=TENSORS, arch="llama", heads=(4, 2), ff=FF, blocks=1, width=None, experts=0) -> Path:
    Q = gguf.GGMLQuantizationType
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name("Tiny Llama GGUF")
    w.add_block_count(blocks)
    w.add_context_length(32768)
    w.add_embedding_length(width or D)
    if experts:
        w.add_expert_count(experts)
        w.add_expert_used_count(2)
    w.add_feed_forward_length(ff)
    w.add_head_count(heads[0])
    w.add_head_count_kv(heads[1])
    w.add_rope_freq_base(500000.0)
    for name, (rows, cols, kind) in tensors.items():
        if kind == "F32":
            w.add_tensor(name, np.zeros(cols if rows == 1 else (rows, cols), np.float32))
        elif kind == "F16":
            w.add_tensor(name, np.zeros((rows, cols), np.float16))
        else:
            per_row = Q8(cols) if kind == "Q8_0" else Q4K(cols)
            w.add_tensor(name, np.zeros((rows, per_row), np.uint8), raw_dtype=getattr(Q, kind))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _expected():
    by = {}
    for rows, cols, kind in TENSORS.values():
        n = rows * cols
        b = {"F32": 4 * n, "F16": 2 * n, "Q8_0": Q8(n), "Q4_K": Q4K(n)}[kind]
        row = by.setdefault(kind, [0, 0])
        row[0] += n
        row[1] += b
    return by


def test_params_reports_bytes_per_quant_type(cli, tmp_path):
    path = _write(tmp_path / "tiny-llama.Q4_K_M.gguf")
    r = cli("params", str(path), "--json")
    assert r.code == 0
    j = r.json()
    by = _expected()
    elements = sum(n for n, _ in by.values())
    assert j["total_params"] == elements == 623_360
    c = j["checkpoint"]
    assert {k: v for k, v in c["by_dtype"].items()} == {k: [n, b] for k, (n, b) in by.items()}
    assert c["stored_bytes"] == sum(b for _, b in by.values()) == j["weight_bytes"]
    assert c["unexplained"] == [] and c["missing"] == []
    out = cli("params", str(path)).out
    assert "Q4_K" in out and "Q8_0" in out and "Tiny Llama GGUF" in out


def test_fit_uses_the_file_bytes(cli, tmp_path):
    """fit on an RTX 4090 at 32K with a q8_0-sized (8-bit) KV cache: weights are the file's tensor
    bytes exactly; KV is 2 x 1 layer x 2 KV heads x 64 x 32,768 tokens x 1 byte (the datasheet's
    24 GB as 10^9 B, all of it: --memory datasheet)."""
    path = _write(tmp_path / "tiny.gguf")
    r = cli(
        "fit",
        str(path),
        "--gpu",
        "rtx-4090",
        "--context",
        "32K",
        "--kv-dtype",
        "int8",
        "--memory",
        "datasheet",
        "--json",
    )
    assert r.code == 0, r.err
    fit = r.json()["single_gpu"]
    assert fit["weight_bytes"] == sum(b for _, b in _expected().values()) == 466_944
    assert fit["kv_bytes_per_token"] == 2 * 1 * 2 * 64 * 1
    assert fit["max_batch_at_context"] == (24_000_000_000 - 466_944) // (256 * 32_768)
    assert fit["fits"] is True


def test_tied_head_and_unknown_architecture(cli, tmp_path):
    tied = {k: v for k, v in TENSORS.items() if k != "output.weight"}
    r = cli("params", str(_write(tmp_path / "tied.gguf", tied)), "--json")
    assert r.code == 0 and r.json()["total_params"] == 623_360 - V * D
    r = cli("params", str(_write(tmp_path / "rwkv.gguf", arch="rwkv6")))
    assert r.code == 2 and "GGUF architecture 'rwkv6' is not mapped; supported: llama, qwen2, qwen3" in r.err


def test_bad_gguf_files_exit_2(cli, tmp_path):
    (tmp_path / "junk.gguf").write_bytes(b"not a gguf file at all")
    r = cli("params", str(tmp_path / "junk.gguf"))
    assert r.code == 2 and "junk.gguf: not a readable GGUF file" in r.err and r.err.strip().count("\n") == 0
    r = cli("params", str(tmp_path / "absent.gguf"))
    assert r.code == 2 and "absent.gguf: no such file" in r.err


@pytest.mark.parametrize(
    "heads,ff,problem",
    [
        ((4, 3), FF, "field attention.gqa: num_attention_heads (4) must be a multiple of num_key_value_heads (3)"),
        ((2**17, 2**17), FF, "field attention.gqa.num_attention_heads: Input should be less than or equal to 65536"),
        ((4, 2), 2**21, "field mlp.intermediate_size: Input should be less than or equal to 1048576"),
    ],
)
def test_gguf_metadata_out_of_the_schema_names_the_field(cli, tmp_path, heads, ff, problem):
    r = cli("params", str(_write(tmp_path / "bad.gguf", heads=heads, ff=ff)))
    assert r.code == 2 and "bad.gguf: invalid spec: " + problem in r.err and r.err.strip().count("\n") == 0


def test_a_block_count_the_tensors_disagree_with_is_refused_naming_both(tmp_path):
    """issue 36 item 12: llama.block_count says 1, the tensors hold blocks 0 and 1."""
    from llm_cost.core.errors import SpecError
    from llm_cost.specs.gguf import load_gguf

    extra = {k.replace("blk.0.", "blk.1."): v for k, v in TENSORS.items() if k.startswith("blk.0.")}
    path = _write(tmp_path / "two-blocks.gguf", {**TENSORS, **extra})
    with pytest.raises(SpecError, match=r"llama\.block_count is 1, but the tensors \(blk\.N\.\*\) hold blocks 0\.\.1"):
        load_gguf(path)


@pytest.mark.parametrize("blocks", [10_001, 4_000_000_000])
def test_a_block_count_outside_what_a_model_has_is_one_line_at_once(cli, tmp_path, blocks):
    """An attack: llama.block_count 4,000,000,000 in a 175 KB file ran 91 s and took 24 GB before
    it was killed (the blocks' set was built before any cap); now one line, exit 2, before that."""
    r = cli("params", str(_write(tmp_path / "many.gguf", blocks=blocks)))
    assert r.code == 2 and r.err.strip().count("\n") == 0
    assert f"llama.block_count is {blocks:,}; a model has 1 to 10,000 blocks" in r.err


@pytest.mark.parametrize(
    "change, message",
    [
        ({"width": 2 * D}, f"llama.embedding_length is {2 * D:,}, but token_embd.weight holds rows of {D:,}"),
        ({"experts": 8}, "llama.expert_count is 8, but no tensor holds experts (blk.N.ffn_*_exps)"),
    ],
    ids=["embedding-length", "expert-count"],
)
def test_metadata_the_tensors_contradict_is_refused_naming_both(cli, tmp_path, change, message):
    """An attack: embedding_length twice the embedding's rows gave half the vocabulary and a model
    the tensors do not hold; expert_count 8 over dense FFN tensors an 8-expert MoE at 3.23 bits.
    Like a block_count the blocks contradict, each is one line naming both."""
    r = cli("params", str(_write(tmp_path / "contradicts.gguf", **change)))
    assert r.code == 2 and message in r.err and r.err.strip().count("\n") == 0
