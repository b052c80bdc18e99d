"""AWQ and GPTQ checkpoints, weighed as their config.json says (a new user's trial: an AWQ config
of Llama-3.1-70B was weighed at 16 bits, 141.11 GB, without a word).

The by-hand figures follow AutoAWQ's WQLinear_GEMM and GPTQ's QuantLinear tensors (AutoAWQ
awq/modules/linear/gemm.py; GPTQModel / AutoGPTQ qlinear): per [out, in] matrix, ``qweight`` packs
the weights at ``bits``; per group of ``group_size`` input rows and per output channel, ``scales``
holds an FP16 value and ``qzeros`` a zero point packed at ``bits``. Llama-3.1-70B's matmul inputs
(8,192 and 28,672) are multiples of 128, so at 4 bits every quantized matrix is 4 + 20 / 128 =
4.15625 bits per weight; its 80 layers hold 80 x (2 x 8,192^2 + 2 x 8,192 x 1,024 + 3 x 8,192 x
28,672) = 68,451,041,280 matmul weights, and the embedding, LM head and norms 2,102,665,216 more
(70,553,706,496 in all, the Hub's total the catalog tests)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

import llm_cost
from llm_cost.specs import catalog

LLAMA_70B = catalog.config_file("llama3.1-70b")
MATMUL = 68_451_041_280
OTHER = 2_102_665_216

#: An AutoAWQ checkpoint's quantization_config: the keys and values transformers' AWQ guide quotes from
#: TheBloke/zephyr-7B-alpha-AWQ's config.json (docs/source/en/quantization/awq.md: quant_method awq,
#: zero_point true, group_size 128, bits 4, version gemm), with AutoAWQ's later modules_to_not_convert
#: (null). Set into Llama-3.1-70B's verbatim config.json (the catalog's): a constructed input, whose
#: independent value is the by-hand sum of AutoAWQ's tensors above, not a published checkpoint's total.
AWQ = {"bits": 4, "group_size": 128, "modules_to_not_convert": None, "quant_method": "awq", "version": "gemm",
       "zero_point": True}  # fmt: skip


def _config(tmp: Path, quantization: dict) -> str:
    data = json.loads(LLAMA_70B.read_text(encoding="utf-8"))
    data["quantization_config"] = quantization
    path = tmp / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_awq_int4_group_128_by_hand(tmp_path):
    r = llm_cost.params(llm_cost.load_model(_config(tmp_path, AWQ)))
    assert r.total_params == MATMUL + OTHER
    expected_bits = MATMUL * (4 + Fraction(20, 128)) + OTHER * 16
    assert r.weight_bytes == expected_bits / 8 == 39_767_785_472


def test_gptq_int8_per_channel_by_hand(tmp_path):
    """GPTQ at 8 bits, group_size -1: one group per output channel, 8 + 24 / in bits per weight."""
    spec = llm_cost.load_model(
        _config(tmp_path, {"quant_method": "gptq", "bits": 8, "group_size": -1, "desc_act": True})
    )
    L, d, kv, ff = 80, 8192, 1024, 28672
    per_layer = (
        (2 * d * d + 2 * kv * d) * (8 + Fraction(24, d))  # q, k, v, o: in = d
        + 2 * ff * d * (8 + Fraction(24, d))  # gate, up: in = d
        + d * ff * (8 + Fraction(24, ff))  # down: in = d_ff
    )
    assert llm_cost.params(spec).weight_bytes == (L * per_layer + OTHER * 16) / 8


@pytest.mark.parametrize(
    "quantization",
    [
        {"quant_method": "awq", "bits": 3, "group_size": 128},
        {"quant_method": "awq", "bits": "four", "group_size": 128},
        {"quant_method": "bitsandbytes", "load_in_4bit": True},
    ],
    ids=["awq-3-bit", "awq-bits-text", "bitsandbytes"],
)
def test_a_format_not_modelled_is_weighed_at_torch_dtype_and_says_so(tmp_path, quantization):
    r = llm_cost.params(llm_cost.load_model(_config(tmp_path, quantization)))
    assert r.weight_bytes == (MATMUL + OTHER) * 2
    said = [c for c in r.conventions if c.code == "params.quantization_unread"]
    assert said and said[0].params["method"] == quantization["quant_method"]


@pytest.mark.parametrize(
    "quantization, message",
    [
        (
            {"quant_method": "gptq", "bits": 4, "group_size": 0},
            "quantization_config.group_size must be -1 (per channel) or at least 1 (got 0)",
        ),
        ({"quant_method": "awq", "bits": 4, "group_size": -2}, "quantization_config.group_size must be -1"),
        (
            {"quant_method": "awq", "bits": 0, "group_size": 128},
            "quantization_config.bits must be a bit width from 1 to 16 (got 0)",
        ),
        *(
            (
                {
                    "quant_method": "compressed-tensors",
                    "config_groups": {
                        "group_0": {
                            "targets": ["Linear"],
                            "weights": {"num_bits": 4, "type": "float", "group_size": size},
                        }
                    },
                },
                "config_groups.group_0.weights.group_size must be an integer, -1 (per channel) or at least 1",
            )
            for size in (0, -16, 1.5)  # an attacker's NVFP4 group sizes, read as an unmodelled group
        ),
    ],
    ids=["gptq-group-0", "awq-group-minus-2", "awq-0-bit", "nvfp4-group-0", "nvfp4-group-minus-16", "nvfp4-group-1.5"],
)
def test_a_value_no_checkpoint_has_is_refused_naming_the_key(cli, tmp_path, quantization, message):
    """An attack: bits 0 or group_size 0 (values no AWQ or GPTQ checkpoint can hold: AutoAWQ and
    GPTQ split each input row into groups of group_size, -1 for one per channel) had been weighed
    at 16 bits with a note in ``params`` only, and silently by every other command."""
    r = cli("fit", _config(tmp_path, quantization), "--gpu", "h100")
    assert r.code == 2 and message in r.err and r.err.strip().count("\n") == 0  # fmt: skip


def test_fit_says_a_format_it_weighs_at_torch_dtype_as_params_does(tmp_path):
    """An attack: a bitsandbytes 4-bit config was weighed at 16 bits by ``fit`` (141.1 GB for
    Llama-3.1-70B: its checkpoint total 70,553,706,496 x 2 B) with no word of it; ``params`` said
    so. Given a --weights-dtype, the format is the user's and nothing is said."""
    path = _config(tmp_path, {"quant_method": "bitsandbytes", "load_in_4bit": True})
    r = llm_cost.fit(path, "h200")
    assert r.single_gpu.weight_bytes == (MATMUL + OTHER) * 2
    said = [c for c in r.single_gpu.conventions if c.code == "params.quantization_unread"]
    assert said and said[0].params == {"method": "bitsandbytes", "dtype": "bf16"}
    given = llm_cost.fit(path, "h200", weights_dtype="int4")
    assert not any(c.code == "params.quantization_unread" for c in given.single_gpu.conventions)


def test_serve_and_roofline_say_a_format_they_weigh_at_torch_dtype(cli, tmp_path):
    """A helper's finding: ``serve`` and ``roofline`` read a bitsandbytes 4-bit Llama-3.1-70B's
    weights at 16 bits (its torch_dtype, bfloat16) without the word ``params``
    and ``fit`` print. Both now say it; given a --weights-dtype, nothing is said."""
    path = _config(tmp_path, {"quant_method": "bitsandbytes", "load_in_4bit": True})
    step = llm_cost.decode(path, "h100", batch=1, context=1024, layout=llm_cost.Layout(tp=8))
    said = [c for c in step.conventions if c.code == "params.quantization_unread"]
    assert said and said[0].params == {"method": "bitsandbytes", "dtype": "bf16"}
    assert step.weight_bits == 16  # the config's torch_dtype, not bitsandbytes' 4 bits
    prefill = llm_cost.prefill(path, "h100", seq=1024, layout=llm_cost.Layout(tp=8))
    assert any(c.code == "params.quantization_unread" for c in prefill.conventions)
    plan = llm_cost.serve(path, "h100", 1024, 128, gpus=8, analytic=True)
    assert any(c.code == "params.quantization_unread" for c in plan.conventions)
    given = llm_cost.decode(path, "h100", batch=1, context=1024, layout=llm_cost.Layout(tp=8), weights_dtype="int4")
    assert not any(c.code == "params.quantization_unread" for c in given.conventions)
    r = cli("roofline", path, "--gpu", "h100", "--tp", "8", "--batch", "1", "--context", "1024")
    assert r.code == 0 and "bitsandbytes" in r.out


def test_the_cli_prints_the_format(cli, tmp_path):
    out = cli("params", _config(tmp_path, AWQ))
    assert out.code == 0 and "weights at int4+bf16" in out.out and "39,767,785,472 B" in out.out


@pytest.mark.parametrize("fmt, says", [("fp4", True), ("fp8", True), ("nvfp4", False), ("int4", False)])
def test_a_plain_low_bit_format_says_it_counts_no_scales(fmt, says):
    """--weights-dtype fp4/fp8 weigh every parameter at the element's bits (the source documents'
    convention): Llama-3-8B at 4.02 GB in fp4, where an NVFP4 checkpoint with its scales and 16-bit
    embedding is about 6 GB (a new user's trial); the result says so and names the formats with scales."""
    r = llm_cost.params("llama3-8b", weights_dtype=fmt)
    assert any(c.code == "params.no_scales" for c in r.conventions) == says
