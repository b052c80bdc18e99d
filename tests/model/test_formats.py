"""Weight formats: block-scaled formats against their specifications, and checkpoints whose tensor
groups differ in format (quantization_config) against the bytes the checkpoints hold.

Sources of the checkpoint figures (each independent of this tool's tensor list):

* openai/gpt-oss-120b: the Hub's safetensors parameter counts by dtype, BF16 2,167,371,072 and
  114,661,785,600 FP4 values in U8 blocks (untraced index reference 57890337346; untraced index reference 71083239225; the Hub API as
  quoted in github.com/scttfrdmn/cultivar internal/model/model_test.go @ 9160bc1c21b9 counts the U8 blocks and scales together, 118,244,966,400 =
  114,661,785,600 + 3,583,180,800 scales); tensor bytes of its 15 shards 65,248,815,744, the shard
  files 65,248,893,184 B with their headers (github.com/milkinfrastructure/milk-harness deploy/teacher/gpt-oss-120b/test_runtime.py @ 314444004492, a vLLM deployment's model inventory);
  the model card's "60.8 GiB" (= 65.25e9 B).
* openai/gpt-oss-20b: BF16 1,804,459,584 + 19,110,297,600 FP4 values, shard files 13,761,316,904 B
  (tests/fixtures/hf/CHECKPOINTS.yaml, gpt-oss-20b).
* deepseek-ai/DeepSeek-V3: the Hub's safetensors counts BF16 3,918,786,560, F8_E4M3 680,571,043,840,
  F32 41,555,600 over every tensor (main model, MTP layer, FP32 scales and correction biases;
  tests/fixtures/hf/CHECKPOINTS.yaml, deepseek-v3: github.com/KinChow/model-structure-viewer, the design document 'msv 演进设计方案' v6 of 2026-09-04, path not resolved; untraced index reference 58758039937).

The gpt-oss-120b config (tests/fixtures/formats/gpt-oss-120b/config.json) is the gpt-oss-20b
fixture with the 120b's 36 layers (alternating sliding and full attention) and 128 experts, as the
model card and the Hub page list them; every other key is the same in both configs.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

import llm_cost
from llm_cost.api import choices
from llm_cost.core.types import Dtype, OpRole, WeightFormat, block_scaled_bits, stored_weight_bits
from llm_cost.model.formats import MixedBits, checkpoint_bits, tensor_bits
from llm_cost.model.layout import Layout, per_gpu
from llm_cost.model.params import count_params
from llm_cost.model.structure import build
from llm_cost.specs.hf import load_hf_config
from llm_cost.specs.hf.quantization import read_quantization
from llm_cost.specs.load import load_gpu, load_model
from llm_cost.workload.step import build_step, decode

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GPT_OSS_120B = FIXTURES / "formats" / "gpt-oss-120b" / "config.json"
GPT_OSS_20B = FIXTURES / "hf" / "gpt-oss-20b" / "config.json"
DEEPSEEK_V3 = FIXTURES / "hf" / "deepseek-v3" / "config.json"


# -- the formats -------------------------------------------------------------------------------------


def test_block_scaled_formats_as_their_specifications_define_them():
    """MXFP4 (OCP Microscaling Formats v1.0 §5: k = 32 FP4 E2M1 elements share one 8-bit E8M0
    scale): 4 + 8/32 = 4.25 bits. NVFP4 (NVIDIA: 16 FP4 values share an FP8 E4M3 scale, plus one FP32
    scale per tensor): 4 + 8/16 = 4.5 bits, and 32 bits a tensor. FP8 with 128 x 128 block scales
    (DeepSeek-V3: an FP32 weight_scale_inv per block): 8 + 32/16,384 bits."""
    assert stored_weight_bits("mxfp4", None) == Fraction(17, 4)
    assert stored_weight_bits("nvfp4", None) == Fraction(9, 2)
    assert stored_weight_bits("fp8_block", None) == 8 + Fraction(32, 128 * 128)
    # on a shape: a 4,096 x 4,096 NVFP4 matrix holds 4,096 x 256 FP8 scales and one FP32 scale
    assert block_scaled_bits(WeightFormat.NVFP4, (4096, 4096)) == 4 + Fraction(4096 * 256 * 8 + 32, 4096 * 4096)
    # DeepSeek-V3's kv_a_proj_with_mqa [576, 7,168]: ceil(576/128) = 5 x 56 blocks, the last row partial
    assert block_scaled_bits(WeightFormat.FP8_BLOCK, (576, 7168)) == 8 + Fraction(5 * 56 * 32, 576 * 7168)
    assert WeightFormat.MXFP4.element is Dtype.FP4 and WeightFormat.FP8_BLOCK.element is Dtype.FP8


def test_weights_dtype_takes_a_block_scaled_format():
    """--weights-dtype nvfp4 stores Llama-3-8B as NVFP4 checkpoints do: its 224 matmul weights
    (6,979,321,856 elements, the LM head apart) at 4 bits, an FP8 scale per 16 elements and an FP32
    scale per tensor; the embedding and LM head (525,336,576 each) and the 266,240 norm weights in
    BF16. With quantize_embeddings every one of the 8,030,261,248 parameters is at 4.5 bits."""
    matmul, vocab_rows, norms = 6_979_321_856, 525_336_576, 266_240
    expected = matmul // 2 + matmul // 16 + 224 * 4 + 2 * vocab_rows * 2 + norms * 2
    r = llm_cost.params("llama3-8b", "nvfp4")
    assert r.weight_bytes == expected == 6_027_748_224
    assert llm_cost.params("llama3-8b", "nvfp4", quantize_embeddings=True).weight_bytes == 8_030_261_248 * 9 // 16


def test_fp8_block_as_a_flag_weighs_what_deepseek_v3s_checkpoint_does():
    """DeepSeek-V3's config.json declares FP8 with 128 x 128 blocks and keeps the embedding and LM
    head in BF16; asking fp8_block for it must weigh exactly what reading that config does."""
    assert llm_cost.params("deepseek-v3", "fp8_block").weight_bytes == llm_cost.params("deepseek-v3").weight_bytes


# -- checkpoints with formats by group ---------------------------------------------------------------


def test_gpt_oss_120b_weighs_its_experts_in_mxfp4():
    """gpt-oss-120b: quantization_config mxfp4 keeps self_attn, the router, the embedding and the LM
    head in BF16 (modules_to_not_convert). Its 116,829,156,672 parameters are 2,167,371,072 in BF16
    and 114,661,785,600 expert weights in MXFP4 (17/32 B each): 4,334,742,144 + 60,914,073,600 =
    65,248,815,744 B, the checkpoint's tensor bytes (60.77 GiB: the model card's 60.8 GiB)."""
    bf16, fp4 = 2_167_371_072, 114_661_785_600
    r = llm_cost.params(str(GPT_OSS_120B))
    assert r.total_params == bf16 + fp4 == 116_829_156_672
    assert r.routed_expert_params == 36 * 128 * 3 * 2880 * 2880 == fp4  # their biases are with the vectors
    assert r.weight_bytes == 2 * bf16 + fp4 * 17 // 32 == 65_248_815_744
    assert 65_248_893_184 - r.weight_bytes < 100_000  # the shard files: tensors + JSON headers
    assert r.dtype == "mxfp4+bf16"


def test_gpt_oss_20b_checkpoint_bytes():
    """gpt-oss-20b: 1,804,459,584 BF16 x 2 B + 19,110,297,600 MXFP4 x 17/32 B = 13,761,264,768 B, within
    the shard files' 13,761,316,904 B (three headers)."""
    r = llm_cost.params(str(GPT_OSS_20B))
    assert r.weight_bytes == 1_804_459_584 * 2 + 19_110_297_600 * 17 // 32 == 13_761_264_768
    assert 0 < 13_761_316_904 - r.weight_bytes < 100_000


def test_deepseek_v3_checkpoint_bytes_with_block_scales():
    """DeepSeek-V3 (quant_method fp8, weight_block_size [128, 128]), every stored tensor: the Hub's
    counts give 3,918,786,560 x 2 + 680,571,043,840 x 1 + 41,555,600 x 4 = 688,574,839,360 B. The
    F32 tensors are the block scales and the 59 routers' correction biases (256 each), which the
    checkpoint keeps in FP32 and this tool weighs with the other vectors in BF16: 15,104 x 2 B less.
    The shipped spec and its config.json agree."""
    hub = 3_918_786_560 * 2 + 680_571_043_840 + 41_555_600 * 4
    for spec in (load_hf_config(DEEPSEEK_V3), load_model("deepseek-v3")):
        bits = checkpoint_bits(spec)
        every = sum(t.total * tensor_bits(bits, t) for t in build(spec).tensors) / 8
        assert every == hub - 59 * 256 * 2 == 688_574_809_152
    # the main model alone (no MTP layer): its embedding and LM head in BF16, not FP8
    main = llm_cost.params("deepseek-v3")
    assert main.total_params == 671_026_419_200
    assert main.weight_bytes > main.total_params + 2 * 926_679_040  # + 1 B more per element of each table


def test_kimi_k2_checkpoint_bytes_with_block_scales():
    """Kimi-K2-Instruct (FP8, 128 x 128 blocks; 1 dense + 60 MoE layers of 384 experts): a recount of
    its 61 shard headers gives 1,029,173,256,720 payload bytes (tests/fixtures/hf/CHECKPOINTS.yaml,
    untraced index reference 68577105039). Weighed here: 52,912 B less, which is the 60 routers' correction
    biases (384 each) that the checkpoint keeps in FP32 (60 x 384 x 2 B) and the 3,416 elements the
    Hub's total holds above the logical parameters (3,416 x 2 B)."""
    spec = load_hf_config(FIXTURES / "hf" / "kimi-k2-instruct" / "config.json")
    bits = checkpoint_bits(spec)
    every = sum(t.total * tensor_bits(bits, t) for t in build(spec).tensors) / 8
    assert 1_029_173_256_720 - every == 60 * 384 * 2 + 3_416 * 2


def test_mixed_bits_per_gpu_under_expert_parallelism():
    """gpt-oss-120b over EP 4 (TP 4): each GPU holds 32 of the 128 experts in MXFP4 (36 x 32 x 3 x
    2,880^2 x 17/32 B; their biases are vectors, in BF16) and a quarter of the attention, embedding
    and LM head in BF16."""
    spec = load_hf_config(GPT_OSS_120B)
    held = per_gpu(spec, Layout(tp=4, ep=4), checkpoint_bits(spec))
    assert held.expert_bytes[0] == 36 * 32 * 3 * 2880 * 2880 * 17 // 32
    attention = 36 * 26_542_080 // 4 * 2
    tables = 2 * 201_088 * 2880 // 4 * 2
    assert held.weight_bytes[0] > held.expert_bytes[0] + attention + tables


def test_decode_reads_bf16_attention_and_mxfp4_experts():
    """One token of gpt-oss-120b reads, per layer: q/k/v/o (2,880 x (4,096 + 512 + 512) + 4,096 x
    2,880 = 26,542,080 weights) and the router (128 x 2,880) in BF16, and its 4 experts (3 x 2,880^2
    each) in MXFP4; then the LM head (201,088 x 2,880) and one embedding row in BF16, and every vector
    once (per layer 2 norms 5,760, attention biases 8,000, sinks 64, router bias 128, expert biases
    128 x 8,640; the final norm 2,880)."""
    spec = load_hf_config(GPT_OSS_120B)
    step = build_step(spec, decode(1, 0), weight_bits=checkpoint_bits(spec))
    vectors = 36 * (5760 + 8000 + 64 + 128 + 128 * 8640) + 2880
    bf16 = 36 * (26_542_080 + 128 * 2880) + 201_088 * 2880 + 2880 + vectors
    mxfp4 = 36 * 4 * 3 * 2880 * 2880
    assert float(step.total("weight_bytes")) == pytest.approx(2 * bf16 + mxfp4 * 17 / 32, rel=1e-12)
    routed = [op for op in step.ops if op.role == OpRole.ROUTED_EXPERTS]
    assert sum(float(op.weight_bytes) for op in routed) == pytest.approx(mxfp4 * 17 / 32, rel=1e-12)


def test_fit_of_gpt_oss_120b_on_one_h100():
    """The model card: gpt-oss-120b in its MXFP4 checkpoint fits one 80 GB GPU."""
    f = llm_cost.fit(str(GPT_OSS_120B), "h100", 8192).single_gpu
    assert f.weight_bytes == 65_248_815_744
    assert f.fits and f.max_batch_at_context >= 1


def test_mixed_bits_is_a_cache_key_of_its_own():
    """A MixedBits equals only a MixedBits of the same formats, whatever its average."""
    spec = load_hf_config(GPT_OSS_120B)
    bits = checkpoint_bits(spec)
    assert bits != Fraction(bits) and Fraction(bits) == Fraction(bits.numerator, bits.denominator)
    assert bits == checkpoint_bits(load_hf_config(GPT_OSS_120B)) and hash(bits) != hash(Fraction(bits))
    assert isinstance(choices.weight_bits(spec), MixedBits)
    assert not isinstance(choices.weight_bits(spec, "bf16"), MixedBits)


# -- compute dtype -----------------------------------------------------------------------------------


def test_compute_dtype_follows_the_quantized_format():
    """FP8 weights (DeepSeek-V3's blocks) run FP8 on H100; NVFP4 runs on Blackwell's FP4 tensor cores
    (B200 9,000 dense TFLOPS at fp4 in its spec) and is upcast to BF16 on H100, which has none;
    MXFP4 experts (gpt-oss) run as weight-only BF16."""
    v3, llama, oss = load_model("deepseek-v3"), load_model("llama3-8b"), load_hf_config(GPT_OSS_120B)
    h100, b200 = load_gpu("h100"), load_gpu("b200")
    assert "fp4" in b200.dense_tflops and "fp4" not in h100.dense_tflops
    assert choices.compute_dtype(v3, h100) is Dtype.FP8
    assert choices.compute_dtype(llama, b200, weights_dtype="nvfp4") is Dtype.FP4
    assert choices.compute_dtype(llama, h100, weights_dtype="nvfp4") is Dtype.BF16
    assert choices.compute_dtype(oss, h100) is Dtype.BF16


# -- quantization_config ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config,expected",
    [
        (  # gpt-oss (transformers Mxfp4Config)
            {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                                 "model.embed_tokens", "lm_head"]},
            ("mxfp4", ("attention",)),
        ),
        (  # DeepSeek-V3 (FineGrainedFP8)
            {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]},
            ("fp8_block", ()),
        ),
        (  # TensorRT Model Optimizer NVFP4 (hf_quant_config.json's quantization section)
            {"quant_method": "modelopt", "quantization": {"quant_algo": "NVFP4", "group_size": 16,
                                                          "exclude_modules": ["lm_head", "model.layers.*.self_attn*"]}},
            ("nvfp4", ("attention",)),
        ),
        (  # llm-compressor NVFP4 (compressed-tensors, nvfp4-pack-quantized)
            {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
             "config_groups": {"group_0": {"targets": ["Linear"],
                                           "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                                                       "group_size": 16}}},
             "ignore": ["lm_head", "re:.*mlp.gate$"]},
            ("nvfp4", ()),
        ),
        (  # llm-compressor FP8 block (compressed-tensors float-quantized, block strategy)
            {"quant_method": "compressed-tensors",
             "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float", "strategy": "block",
                                                       "block_structure": [128, 128]}}},
             "ignore": ["lm_head", "model.visual.blocks.0.attn.qkv"]},
            ("fp8_block", ("vision",)),
        ),
    ],
)  # fmt: skip
def test_quantization_config_methods(config, expected):
    notes: list[str] = []
    q = read_quantization(config, "bf16", notes)["quantization"]
    assert (q["weights_format"], q["kept"]) == expected
    assert q["kept_dtype"] == "bf16" and notes


def test_unmodelled_methods_leave_the_torch_dtype():
    """GPTQ/AWQ configs are not read here: no quantization, the caller's note stands."""
    assert read_quantization({"quant_method": "gptq", "bits": 4}, "fp16", []) == {}
    assert read_quantization(None, "bf16", []) == {}


def test_models_without_quantization_keep_their_json(cli):
    """A model without quantization_config has no quantization field and weighs as before."""
    out = cli("params", "llama3-8b", "--json").json()
    assert out["weight_bytes"] == 8_030_261_248 * 2 and out["dtype"] == "bf16"
    assert load_model("llama3-8b").quantization is None
    assert count_params(load_model("llama3-8b")).weight_bytes == 16_060_522_496


def test_shipped_gpt_oss_120b_is_its_config(cli):
    """The shipped gpt-oss-120b is the config.json field for field (metadata aside), so `params` and
    `fit` of the name weigh its experts in MXFP4: 65,248,815,744 B, fitting one H100."""
    from llm_cost.specs.declare import field_names
    from llm_cost.specs.schema import ModelSpec

    shipped, read = load_model("gpt-oss-120b"), load_hf_config(GPT_OSS_120B)
    differ = {k for k in field_names(ModelSpec) if getattr(shipped, k) != getattr(read, k)}
    assert differ == {"aliases", "source"}
    assert cli("params", "gpt-oss-120b", "--json").json()["weight_bytes"] == 65_248_815_744
    fit = cli("fit", "gpt-oss-120b", "--gpu", "h100", "--json").json()["single_gpu"]
    assert fit["weight_bytes"] == 65_248_815_744 and fit["fits"]


def test_group_size_counts_scales_and_zeros_in_the_weight_bytes(cli):
    """Group-quantized int4 stores a 16-bit scale per ``group_size`` weights (4 + 16/g bits: 4.5 at
    g = 32 with its zero point, 4.25 at the default 128, as AWQ/GPTQ pack them); int8 is per
    channel. ``--quantize-embeddings`` puts the LM head's matmul weights in the format too."""

    def matmul_bytes(*flags):
        return cli("roofline", "llama3-8b", "--context", "1K", *flags, "--json").json()["matmul_weight_bytes"]

    bf16 = matmul_bytes()
    every = "--quantize-embeddings"
    assert matmul_bytes("--weights-dtype", "int4", "--group-size", "32", every) * 16 == bf16 * 5  # 4 + 32/32 bits
    assert matmul_bytes("--weights-dtype", "int4", every) * 16 == bf16 * 4.25  # group 128 by default
    assert matmul_bytes("--weights-dtype", "int8", every) * 2 == bf16  # per channel
    refused = cli("roofline", "llama3-8b", "--group-size", "32")
    assert refused.code == 2 and "--group-size" in refused.err


@pytest.mark.parametrize("group", [3, 100, 14336, 1_000_000])
def test_a_group_that_does_not_divide_every_quantized_width_is_refused(cli, group):
    """AutoAWQ's WQLinear_GEMM asserts ``in_features % group_size == 0`` and GPTQ packs whole groups:
    Llama-3-8B's matrices take 4,096 (Q, K, V, O, gate, up) and 14,336 (down) inputs, so a group of
    3 (an attacker's: 13,846,096,554.67 bytes) or 14,336 is refused naming --group-size, with
    groups that divide both; 64 and 4,096 / 2 = 2,048 divide both and give whole bytes."""
    r = cli("roofline", "llama3-8b", "--weights-dtype", "int4", "--group-size", str(group), "--json")
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert r.err.startswith(f"error: --group-size: {group:,} does not divide") and "(4,096, 14,336)" in r.err, r.err
    assert "e.g. 32, 64, 128, 256" in r.err
    for whole in ("64", "2048"):
        out = cli("roofline", "llama3-8b", "--weights-dtype", "int4", "--group-size", whole, "--csv")
        assert out.code == 0 and all("." not in v for v in _csv_field(out.out, "matmul_weight_bytes")), out.out[:300]


def _csv_field(text: str, name: str) -> list[str]:
    """The values of column ``name`` of a CSV."""
    import csv
    import io

    return [row[name] for row in csv.DictReader(io.StringIO(text))]


def test_groups_divide_the_language_models_linear_layers_the_default_too(cli):
    """AWQ and GPTQ pack Linear layers: Qwen2-VL's 1,176-wide patch convolution is none, so a group
    of 128 is taken (it had been refused, a second attacker); Falcon-7B's 4,544-wide layers (71 x 64)
    take no group of 128, given or by default (the default had passed unchecked), and the refusal
    names groups that divide them."""
    assert cli("roofline", "qwen2-vl-7b", "--weights-dtype", "int4", "--group-size", "128").code == 0
    falcon = str(Path(__file__).resolve().parents[1] / "fixtures" / "hf" / "falcon-7b")
    for given in ([], ["--group-size", "128"]):
        r = cli("roofline", falcon, "--weights-dtype", "int4", *given)
        assert r.code == 2 and "does not divide the input width" in r.err and "(4,544, 18,176)" in r.err, r.err
        assert ("the default group of 128" in r.err) == (not given) and "e.g. 32, 64" in r.err
    assert cli("roofline", falcon, "--weights-dtype", "int4", "--group-size", "64").code == 0
