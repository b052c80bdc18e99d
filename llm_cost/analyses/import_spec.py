"""``llm-cost import``: write a Hugging Face config.json as a YAML spec, atomically, after
checking that the YAML loads back to the same spec."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import yaml

from llm_cost.core.errors import InputError, OutputError, SpecError
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.model.params import count_params
from llm_cost.specs.declare import validated
from llm_cost.specs.files import check_out, shown, write_atomically
from llm_cost.specs.hf import load_hf_config_verbose, spec_to_yaml
from llm_cost.specs.schema import ModelSpec

__all__ = ["ImportResult", "import_config"]

_NAME_RE = re.compile(r"[a-z0-9][a-z0-9._+-]*")


@record
class ImportResult(Result):
    """What ``llm-cost import`` wrote."""

    path: str
    name: str
    display_name: str
    model_type: str
    total_params: int
    defaults: list[str]
    source: str


def import_config(config: Path, out: Path, name: Optional[str] = None, force: bool = False) -> ImportResult:
    """Write our YAML spec for the config.json ``config`` (or its folder) to ``out``, atomically.

    The spec's name is ``name`` or ``out``'s stem (the catalogue finds a spec by its file stem).
    The text is validated by loading it back (it must give the same spec) before anything is
    written; ``out`` is never overwritten unless ``force``; the file appears whole or not at all
    (temporary file in the same folder, then rename), with the user's umask; a symbolic link is
    followed to its target, and only a regular file is written
    (:func:`~llm_cost.specs.files.check_out`). Raises SpecError / InputError (exit 2), or
    OutputError (exit 1) when the file system refuses the write (read-only, full).
    """

    out = Path(out)
    if out.suffix.lower() not in (".yaml", ".yml"):
        raise InputError(f"out: {str(out)!r} must end in .yaml or .yml", fields=("out",))
    spec_name = (name if name is not None else out.stem).strip().lower()
    if not _NAME_RE.fullmatch(spec_name) or len(spec_name) > 128:
        where = "name:" if name is not None else "out: the file stem"
        raise InputError(
            f"{where} {shown(spec_name, 60)!r} is not a valid spec identifier (lower-case letters, digits, "
            ". _ + -; at most 128 characters)" + ("" if name is not None else "; or give name"),
            fields=("out", "name"),
        )
    target = check_out(out, spec_name, force)
    spec, defaults = load_hf_config_verbose(Path(config), spec_name)
    text = spec_to_yaml(spec)
    if validated(ModelSpec, yaml.safe_load(text)) != spec:  # pragma: no cover - a bug, not a user error
        raise SpecError(f"{out}: the YAML written for {spec_name} would not load back to the same spec")
    total = count_params(spec).total_params
    try:
        write_atomically(target, text, force)
    except OSError as exc:
        raise OutputError(f"{shown(out)}: cannot be written ({exc.strerror or exc}); nothing was written") from None
    return ImportResult(str(out), spec.name, spec.display_name, spec.model_type, total, defaults, spec.source.url)
