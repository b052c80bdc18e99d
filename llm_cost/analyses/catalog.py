"""What ships: the model and GPU catalogues, and one spec as loaded (for ``list`` and ``show``)."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from llm_cost.core.errors import SpecError
from llm_cost.core.records import record
from llm_cost.specs.declare import to_data
from llm_cost.specs.load import WrongKind, gpu_names, load_gpu, load_model, model_names

__all__ = ["ModelEntry", "CatalogEntry", "GPUEntry", "SpecView", "model_catalog", "gpu_catalog", "find_spec"]


@record
class ModelEntry:
    """One shipped model with the figures that identify it."""

    name: str
    display_name: str
    aliases: list[str]
    model_type: str
    total_params: int
    architecture: str


@record
class CatalogEntry:
    """One model of the offline catalog (:mod:`llm_cost.specs.catalog`): a published config.json,
    read when the model is asked for. ``checkpoint_total`` is its checkpoint's parameter total from
    an independent source (``total_source``), counted as ``total_counts`` says (None when no total
    was found); ``source`` is where the config.json was copied from; ``reader`` is "ok" or
    "pending: why" when today's config reader refuses or miscounts it."""

    name: str
    hub_ids: list[str]
    aliases: list[str]
    family: str
    model_type: str
    checkpoint_total: int | None
    total_counts: str | None
    total_source: str
    source: str
    reader: str


@record
class GPUEntry:
    """One shipped GPU with its headline datasheet figures. ``memory_gb`` is the datasheet's
    figure as printed ("80GB"); ``capacity_bytes`` the capacity deployments see, as the card
    reports it (an "80GB" H100's 81,559 MiB = 85,520,809,984 B; ``GPUSpec.capacity_bytes``), which
    ``fit`` and ``serve`` size against."""

    name: str
    display_name: str
    aliases: list[str]
    memory_gb: float
    capacity_bytes: int
    memory_bandwidth_tb_s: float
    bf16_dense_tflops: float | None
    fp8_dense_tflops: float | None
    tdp_w: float


@record
class SpecView:
    """A spec as loaded and validated: ``kind`` is "model" or "gpu"; ``spec`` its fields."""

    kind: str
    name: str
    spec: dict[str, Any]
    source: dict[str, Any] = field(default_factory=dict)


def _architecture(spec) -> str:
    parts = [spec.attention.kind.upper()]
    if spec.linear_attention is not None:
        parts.append("hybrid linear attention")
    if spec.moe is not None:
        parts.append(f"MoE {spec.moe.num_experts}e top-{spec.moe.num_experts_per_tok}")
    if spec.vision is not None:
        parts.append("vision tower")
    if spec.audio is not None:
        parts.append("audio tower")
    if spec.mtp is not None:
        parts.append("MTP")
    return ", ".join(parts)


def model_catalog() -> list[ModelEntry | CatalogEntry]:
    """Every shipped model, validated, with its exact parameter total; then every model of the
    offline catalog with its source and checkpoint total (its config.json is not read)."""
    from llm_cost.model.structure import build
    from llm_cost.specs.catalog import entries

    out: list[ModelEntry | CatalogEntry] = []
    for name in model_names():
        spec = load_model(name)
        out.append(
            ModelEntry(
                spec.name,
                spec.display_name,
                list(spec.aliases),
                spec.model_type,
                build(spec).total_params,
                _architecture(spec),
            )
        )
    for short, e in entries().items():
        out.append(
            CatalogEntry(
                short,
                list(e["hub_ids"]),
                list(e["aliases"]),
                e["family"],
                e["model_type"],
                e["total"],
                e["total_counts"],
                e["total_source"],
                e["source"],
                e["reader"],
            )
        )
    return out


def gpu_catalog() -> list[GPUEntry]:
    """Every shipped GPU, validated."""
    out = []
    for name in gpu_names():
        g = load_gpu(name)
        out.append(
            GPUEntry(
                g.name,
                g.display_name,
                list(g.aliases),
                g.memory_gb,
                g.capacity_bytes,
                g.memory_bandwidth_tb_s,
                g.dense_tflops.get("bf16"),
                g.dense_tflops.get("fp8"),
                g.tdp_w,
            )
        )
    return out


def find_spec(name: str) -> SpecView:
    """A model or GPU by name, alias or path; SpecError naming both catalogues if neither has it."""
    errors = []
    for kind, loader in (("model", load_model), ("gpu", load_gpu)):
        try:
            spec = loader(name)
        except WrongKind:  # a GPU spec's path: the next loader takes it
            continue
        except SpecError as exc:
            errors.append(str(exc))
            if not str(exc).startswith("unknown"):
                raise
            continue
        data = to_data(spec, exclude_none=True)
        return SpecView(kind, spec.name, data, data.get("source", {}))
    raise SpecError(" / ".join(errors))
