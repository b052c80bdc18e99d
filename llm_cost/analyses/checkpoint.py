"""A model file's stored tensors against the tensors its config describes, when the file is a
checkpoint (a GGUF file or a folder of safetensors files); the GGUF file's bits per weight.

``params`` calls :func:`checkpoint_report` on every start, and most starts name a shipped model
or a YAML spec: so the comparison (:mod:`llm_cost.analyses.checkpoint_roles`, whose result classes
and name patterns cost a cold start about 3 ms) and the checkpoint readers are imported only once
the path is known to be a checkpoint.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from llm_cost.core.errors import SpecError
from llm_cost.model.structure import build
from llm_cost.specs.schema import ModelSpec

if TYPE_CHECKING:
    from llm_cost.analyses.checkpoint_roles import CheckpointReport

__all__ = ["checkpoint_report", "hub_checkpoint_report", "gguf_weight_bits"]


def gguf_weight_bits(spec: ModelSpec, path: Path) -> Fraction:
    """Exact bits per parameter of a GGUF file: its tensor bytes x 8 / the parameters its metadata
    describes, so weights come to the file's bytes exactly."""
    from llm_cost.specs.gguf import read_gguf

    return Fraction(8 * read_gguf(path).n_bytes, build(spec).total_params)


def checkpoint_report(spec: ModelSpec, path: Path) -> CheckpointReport | None:
    """Stored against described tensors when ``path`` is a GGUF file or a folder of safetensors
    files; None for anything else (a shipped name, a YAML spec, a config.json): a path that is
    no folder is told apart before the checkpoint reader is imported (about 4 ms of a cold start)."""
    if path.suffix.lower() == ".gguf":
        from llm_cost.analyses.checkpoint_roles import compare_gguf
        from llm_cost.specs.gguf import read_gguf

        return compare_gguf(spec, read_gguf(path))
    if not path.is_dir():
        return None
    from llm_cost.specs.checkpoint import is_checkpoint_folder, read_checkpoint

    if not is_checkpoint_folder(path):
        return None
    from llm_cost.analyses.checkpoint_roles import compare

    return compare(spec, read_checkpoint(path))


def hub_checkpoint_report(spec: ModelSpec, model_id: str) -> CheckpointReport | None:
    """Stored against described tensors of a Hugging Face model id's safetensors checkpoint, read
    from the shard headers on the Hub (:func:`llm_cost.specs.hub.hub_checkpoint`: range requests,
    no weight byte); None offline or for a repository without safetensors files, and None for an
    id of the offline catalog the Hub cannot answer (no network: the catalog's config gives the
    counts, as the catalog promises; any other id's failure is the one-line SpecError)."""
    from llm_cost.specs.hub import hub_checkpoint
    from llm_cost.specs.load import catalog_name

    try:
        stored = hub_checkpoint(model_id)
    except SpecError:
        if catalog_name(model_id) is None:
            raise
        return None
    if stored is None:
        return None
    from llm_cost.analyses.checkpoint_roles import compare

    return compare(spec, stored)
