"""Gemma 4 E2B and E4B whole (model_type gemma4 with an audio_config) against their checkpoint
totals (tests/fixtures/hf/CHECKPOINTS.yaml gemma-4-e2b-it, gemma-4-e4b-it) and hand arithmetic from
transformers models/gemma4/modeling_gemma4.py: the audio tower (Gemma4AudioModel: sub-sampling
convolutions, 12 Conformer blocks, output_proj with a bias) and its embedder, the 768-wide vision
tower with clipping bounds, the KV-shared layers' K/V that Google's files store but transformers
ignores, KV bytes per token (the towers cache nothing), the towers' weight memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from llm_cost.core.choices import WeightBytes
from llm_cost.core.errors import SpecError
from llm_cost.core.types import OpRole
from llm_cost.model.kv import kv_bytes_per_token
from llm_cost.model.layout import Layout, per_gpu
from llm_cost.model.params import count_params
from llm_cost.model.structure import build
from llm_cost.specs.hf import hf_to_spec, load_hf_config
from llm_cost.workload.step import build_step, decode

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf"
E2B = FIXTURES / "gemma-4-e2b-it" / "config.json"
E4B = FIXTURES / "gemma-4-e4b-it" / "config.json"
CHECKPOINTS = yaml.safe_load((FIXTURES / "CHECKPOINTS.yaml").read_text(encoding="utf-8"))

#: One Gemma4AudioLayer of e = 1024 (modeling_gemma4.py): two Gemma4AudioFeedForward of
#: ffw_layer_1 [4e, e] + ffw_layer_2 [e, 4e] + pre/post RMSNorm [e]; Gemma4AudioAttention q/k/v/post
#: [e, e] + relative_k_proj [e, e] + per_dim_scale [e / 8 heads = 128]; Gemma4AudioLightConv1d
#: linear_start [2e, e] + linear_end [e, e] + depthwise_conv1d [e, 1, 5] + two RMSNorms; three RMSNorms.
E = 1024
AUDIO_LAYER = 2 * (2 * 4 * E * E + 2 * E) + (5 * E * E + 128) + (2 * E * E + E * E + 5 * E + 2 * E) + 3 * E
#: Gemma4AudioSubSampleConvProjection: conv [128, 1, 3, 3] + LayerNorm weight [128], conv [32, 128, 3, 3]
#: + [32], input_proj_linear [1024, (128 // 4) x 32]; output_proj [1536, 1024] + its bias [1536]
AUDIO_TOWER = (128 * 9 + 128 + 32 * 128 * 9 + 32 + E * 32 * 32) + 12 * AUDIO_LAYER + (1536 * E + 1536)
#: the 768-wide vision tower: input_proj [768, 3 x 16^2], position table [2, 10240, 768], 16 blocks of
#: q/k/v/o [768, 768], q/k norms [64], gate/up/down of 3072, four norms [768] (standardize false)
VISION_TOWER = 768 * 768 + 2 * 10240 * 768 + 16 * (4 * 768 * 768 + 2 * 64 + 3 * 768 * 3072 + 4 * 768)
#: Gemma4ClippableLinear's four scalar bounds: 10 linears x 12 audio blocks, 7 x 16 vision blocks
BOUNDS = 4 * (10 * 12) + 4 * (7 * 16)


def test_audio_and_vision_towers_by_hand_are_the_checkpoint_split():
    """The split of google/gemma-4-E2B-it's 5,123,178,979 (github.com/bamb00boy/Gemma4_executorch_deployment docs/architecture.md @ 6220a881b54b; github.com/alexkroman/tiny-audio tiny_audio/asr_modeling.py at an unpinned revision):
    audio tower 304,824,608, vision tower 167,364,608, embed_vision [1536, 768] 1,179,648, embed_audio
    [1536, 1536] 2,359,296, and 928 clipping bounds (480 audio + 448 vision)."""
    assert AUDIO_TOWER == 304_824_608 and VISION_TOWER == 167_364_608 and BOUNDS == 928
    s = build(load_hf_config(E2B))
    assert s.audio_params == AUDIO_TOWER + 480 + 1536 * 1536 == AUDIO_TOWER + 480 + 2_359_296
    assert s.vision_params == VISION_TOWER + 448 + 1536 * 768 == VISION_TOWER + 448 + 1_179_648


def test_e2b_total_is_the_model_and_google_s_file_adds_the_ignored_kv():
    """The count is the model transformers builds: sum(p.numel()) 5,104,297,504 (github.com/AI-Safeter/eml-torch gemma_architecture/prepare.py @ 50912e0fa45b; github.com/Unjuno/tiny-omni-decision README.md at a revision before 903b366b719e) + 35 layer_scalar and 928 clipping-bound buffers = 5,104,298,467, the
    header total of the same architecture's qat-q4_0-unquantized checkpoint (github.com/Unjuno/tiny-omni-decision README.md at a revision before 903b366b719e).
    Google's google/gemma-4-E2B-it file holds 5,123,178,979: the same plus the 20 KV-shared layers'
    k_proj, v_proj and k_norm (16 sliding: 2 x 256 x 1536 + 256; 4 full: 2 x 512 x 1536 + 512), which
    Gemma4TextModel ignores on load."""
    r = count_params(load_hf_config(E2B))
    assert r.total_params == CHECKPOINTS["gemma-4-e2b-it"]["total_params"] == 5_104_297_504 + 35 + 928
    text = CHECKPOINTS["gemma-4-e2b-it-text"]["total_params"]
    assert r.decoder_params == text == 4_628_569_379
    assert r.total_params == text + VISION_TOWER + AUDIO_TOWER + 1_179_648 + 2_359_296 + BOUNDS
    ignored_kv = 16 * (2 * 256 * 1536 + 256) + 4 * (2 * 512 * 1536 + 512)
    assert ignored_kv == 18_880_512
    assert r.total_params + ignored_kv == CHECKPOINTS["gemma-4-e2b-it"]["checkpoint_tensor_elements"]
    assert r.total_params + ignored_kv == 5_123_178_979
    assert r.kv_shared_unloaded_params == ignored_kv and r.checkpoint_params == 5_123_178_979


def test_e4b_total_is_the_model_and_google_s_file_adds_the_ignored_kv():
    """E4B: sum(model.parameters()) 7,941,100,832 (github.com/pushkarsingh019/environment_for_science docs/gemma-training-path-proof.md @ 70ef42131bb6) + 42 layer scalars +
    928 bounds; google/gemma-4-E4B-it's file holds 7,996,157,418 (github.com/fyh2001/megatron-sft-recipes docs/gemma4_E4B_alt_offload_log.md @ f7df6d9028a5; github.com/sathieshiah/ai docs/weight-layout-comparison.md @ e980afa7314f): the
    same plus the 18 KV-shared layers' K/V (15 sliding: 2 x 2 x 256 x 2560 + 256; 3 full: 2 x 2 x 512
    x 2560 + 512). The towers are E2B's; the embedders project into 2560."""
    r = count_params(load_hf_config(E4B))
    assert r.total_params == CHECKPOINTS["gemma-4-e4b-it"]["total_params"] == 7_941_100_832 + 42 + 928
    assert r.decoder_params == 7_463_013_376 + 42  # the E4B language model of tests/specs/test_gemma4.py
    assert r.audio_params == AUDIO_TOWER + 480 + 2560 * 1536
    assert r.vision_params == VISION_TOWER + 448 + 2560 * 768
    ignored_kv = 15 * (2 * 2 * 256 * 2560 + 256) + 3 * (2 * 2 * 512 * 2560 + 512)
    assert r.total_params + ignored_kv == CHECKPOINTS["gemma-4-e4b-it"]["checkpoint_tensor_elements"]
    assert r.total_params + ignored_kv == 7_996_157_418
    assert r.kv_shared_unloaded_params == ignored_kv and r.checkpoint_params == 7_996_157_418


def test_breakdown_rows_of_the_audio_tower():
    """The params breakdown lists the audio tower apart, its rows summing to the tower."""
    r = count_params(load_hf_config(E2B))
    rows = {row.group: row.params for row in r.rows if row.part == "audio"}
    assert rows == {
        "audio.subsample": 128 * 9 + 128 + 32 * 128 * 9 + 32 + E * 32 * 32,
        "audio.blocks": 12 * AUDIO_LAYER + 480,
        "audio.projection": 1536 * E + 1536 + 1536 * 1536,
    }


def test_kv_bytes_per_token_are_the_language_model_s():
    """The towers cache nothing: E2B's 15 owning layers (12 sliding of 2 x 1 x 256, 3 full of
    2 x 1 x 512 elements), E4B's 24 (20 sliding of 2 x 2 x 256, 4 full of 2 x 2 x 512), at 2 B."""
    assert kv_bytes_per_token(load_hf_config(E2B), 16) == 12 * 2 * 256 * 2 + 3 * 2 * 512 * 2 == 18_432
    assert kv_bytes_per_token(load_hf_config(E4B), 16) == 20 * 2 * 2 * 256 * 2 + 4 * 2 * 2 * 512 * 2 == 57_344


def test_weights_in_memory_include_the_towers_whole_on_every_gpu():
    """At BF16 the weights are 2 B x the count; under TP 2 each GPU holds the whole audio tower (its
    linears are not split: replicated, as the vision tower's), so a GPU's weights less those of the
    same model without audio_config are the tower's 307,184,384 elements x 2 B."""
    spec = load_hf_config(E2B)
    assert count_params(spec).weight_bytes == 2 * 5_104_298_467
    assert per_gpu(spec, Layout()).weight_bytes == [2 * 5_104_298_467]
    cfg = json.loads(E2B.read_text(encoding="utf-8"))
    cfg["audio_config"] = None
    without, _ = hf_to_spec(cfg, "gemma-4-e2b-it/config.json")
    assert without.audio is None
    assert count_params(without).total_params == 5_104_298_467 - (AUDIO_TOWER + 480 + 1536 * 1536)
    tower = AUDIO_TOWER + 480 + 1536 * 1536
    assert per_gpu(spec, Layout(tp=2)).weight_bytes[0] - per_gpu(without, Layout(tp=2)).weight_bytes[0] == 2 * tower


def test_the_resident_step_reads_the_audio_tower_once():
    """By the resident convention the first stage reads every weight no operator reads: the audio
    tower is an operator of its own of 307,184,384 x 2 B; a text decode step runs none of its FLOPs."""
    spec = load_hf_config(E2B)
    step = build_step(spec, decode(1, 4095), weight_bytes=WeightBytes.RESIDENT)
    (audio,) = [o for o in step.ops if o.role == OpRole.RESIDENT_WEIGHTS and o.group == "audio"]
    assert audio.weight_bytes == 2 * (AUDIO_TOWER + 480 + 1536 * 1536) and audio.flops == 0


@pytest.mark.parametrize(
    "change,message",
    [
        ({"intermediate_size": 2048}, "intermediate_size must be 4 x hidden_size"),
        ({"num_attention_heads": 7}, "multiple of num_attention_heads"),
        ({"subsampling_conv_channels": [128, 32, 8]}, "must list two channel counts"),
        ({"hidden_size": 0}, "audio_config.hidden_size"),
    ],
)
def test_a_bad_audio_config_is_refused_naming_the_key(change, message):
    cfg = json.loads(E2B.read_text(encoding="utf-8"))
    cfg["audio_config"].update(change)
    with pytest.raises(SpecError, match=message):
        hf_to_spec(cfg, "g/config.json")


def test_a_vision_global_head_dim_other_than_head_dim_is_refused():
    """E2B's vision_config writes global_head_dim 64 = head_dim (inert: Gemma4VisionConfig has no such
    field); another value would be a second head width the tower does not have."""
    cfg = json.loads(E2B.read_text(encoding="utf-8"))
    cfg["vision_config"]["global_head_dim"] = 128
    with pytest.raises(SpecError, match="global_head_dim must equal head_dim"):
        hf_to_spec(cfg, "g/config.json")


def test_checkpoint_names_of_the_towers_take_their_roles():
    """A checkpoint folder's tensors are matched by role: Gemma 4's audio tower and embed_audio are
    the audio role, embed_vision the vision role (names as google/gemma-4-E2B-it stores them, github.com/1amageek/swift-lm docs/parameter-dumps/google_gemma-4-E2B-it.md @ 7c4a37f7899e), MiniMax-M3's patch_merge the vision role."""
    from llm_cost.analyses.checkpoint_roles import stored_role

    assert stored_role("model.audio_tower.layers.0.feed_forward1.ffw_layer_1.linear.weight", 35) == "audio"
    assert stored_role("model.embed_audio.embedding_projection.weight", 35) == "audio"
    assert stored_role("model.embed_vision.embedding_projection.weight", 35) == "vision"
    assert stored_role("model.patch_merge.linear_1.weight", 60) == "vision"
