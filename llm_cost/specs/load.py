"""Find and load model and GPU specs: shipped names, aliases, or paths to YAML files.

Shipped specs live in ``models/`` and ``hardware/`` (inside the wheel under ``llm_cost/_data``).
Names are case-insensitive; a name is a file's stem or one of the aliases the file lists.
YAML is read with ``yaml.safe_load`` only. Every failure raises :class:`SpecError` whose
message names the file, the field and the rule, or lists the names that exist with the closest
match; the CLI prints it and exits with code 2.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llm_cost.core.errors import SpecError
from llm_cost.specs.files import read_yaml, validation_message

if TYPE_CHECKING:
    from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = ["data_dir", "model_names", "gpu_names", "load_model", "load_gpu"]


def data_dir(kind: str) -> Path:
    """Folder of shipped specs: ``kind`` is "models" or "hardware" (wheel or source checkout)."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_data" / kind
    return packaged if packaged.is_dir() else here.parent / kind


def _names(kind: str) -> list[str]:
    return sorted(p.stem for p in data_dir(kind).glob("*.yaml"))


def model_names() -> list[str]:
    """Canonical names of the shipped model specs."""
    return _names("models")


def gpu_names() -> list[str]:
    """Canonical names of the shipped GPU specs."""
    return _names("hardware")


def _validate(path: Path, cls: type, data: dict[str, Any]) -> Any:
    from pydantic import ValidationError

    kind = "a GPU" if cls.__name__ == "HardwareSpec" else "a model"
    if kind == "a GPU" and "hidden_size" in data:
        raise SpecError(f"{path}: this is a model spec, not a GPU spec (give it as MODEL, not --gpu)")
    if kind == "a model" and "dense_tflops" in data:
        raise SpecError(f"{path}: this is a GPU spec, not a model spec (give it as --gpu, not MODEL)")
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise SpecError(validation_message(path, exc)) from None


def _looks_like_path(text: str) -> bool:
    return bool(text.strip()) and ("/" in text or "\\" in text or text.endswith((".yaml", ".yml", ".json"))
                                   or Path(text).exists())


def _resolve(kind: str, name: str, what: str) -> Path:
    key = name.strip().lower()
    folder = data_dir(kind)
    direct = folder / f"{key}.yaml"
    if key and direct.is_file():
        return direct
    import yaml

    names = []
    for path in sorted(folder.glob("*.yaml")):
        names.append(path.stem)
        head = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        aliases = [str(a).lower() for a in head.get("aliases", [])]
        if key in aliases:
            return path
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.4)
    hint = f"; closest match: {close[0]}" if close else ""
    raise SpecError(f"unknown {what} {name!r}{hint}. Available {what}s: {', '.join(names)}")


def load_model(name_or_path: str) -> "ModelSpec":
    """A shipped model by name or alias, a YAML spec file, a Hugging Face config.json (or a
    folder holding one, see :mod:`llm_cost.specs.hf`), or a Hub id ``org/name[@revision]`` that is
    not an existing path (see :mod:`llm_cost.specs.hub`); SpecError if none works."""
    from llm_cost.specs import hub
    from llm_cost.specs.schema import ModelSpec

    if hub.is_hub_id(name_or_path):
        return hub.load_hub_model(name_or_path)
    if name_or_path.strip().lower().endswith(".gguf"):
        from llm_cost.specs.gguf import load_gguf  # lazy: only GGUF models pay for the gguf import

        return load_gguf(Path(name_or_path))[0]
    path = Path(name_or_path) if _looks_like_path(name_or_path) else _resolve("models", name_or_path, "model")
    if path.suffix.lower() == ".json" or (path.is_dir() and path.suffix.lower() not in (".yaml", ".yml")):
        from llm_cost.specs.hf import load_hf_config  # lazy: only config.json models pay for the import

        return load_hf_config(path)
    return _validate(path, ModelSpec, read_yaml(path))


def load_gpu(name_or_path: str) -> "HardwareSpec":
    """A shipped GPU by name or alias, or a YAML spec file; SpecError if neither works."""
    from llm_cost.specs.schema import HardwareSpec

    path = Path(name_or_path) if _looks_like_path(name_or_path) else _resolve("hardware", name_or_path, "GPU")
    return _validate(path, HardwareSpec, read_yaml(path))
