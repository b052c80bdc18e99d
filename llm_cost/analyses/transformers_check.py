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
    return TransformersCheck(
        transformers_version=model.transformers_version,
        torch_version=model.torch_version,
        model_class=model.model_class,
        ours=total_ours,
        transformers_total=total_theirs,
        difference=total_ours - total_theirs,
        modules=rows,
        explained=all(r.difference == 0 or r.why is not None for r in rows),
        transformers_buffers=sum(model.buffers.values()),
        changes=model.changes,
        conventions=[
            f"transformers {model.transformers_version} {model.model_class} built on the meta device (no weights)",
            "both sides: stored tensors, tied ones once; persistent buffers the checkpoint stores "
            "(e_score_correction_bias, layer_scalar) included, rotary inv_freq excluded",
            "ours: the main model; MTP modules (which transformers does not build) left out",
        ],
    )
