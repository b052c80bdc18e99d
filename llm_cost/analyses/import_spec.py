"""``llm-cost import``: write a Hugging Face config.json as a YAML spec, atomically, after
checking that the YAML loads back to the same spec."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import yaml

from llm_cost.core.errors import InputError, SpecError
from llm_cost.core.limits import MAX_ECHO, MAX_NAME
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.model.params import count_params
from llm_cost.specs.declare import validated
from llm_cost.specs.files import check_out, shown, write_file
from llm_cost.specs.hf import load_hf_config_verbose, spec_to_yaml
from llm_cost.specs.schema import ModelSpec

__all__ = ["ImportResult", "import_config"]

#: A spec name: the catalogue finds a spec by its file stem.
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9._+-]*")


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
    written; ``out`` is never replaced unless ``force``; the file appears whole or not at all
    (temporary file in the same folder, then rename), with the user's umask; a symbolic link, a
    folder, a FIFO or a device is refused (:func:`~llm_cost.specs.files.check_out`,
    :func:`~llm_cost.specs.files.write_file`). Raises SpecError / InputError (exit 2), or
    OutputError (exit 1) when the file system refuses the write (read-only, full).
    """

    out = Path(out)
    target = check_out(out, "out", force, (".yaml", ".yml"))
    spec_name = (name if name is not None else out.stem).strip().lower()
    if not NAME_PATTERN.fullmatch(spec_name) or len(spec_name) > MAX_NAME:
        where = "name:" if name is not None else "out: the file stem"
        raise InputError(
            f"{where} {shown(spec_name, MAX_ECHO)!r} is not a valid spec identifier (lower-case letters, digits, "
            f". _ + -; at most {MAX_NAME} characters)" + ("" if name is not None else "; or give name"),
            fields=("out", "name"),
        )
    spec, defaults = load_hf_config_verbose(Path(config), spec_name)
    text = spec_to_yaml(spec)
    if validated(ModelSpec, yaml.safe_load(text)) != spec:  # pragma: no cover - a bug, not a user error
        raise SpecError(f"{out}: the YAML written for {spec_name} would not load back to the same spec")
    total = count_params(spec).total_params
    write_file(target, text)
    return ImportResult(str(out), spec.name, spec.display_name, spec.model_type, total, defaults, spec.source.url)
