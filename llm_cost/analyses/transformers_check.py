"""``params --check``: our count of a config.json against the model transformers builds from it.

Our side is the tensor list (:func:`llm_cost.model.structure.build`) of the main model: the MTP
modules and their stored copies left out (transformers builds none of them), stored persistent
buffers in (the checkpoint holds them; so does transformers' side, :mod:`llm_cost.specs.hf.oracle`).
Both are summed by top-level module (``embed_tokens``, ``layers``, ``norm``, ``lm_head``, a vision
tower ...), transformers' names mapped to ours where a family spells them otherwise (GPT-2's
``wte`` / ``h`` / ``ln_f``, Falcon's ``word_embeddings``, Nemotron-H's ``embeddings`` / ``norm_f``).
A difference is explained only by a named convention (:func:`_explain`); any other is reported as
unexplained, and the test over every fixture fails on it.
"""

from __future__ import annotations

from typing import Any

from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Part
from llm_cost.model.structure import build
from llm_cost.specs.hf.oracle import TransformersModel, build_transformers_model, top_module
from llm_cost.specs.schema import ModelSpec

__all__ = ["ModuleCount", "TransformersCheck", "check_against_transformers"]

#: transformers' top-level module names -> the names of our tensor list, where a family differs.
_SAME_MODULE = {
    "wte": "embed_tokens",
    "word_embeddings": "embed_tokens",
    "embeddings": "embed_tokens",
    "wpe": "embed_positions",
    "h": "layers",
    "ln_f": "norm",
    "norm_f": "norm",
    "embedding_norm": "norm",
}


@record
class ModuleCount:
    """One top-level module: our elements, transformers' (parameters and persistent buffers), the
    difference (ours less theirs) and, where it is not 0, the convention that explains it (None:
    unexplained)."""

    module: str
    ours: int
    transformers: int
    difference: int
    why: str | None = None


@record
class TransformersCheck(Result):
    """Our main-model count against transformers' model built from the same config (module docstring)."""

    transformers_version: str
    torch_version: str
    model_class: str
    ours: int
    transformers_total: int
    difference: int
    modules: list[ModuleCount]
    explained: bool  # every difference has a convention
    transformers_buffers: int  # persistent buffers among transformers' elements (stored; counted by both)
    changes: list[str]  # what the config needed for transformers to build it
    conventions: list[str]
    #: layers whose attention kind (full, sliding, chunked, linear) differs from transformers'
    #: layer_types (None: transformers' config lists none comparable), and the two sliding windows
    #: where a layer slides (the KV cache follows both)
    layer_type_differences: list[int] | None = None
    sliding_windows: tuple[int | None, int | None] | None = None


#: Our top-level names (the checkpoint's) -> the module transformers loads them into: MiniMax-M3's
#: stored ``patch_merge.*`` goes into ``multi_modal_projector`` (transformers conversion_mapping.py).
_LOADED_INTO = {"patch_merge": "multi_modal_projector"}


def _ours(spec: ModelSpec) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in build(spec).tensors:
        if t.part in (Part.MTP, Part.MTP_COPY) or not t.total:
            continue
        name = _LOADED_INTO.get(top_module(t.name), top_module(t.name))
        out[name] = out.get(name, 0) + t.total
    return out


def _theirs(model: TransformersModel) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, n in model.modules.items():
        ours = _SAME_MODULE.get(name, name)
        out[ours] = out.get(ours, 0) + n
    return out


def _explain(spec: ModelSpec, config: dict[str, Any], module: str, difference: int) -> str | None:
    """The convention that explains ``difference`` (ours less transformers') in ``module``, or None.

    * ``lm_head`` exactly V x d more: the wrapper's class ties the embedding by default
      (Mistral3Config tie_word_embeddings = true) where the config does not say, while the
      checkpoint stores lm_head.weight (our reading: untied, the language model's class default),
      which transformers' from_pretrained unties on load (modeling_utils.PreTrainedModel.tie_weights).
    """
    head = spec.vocab_size * spec.hidden_size
    if module != "lm_head" or difference != head or spec.tie_word_embeddings:
        return None
    text = config.get("text_config")
    inner = text.get("tie_word_embeddings") if isinstance(text, dict) else None
    if config.get("tie_word_embeddings") is None:
        return (
            "transformers ties lm_head by the wrapper class's default tie_word_embeddings = true; the "
            "config does not say, the checkpoint stores lm_head.weight, and from_pretrained unties it"
        )
    if config.get("tie_word_embeddings") is True and inner is False:
        return (
            "transformers ties lm_head by the wrapper's tie_word_embeddings = true (its class default, written "
            "out); text_config says false, the checkpoint stores lm_head.weight, and from_pretrained unties it"
        )
    return None


#: transformers' layer_types names -> the attention kind they are (GLM-5's and MiniMax-M3's
#: indexed layers attend fully; Mamba and linear mixers are one "linear" kind on both sides).
_KIND = {
    "full_attention": "full",
    "indexed_attention": "full",
    "deepseek_sparse_attention": "full",
    "minimax_m3_sparse": "full",
    "sliding_attention": "sliding",
    "chunked_attention": "chunked",
    "linear_attention": "linear",
    "mamba2": "linear",
}


def _schedule(
    spec: ModelSpec, model: TransformersModel
) -> tuple[list[int] | None, tuple[int | None, int | None] | None]:
    """(layers whose attention kind differs from transformers' layer_types, or None when its list
    is not of attention kinds; our and its sliding windows, or None when no layer slides)."""
    theirs = model.layer_types
    ours = [_KIND.get(spec.layer_type(i).value) for i in range(spec.num_hidden_layers)]
    differing = None
    if theirs is not None and len(theirs) == len(ours) and all(t in _KIND for t in theirs) and None not in ours:
        differing = [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != _KIND[b]]
    window = getattr(spec.attention, "sliding_window", None)
    windows = (window, model.sliding_window) if "sliding" in ours else None
    return differing, windows


def check_against_transformers(spec: ModelSpec, config: dict[str, Any], source: str) -> TransformersCheck:
    """Compare ``spec`` (read from ``config``) with the model transformers builds from ``config``
    (InputError without the ``hf`` extra, SpecError when transformers cannot build it)."""
    model = build_transformers_model(config, source)
    ours, theirs = _ours(spec), _theirs(model)
    rows = []
    for name in sorted(set(ours) | set(theirs), key=lambda n: (-(ours.get(n, 0) or theirs.get(n, 0)), n)):
        diff = ours.get(name, 0) - theirs.get(name, 0)
        why = _explain(spec, config, name, diff) if diff else None
        rows.append(ModuleCount(name, ours.get(name, 0), theirs.get(name, 0), diff, why))
    total_ours, total_theirs = sum(ours.values()), sum(theirs.values())
    differing, windows = _schedule(spec, model)
    return TransformersCheck(
        transformers_version=model.transformers_version,
        torch_version=model.torch_version,
        model_class=model.model_class,
        ours=total_ours,
        transformers_total=total_theirs,
        difference=total_ours - total_theirs,
        modules=rows,
        explained=all(r.difference == 0 or r.why is not None for r in rows)
        and not differing
        and (windows is None or windows[0] == windows[1]),
        transformers_buffers=sum(model.buffers.values()),
        changes=model.changes,
        conventions=[
            f"transformers {model.transformers_version} {model.model_class} built on the meta device (no weights)",
            "both sides: stored tensors, tied ones once; persistent buffers the checkpoint stores "
            "(e_score_correction_bias, layer_scalar) included, rotary inv_freq excluded",
            "ours: the main model; MTP modules (which transformers does not build) left out",
            "layer schedule: each layer's attention kind (full, sliding, chunked, linear) against transformers' "
            "layer_types, and the sliding window, which decide the KV cache",
        ],
        layer_type_differences=differing,
        sliding_windows=windows,
    )
