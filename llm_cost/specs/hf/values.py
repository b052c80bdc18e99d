"""A config.json's values checked by type and range before any mapping reads them.

transformers 5 validates a configuration strictly against its dataclass fields' types
(huggingface_hub's ``@strict``): an integer field refuses ``1e20`` and ``"12"``, and a field whose
type does not admit None refuses null. The same rules hold here, from the types
``llm_cost/data/hf_defaults.json`` records for each configuration class, for every key that
changes shapes; and, past what a type says, ranges the layers bound: an interval or a count of
layers is at most ``num_hidden_layers`` (``moe_layer_freq: 1e300`` would make every layer dense,
``full_attention_interval`` above the depth leaves no full-attention layer), a per-layer list has
one entry per layer. Each refusal names the key (and the other key it disagrees with).
"""

from __future__ import annotations

import json
from typing import Any

from llm_cost.specs.files import shown
from llm_cost.specs.hf.config import SHAPE_KEYS, _Config

__all__ = ["check_values", "SIZE_KEYS", "INTEGER_KEYS", "PER_LAYER_LISTS", "LAYER_BOUNDED"]

#: Sizes every family reads, beyond the keys that change shapes only in some (SHAPE_KEYS).
SIZE_KEYS = frozenset(
    {
        "vocab_size",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "full_attention_interval",
        "linear_num_key_heads",
        "linear_num_value_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_conv_kernel_dim",
        "mtp_num_hidden_layers",
        "num_mtp_layers",
        "moe_shared_expert_intermediate_size",
        "moe_latent_size",
        "sliding_window",
        "max_window_layers",
        "global_head_dim",
        "num_global_key_value_heads",
        "num_kv_shared_layers",
        "hidden_size_per_layer_input",
        "index_topk_freq",
        "index_skip_topk_offset",
    }
)

#: Keys that are integers in every family, whether or not its class declares them (Qwen3.5 reads
#: ``full_attention_interval`` from its kwargs); ``moe_layer_freq`` may also be a per-layer list.
INTEGER_KEYS = frozenset(
    {
        "vocab_size",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "intermediate_size",
        "moe_intermediate_size",
        "num_experts",
        "num_local_experts",
        "n_routed_experts",
        "num_experts_per_tok",
        "experts_per_token",
        "n_shared_experts",
        "shared_expert_intermediate_size",
        "first_k_dense_replace",
        "decoder_sparse_step",
        "full_attention_interval",
        "kv_lora_rank",
        "q_lora_rank",
        "qk_nope_head_dim",
        "qk_rope_head_dim",
        "v_head_dim",
        "linear_num_key_heads",
        "linear_num_value_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_conv_kernel_dim",
        "index_n_heads",
        "index_head_dim",
        "index_topk",
        "mtp_num_hidden_layers",
        "num_nextn_predict_layers",
        "max_window_layers",
        "global_head_dim",
        "num_global_key_value_heads",
        "num_kv_shared_layers",
    }
)

#: Lists with one entry per decoder layer.
PER_LAYER_LISTS = ("layer_types", "mlp_layer_types", "indexer_types", "layers_block_type")

#: Intervals and counts of layers: at most ``num_hidden_layers``. Not ``max_window_layers``: layers
#: from it on slide, so a value past the last layer means none does (Qwen2.5-3B-Instruct publishes 70
#: for its 36 layers, with sliding off).
LAYER_BOUNDED = (
    "full_attention_interval",
    "moe_layer_freq",
    "decoder_sparse_step",
    "first_k_dense_replace",
    "sliding_window_pattern",
    "interleave_moe_layer_step",
    "no_rope_layer_interval",
    "index_topk_freq",
    "num_kv_shared_layers",
    "mtp_num_hidden_layers",
)


def _layers(c: _Config) -> Any:
    L = c.data.get("num_hidden_layers")
    return L if isinstance(L, int) and not isinstance(L, bool) else None


def check_values(c: _Config) -> None:
    """SpecError naming the key for a shape value transformers' configuration class would refuse
    (null where its type admits none, a non-integer where it declares an integer, a negative
    size) or that the layers bound (module docstring)."""
    table, L = c.table, _layers(c)
    for key in sorted(c.data):
        if key not in SHAPE_KEYS and key not in SIZE_KEYS:
            continue
        value = c.data[key]
        if value is None:
            if table is not None and key in table.declared and key not in table.nullable:
                what = "an integer" if key in table.ints else "a value"
                raise c.error(
                    key,
                    f"= null: {table.name} declares {what} there and builds no model from null; give one or leave the key out",
                )
            continue
        declared = table is not None and key in table.ints
        if declared or key in INTEGER_KEYS or (key == "moe_layer_freq" and not isinstance(value, list)):
            if isinstance(value, bool) or not isinstance(value, int):
                whose = (
                    f"as {table.name} declares it"
                    if declared and table is not None
                    else "a count of elements or layers"
                )
                raise c.error(key, f"must be an integer, {whose} (got {shown(json.dumps(value), 40)})")
            if value < 0:
                raise c.error(key, f"is a size or a count, never negative (got {value})")
        if (
            key in LAYER_BOUNDED
            and L is not None
            and isinstance(value, int)
            and not isinstance(value, bool)
            and value > L
        ):
            raise c.error(key, f"= {shown(str(value), 40)} is above num_hidden_layers ({L})")
    for key in PER_LAYER_LISTS:
        value = c.data.get(key)
        if isinstance(value, list) and L is not None and len(value) != L:
            raise c.error(key, f"has {len(value)} entries but num_hidden_layers is {L}")
