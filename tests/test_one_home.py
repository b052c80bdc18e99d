"""One home for each number: the bound label, the linear-attention conv width, the TP all-reduce
bytes, the layers of each kind (whole model and per pipeline stage) and the sum over pipeline
stages are each computed by one function; each is checked here against a hand computation from
the model's config and the datasheet, and every user of it against the same figure."""

from __future__ import annotations

import pytest

from llm_cost.analyses.moe import moe_analysis
from llm_cost.analyses.speculative import speculative
from llm_cost.core.labels import Bound
from llm_cost.core.types import Engine, LayerKind, LayerType, MlpType, OpKind, OpRole, Part
from llm_cost.model.kv import kv_cache
from llm_cost.model.kvshape import linear_state_elements
from llm_cost.model.layers import layer_counts
from llm_cost.model.layout import Layout, stage_kv_bytes, stage_range
from llm_cost.model.structure import build
from llm_cost.perf.calibrated import CalibratedModel
from llm_cost.perf.choose import profile_for
from llm_cost.perf.timemodel import RooflineBound, link_of
from llm_cost.specs.load import load_gpu, load_model
from llm_cost.specs.load import load_gpu as _gpu_spec
from llm_cost.workload.step import build_step, decode, prefill, ring_all_reduce_bytes

H100 = load_gpu("h100")
LLAMA = load_model("llama3-8b")
QWEN_NEXT = load_model("qwen3-next-80b-a3b")
V3 = load_model("deepseek-v3")


# --- the bound label ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "compute_s,memory_s,link_s,time_s,bound",
    [
        (1.0, 2.0, 0.0, 2.0, Bound.MEMORY),  # overlapped work: the larger term
        (3.0, 2.0, 0.0, 3.0, Bound.COMPUTE),
        (2.0, 2.0, 0.0, 2.0, Bound.COMPUTE),  # a tie is compute-bound
        (1.0, 2.0, 3.0, 5.0, Bound.COMMUNICATION),  # the link takes longer than the work
        (1.0, 2.0, 2.0, 4.0, Bound.MEMORY),  # as long as the work: not yet communication
        (0.0, 0.0, 1e-5, 1e-5, Bound.COMMUNICATION),  # a collective
        (1.0, 2.0, 2.5, 5.5, Bound.MEMORY),  # fixed time (1 s) counts with the work: 2.5 < 3
    ],
)
def test_bound_of_by_hand(compute_s, memory_s, link_s, time_s, bound):
    assert Bound.of(compute_s, memory_s, link_s, time_s) is bound


def test_decode_at_batch_1_is_memory_bound_and_a_long_prefill_compute_bound():
    """Llama-3-8B on an H100 (989.4 TFLOP/s BF16, 3.35 TB/s): one token multiplies 2 x 7.50 G
    weights (15.0 GFLOP, 15 us at peak) but reads 15.0 GB of them (4.5 ms): memory-bound. An
    8,192-token prefill does 8,192 x 15.0 GFLOP + attention (over 120 TFLOP, 0.12 s) over the same
    bytes: compute-bound. Both models label it the same way, from the same rule."""
    profile = profile_for(_gpu_spec("h100"), Engine.VLLM)
    assert profile is not None
    decode_step, prefill_step = build_step(LLAMA, decode(1, 0)), build_step(LLAMA, prefill(1, 8192))
    for model in (RooflineBound(), CalibratedModel(profile)):
        one, long = model.step_time(decode_step, H100), model.step_time(prefill_step, H100)
        assert one.bound is Bound.MEMORY and long.bound is Bound.COMPUTE, type(model).__name__
    bound = RooflineBound().step_time(decode_step, H100)
    assert bound.compute_s == pytest.approx(2 * 7_504_658_432 / 989.4e12, rel=1e-3)


def test_collectives_are_communication_bound_in_every_time_model():
    """The TP all-reduces of a TP-4 decode step move bytes and no FLOPs: each is labelled
    communication by the bound and by the calibrated prediction; every other operator of a
    one-token step reads more than it multiplies (memory)."""
    step = build_step(LLAMA, decode(1, 0), layout=Layout(tp=4))
    profile = profile_for(_gpu_spec("h100"), Engine.VLLM)
    assert profile is not None
    for model in (RooflineBound(), CalibratedModel(profile)):
        times = model.step_time(step, H100)
        for op, t in zip(step.ops, times.ops):
            expected = Bound.COMMUNICATION if op.kind == OpKind.COLLECTIVE else Bound.MEMORY
            assert t.bound is expected, (type(model).__name__, op.name)


def test_speculative_verify_bound_is_compute_once_its_flops_pass_the_ridge():
    """The verify step's label is the step's bound: at batch 1 a 5-token verify of Llama-3-8B is
    memory-bound (5 x 15 GFLOP against 15 GB); at 4,096 sequences x 5 tokens it is compute-bound."""
    r = speculative(0.8, 4, 0.1, LLAMA, H100, [1, 4096])
    assert [row.verify_bound for row in r.rows] == [Bound.MEMORY, Bound.COMPUTE]


# --- the linear-attention conv width --------------------------------------------------------------


def test_linear_attention_conv_dim_from_the_config():
    """Qwen3-Next (transformers modeling_qwen3_next: conv_dim = key_dim x 2 + value_dim): 16 key
    heads x 128 x 2 + 32 value heads x 128 = 8,192 channels; the checkpoint's conv1d weight is
    [8192, 1, 4]. Every user: the tensor's shape, the conv state (kernel - 1 = 3 columns), the
    recurrence's FLOPs (6 n_v d_k d_v + 2 conv_dim kernel per token and layer, 36 layers)."""
    la = QWEN_NEXT.linear_attention
    assert la is not None and la.conv_dim == 2 * 16 * 128 + 32 * 128 == 8192
    conv = [t for t in build(QWEN_NEXT).tensors_of(Part.DECODER) if t.name.endswith("linear_attn.conv1d.weight")]
    assert [t.shape for t in conv] == [(8192, 1, 4)]
    assert linear_state_elements(QWEN_NEXT) == (32 * 128 * 128, 8192 * 3)
    step = build_step(QWEN_NEXT, decode(1, 0))
    (rec,) = [op for op in step.ops if op.role == OpRole.LINEAR_ATTENTION]
    assert rec.flops == 36 * (6 * 32 * 128 * 128 + 2 * 8192 * 4)


# --- the TP all-reduce bytes -----------------------------------------------------------------------


def test_ring_all_reduce_bytes_by_hand():
    """A ring all-reduce over n GPUs sends 2 (n - 1) / n of the buffer from each GPU: Llama-3-8B's
    hidden state (4,096 x 2 B) at TP 4 is 2 x 3/4 x 8,192 = 12,288 B per token; at TP 8,
    14,336 B; at TP 1 nothing; at TP 3, 2 x 2/3 x 8,192 = 10,922 2/3 B (exact)."""
    from fractions import Fraction

    assert ring_all_reduce_bytes(4096, 4) == 12_288
    assert ring_all_reduce_bytes(4096, 8) == 14_336
    assert ring_all_reduce_bytes(4096, 1) == 0
    assert ring_all_reduce_bytes(4096, 3) == Fraction(32768, 3)


def test_every_user_of_the_all_reduce_bytes_agrees():
    """The step's TP all-reduce operators (8 tokens: 8 x 12,288 B per call, one call per layer after
    attention and one after the MLP) and the moe command's comparison (Mixtral, d = 4,096, TP 8:
    14,336 B per token per layer) both send the hand figure."""
    step = build_step(LLAMA, decode(8, 0), layout=Layout(tp=4))
    ring = [op for op in step.ops if op.role in (OpRole.TP_ALL_REDUCE_ATTENTION, OpRole.TP_ALL_REDUCE_MLP)]
    assert [(op.layers, op.collective.bytes_per_call) for op in ring if op.collective] == [(32, 8 * 12_288)] * 2
    assert moe_analysis(load_model("mixtral-8x7b"), [1], tp=8).allreduce_bytes_per_token_per_layer == 14_336


# --- layers per kind and per pipeline stage -------------------------------------------------------


def test_layer_counts_of_a_hybrid_model():
    """Qwen3-Next-80B: 48 layers, full attention every 4th (12), Gated DeltaNet in the other 36,
    an MoE feed-forward in each. The structure's tensors, the KV cache's layer kinds and the
    step's operators count the same layers."""
    counts = layer_counts(QWEN_NEXT)
    assert counts.mixers == {LayerType.FULL_ATTENTION: 12, LayerType.LINEAR_ATTENTION: 36}
    assert counts.mlps == {MlpType.MOE: 48} and counts.total == 48
    assert counts.of(LayerKind.SOFTMAX_ATTENTION) == 12 and counts.of(LayerKind.ANY) == 48
    layers = {t.name: t.layers for t in build(QWEN_NEXT).tensors_of(Part.DECODER)}
    assert layers["layers.*.self_attn.q_proj.weight"] == 12 and layers["layers.*.linear_attn.out_proj.weight"] == 36
    assert [(k.layer_type, k.layers) for k in kv_cache(QWEN_NEXT, [1]).layer_kinds] == [
        (LayerType.FULL_ATTENTION, 12),
        (LayerType.LINEAR_ATTENTION, 36),
    ]


def test_layers_per_pipeline_stage_of_a_hybrid_model():
    """At PP 4 each stage holds 12 layers, 3 full attention and 9 linear attention; one sequence of
    1,024 tokens keeps 3 x 1,024 x (2 x 2 KV heads x 256 x 2 B) = 6,291,456 B of KV and
    9 x (32 x 128 x 128 + 8,192 x 3) x 2 B = 9,879,552 B of state on each stage's GPU."""
    layout = Layout(pp=4)
    step = build_step(QWEN_NEXT, decode(1, 1024), layout=layout)
    for stage in range(4):
        counts = layer_counts(QWEN_NEXT, stage_range(48, 4, stage))
        assert counts.mixers == {LayerType.FULL_ATTENTION: 3, LayerType.LINEAR_ATTENTION: 9}
        ops = {op.role: op.layers for op in step.stages[stage].ops}
        assert ops[OpRole.FULL_ATTENTION] == 3 and ops[OpRole.LINEAR_ATTENTION] == 9
    assert stage_kv_bytes(QWEN_NEXT, layout, 1024) == [6_291_456 + 9_879_552] * 4


def test_moe_layers_per_pipeline_stage():
    """DeepSeek-V3: 61 layers, the first 3 dense (first_k_dense_replace), 58 MoE. At PP 2 the first
    stage holds layers 0-30 (28 MoE), the second 31-60 (30 MoE): the EP all-to-all runs twice (dispatch,
    combine) per MoE layer of each stage, and the moe command counts 58."""
    assert layer_counts(V3).mlps == {MlpType.DENSE: 3, MlpType.MOE: 58}
    assert [layer_counts(V3, stage_range(61, 2, s)).of(LayerKind.MOE) for s in (0, 1)] == [28, 30]
    step = build_step(V3, decode(8, 0), layout=Layout(tp=8, pp=2, ep=8), weight_bits=8)
    all_to_all = [[op.layers for op in st.ops if op.role == OpRole.EP_ALL_TO_ALL] for st in step.stages]
    assert all_to_all == [[2 * 28], [2 * 30]]  # a dispatch and a combine call per MoE layer
    assert moe_analysis(V3, [1], 8).moe_layers == 58


# --- the sum over pipeline stages -----------------------------------------------------------------


def test_the_step_time_is_the_sum_of_its_stages():
    """Llama-3-8B, 8 sequences at 1,024 tokens, PP 2 on H100s. The bound of each stage by hand:
    max(FLOPs / 989.4 TFLOP/s, bytes / 3.35 TB/s) + bytes sent / the link's rate; the step's time,
    terms and label are the sums over the two stages. The calibrated prediction sums its stages
    (each its operators plus the profile's fixed time) the same way."""
    step = build_step(LLAMA, decode(8, 1024), layout=Layout(pp=2))
    link_rate = link_of(step, H100, 50.0)[1] * 1e9
    stages = []
    for stage in step.stages:
        c = sum(float(op.flops) for op in stage.ops) / 989.4e12
        m = sum(float(op.bytes) for op in stage.ops) / 3.35e12
        ln = sum(float(op.comm_bytes) for op in stage.ops) / link_rate
        stages.append((c, m, ln, max(c, m) + ln))
    bound = RooflineBound().step_time(step, H100)
    assert bound.time_s == pytest.approx(sum(s[3] for s in stages), rel=1e-12)
    assert bound.compute_s == pytest.approx(sum(s[0] for s in stages), rel=1e-12)
    assert bound.memory_s == pytest.approx(sum(s[1] for s in stages), rel=1e-12)
    assert bound.link_s == pytest.approx(sum(s[2] for s in stages), rel=1e-12)
    assert bound.bound is Bound.MEMORY

    profile = profile_for(_gpu_spec("h100"), Engine.VLLM)
    assert profile is not None
    predicted = CalibratedModel(profile).step_time(step, H100)
    q = profile.parameters.engine
    for i, (stage, timed) in enumerate(zip(step.stages, predicted.stages)):
        ops = [t for t in predicted.ops if t.stage == stage.index]
        moe = max((op.layers for op in stage.ops if op.role.value == "routed_experts"), default=0)
        per_step = q.step_overhead_s + q.sequence_overhead_s * step.sequences if i == 0 else 0.0
        fixed = q.layer_overhead_s * stage.layers + q.moe_layer_overhead_s * moe + per_step
        assert timed.time_s == pytest.approx(sum(t.time_s for t in ops) + fixed, rel=1e-12)
    assert predicted.time_s == pytest.approx(sum(s.time_s for s in predicted.stages), rel=1e-12)
    assert predicted.link_s == pytest.approx(sum(s.link_s for s in predicted.stages), rel=1e-12)
