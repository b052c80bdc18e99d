"""Parameter totals of the shipped models against their checkpoints (independent values).

Each expected total is the number of elements in the model's released weights: the
safetensors index ``total_size`` divided by bytes per parameter (BF16 = 2), or the count
published with the checkpoint. Sources are given per model.
"""

from __future__ import annotations

import pytest

from llm_cost.model.params import count_params
from llm_cost.specs.load import load_model

CHECKPOINTS = {
    # meta-llama/Meta-Llama-3-8B model.safetensors.index.json total_size 16,060,522,496 B / 2
    "llama3-8b": 8_030_261_248,
    # meta-llama/Meta-Llama-3-70B model.safetensors.index.json total_size 141,107,412,992 B / 2
    "llama3-70b": 70_553_706_496,
    # mistralai/Mistral-7B-v0.1 model.safetensors.index.json total_size 14,483,464,192 B / 2
    "mistral-7b": 7_241_732_096,
    # mistralai/Mixtral-8x7B-v0.1 model.safetensors.index.json total_size 93,405,585,408 B / 2
    "mixtral-8x7b": 46_702_792_704,
    # DeepSeek-V3 technical report / README_WEIGHTS.md: 671B main model (671,026,419,200 from
    # the safetensors headers without layer 61, the MTP module, and without FP8 scales)
    "deepseek-v3": 671_026_419_200,
    # Qwen/Qwen2-VL-7B-Instruct model.safetensors.index.json total_size 16,582,751,232 B / 2
    "qwen2-vl-7b": 8_291_375_616,
    # meta-llama/Llama-3.1-405B: 405,853,388,800 (Hugging Face safetensors metadata, BF16)
    "llama3.1-405b": 405_853_388_800,
}


@pytest.mark.parametrize("name,total", sorted(CHECKPOINTS.items()))
def test_total_equals_checkpoint(name, total):
    assert count_params(load_model(name)).total_params == total


def test_deepseek_v3_mtp_is_reported_apart():
    """README_WEIGHTS.md: 671B main + 14B MTP module = 685B stored. The MTP module's unique
    parameters are 11,610,068,224 (seed 003 §07 row M6); it also stores copies of the
    embedding and LM head, 2 x 129,280 x 7,168 = 1,853,358,080 elements."""
    r = count_params(load_model("deepseek-v3"))
    assert r.mtp_params == 11_610_068_224
    assert r.mtp_checkpoint_copies == 2 * 129_280 * 7_168
    assert r.checkpoint_params == 671_026_419_200 + 11_610_068_224 + 2 * 129_280 * 7_168


def test_qwen2_vl_vision_tower():
    """Qwen2-VL-7B: 8,291,375,616 = language model 7,615,616,512 (Qwen2.5-7B has the same
    decoder: its index total_size 15,231,233,024 B / 2) + vision tower 675,759,104."""
    r = count_params(load_model("qwen2-vl-7b"))
    assert r.decoder_params == 7_615_616_512
    assert r.vision_params == 8_291_375_616 - 7_615_616_512


@pytest.mark.parametrize(
    "name,active",
    [
        ("mixtral-8x7b", 12_879_925_248),  # Mistral AI: "12.9B active parameters"; 46.70B - 32 x 6 x 176,160,768
        ("deepseek-v3", 37_552_297_472),  # DeepSeek-V3 report: "37B activated"; 17.12B non-routed + 58 x 8 x 44,040,192
    ],
)
def test_active_parameters(name, active):
    """Hand derivation: total minus the routed experts a token skips, (E - k) per MoE layer."""
    assert count_params(load_model(name)).active_params == active
