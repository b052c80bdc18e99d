"""Find and load model and GPU specs: shipped names, aliases, or paths to YAML files.

Shipped specs live in ``models/`` and ``hardware/`` (inside the wheel under ``llm_cost/_data``).
Names are case-insensitive; a name is a file's stem or one of the aliases the file lists.
YAML is read with a safe loader only (:mod:`llm_cost.specs.files`, imported where a file is
read: a shipped name's start needs none of it).

A shipped name is looked up in :mod:`llm_cost.specs.shipped_index`, a generated index
(:mod:`llm_cost.specs.index`) of every shipped file with its names, the CRC-32 of its bytes and
its validated content, so the common case loads one compiled module (no JSON or YAML parser, no
pydantic) instead of parsing every YAML file. A file whose bytes no longer match its entry (a
checkout edited since the index was built) or that the index lacks is read from its YAML as
before. ``python scripts/build_index.py`` rebuilds the index; a test checks it is current. Every
failure raises :class:`SpecError` whose message names the file, the field and the rule, or lists
the names that exist with the closest match; the CLI prints it and exits with code 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from llm_cost.core.errors import SpecError
from llm_cost.core.limits import MAX_NAME
from llm_cost.specs import index
from llm_cost.specs.index import data_dir

if TYPE_CHECKING:
    from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = [
    "WrongKind",
    "data_dir",
    "model_names",
    "gpu_names",
    "load_model",
    "load_gpu",
    "build_index",
    "index_source",
    "checked_spec",
    "catalog_name",
]


class WrongKind(SpecError):
    """A GPU spec given where a model is expected, or the other way round."""


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

    from llm_cost.specs.declare import validated
    from llm_cost.specs.files import shown, validation_message

    kind = "a GPU" if cls.__name__ == "HardwareSpec" else "a model"
    if kind == "a GPU" and "hidden_size" in data:
        raise WrongKind(f"gpu: {shown(path)!r} is a model spec, not a GPU spec; give it as the model", fields=("gpu",))
    if kind == "a model" and "dense_tflops" in data:
        raise WrongKind(f"{shown(path)!r} is a GPU spec, not a model spec; give it as gpu", fields=("gpu",))
    try:
        return validated(cls, data)
    except ValidationError as exc:
        raise SpecError(validation_message(path, exc)) from None


def checked_spec(spec: Any, what: str) -> Any:
    """``spec`` (a ModelSpec or HardwareSpec built in Python, which its constructor does not
    validate) validated as a file is; SpecError naming ``what`` and the fields otherwise."""
    from pydantic import ValidationError

    from llm_cost.specs.declare import to_data, validated
    from llm_cost.specs.files import validation_message

    try:
        return validated(type(spec), to_data(spec))
    except ValidationError as exc:
        raise SpecError(validation_message(what, exc)) from None


def _exists(text: str) -> bool:
    """``Path(text).exists()``, False where the system cannot even look (a name over 255 bytes,
    a NUL character)."""
    try:
        return Path(text).exists()
    except (OSError, ValueError):
        return False


def _is_dir(path: Path) -> bool:
    """``path.is_dir()``, False where the system cannot even look (its reader says why)."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def looks_like_path(text: str) -> bool:
    """Whether a model or GPU argument is a file (a separator, a spec's suffix, or an existing
    file) rather than a name."""
    return bool(text.strip()) and (
        "/" in text or "\\" in text or text.endswith((".yaml", ".yml", ".json")) or _exists(text)
    )


def build_index() -> dict[str, dict[str, dict[str, Any]]]:
    """The index of the shipped specs, from their YAML: per kind ("models", "hardware") and file
    stem, the file name, its lower-case aliases and its :func:`~llm_cost.specs.index.entry`
    (CRC-32, validated content, nested classes)."""
    from llm_cost.specs.files import read_yaml
    from llm_cost.specs.schema import HardwareSpec, ModelSpec

    out: dict[str, dict[str, dict[str, Any]]] = {}
    for kind, cls in (("models", ModelSpec), ("hardware", HardwareSpec)):
        out[kind] = {}
        for path in sorted(data_dir(kind).glob("*.yaml")):
            spec = _validate(path, cls, read_yaml(path))
            out[kind][path.stem] = {
                "file": path.name,
                "aliases": [a.lower() for a in spec.aliases],
                **index.entry(path, spec),
            }
    return out


def index_source(built: dict[str, dict[str, dict[str, Any]]]) -> str:
    """The text of :mod:`llm_cost.specs.shipped_index` for ``built`` (:func:`build_index`)."""
    return index.index_source(
        "The index of the shipped specs: their names, hashes and validated content. Generated by\n"
        "``python scripts/build_index.py`` from models/ and hardware/; do not edit.",
        built,
    )


def _index(kind: str) -> dict[str, dict[str, Any]]:
    """The shipped index's entries of ``kind``; empty when the index module is missing."""
    return index.imported("llm_cost.specs.shipped_index").get(kind, {})


def _shipped(kind: str, name: str) -> dict[str, Any] | None:
    """The index entry of the shipped spec named or aliased ``name`` if its file is there and
    unchanged since the index was built; else None."""
    key = name.strip().lower()
    for stem, found in _index(kind).items():
        if key == stem or key in found["aliases"]:
            return _current(kind, stem)
    return None


def _current(kind: str, stem: str) -> dict[str, Any] | None:
    """The index's entry for the shipped file ``stem`` if its file is unchanged since the index
    was built; else None."""
    found = _index(kind).get(stem)
    return index.current(found, data_dir(kind) / found["file"]) if found is not None else None


def _resolve(kind: str, name: str, what: str) -> Path:
    """The shipped file named ``name`` (its stem) or listing it as an alias; SpecError with the
    names there are and the closest match. A file that cannot be read is skipped here (loading it
    by its stem reports why)."""
    from llm_cost.specs.files import read_yaml, shown

    key = name.strip().lower()
    folder = data_dir(kind)
    direct = folder / f"{key}.yaml"
    if key and len(key) <= MAX_NAME and direct.is_file():
        return direct
    names = []
    for path in sorted(folder.glob("*.yaml")):
        names.append(path.stem)
        found = _current(kind, path.stem)
        try:  # the index's aliases where it is current: an unknown name parses no YAML
            aliases = found["aliases"] if found is not None else read_yaml(path).get("aliases", [])
        except SpecError:
            continue
        if isinstance(aliases, list) and key in (str(a).lower() for a in aliases):
            return path
    import difflib

    more = _catalog_names() if kind == "models" else []
    close = difflib.get_close_matches(key[:MAX_NAME], names + more, n=1, cutoff=0.4)
    hint = f"; closest match: {close[0]}" if close else ""
    also = f", or one of the {len(more)} names of the offline catalog (llm-cost list models)" if more else ""
    raise SpecError(f"unknown {what} {shown(name, 60)!r}{hint}. Available {what}s: {', '.join(names)}{also}")


def _catalog_names() -> list[str]:
    """The offline catalog's short names and aliases (not its Hub ids), for a closest match."""
    from llm_cost.specs.catalog import entries

    return sorted(n for short, e in entries().items() for n in (short, *e["aliases"]))


def catalog_name(name_or_path: str) -> str | None:
    """The offline catalog's short name for ``name_or_path`` (a short name, alias or Hub id of
    :mod:`llm_cost.specs.catalog`, any case) when it is no existing path; else None. Shipped names
    are looked up before it, the Hub after it."""
    if len(name_or_path) > 2 * MAX_NAME or _exists(name_or_path):
        return None
    from llm_cost.specs.catalog import find

    return find(name_or_path)


def shipped_of_repo(model_id: str) -> str | None:
    """The shipped model whose spec's source is the Hugging Face repo of ``model_id``
    (``org/name[@revision]``, any case), else None."""
    from llm_cost.specs.hub import hf_repo_id

    repo = model_id.split("@", 1)[0].strip().lower()
    for stem, found in _index("models").items():
        source = hf_repo_id((found["spec"].get("source") or {}).get("url"))
        if source is not None and source.lower() == repo:
            return stem
    return None


def _with_shipped_hint(exc: SpecError, model_id: str) -> SpecError:
    """``exc`` of a Hub lookup, with the shipped model of that repo where there is one, or the
    offline catalog's (an attacker was refused meta-llama/Meta-Llama-3-8B offline, the id ``serve
    --emit`` prints for llama3-8b; with ``@main`` the catalog's id was not named either)."""
    stem = shipped_of_repo(model_id)
    if stem is not None:
        return SpecError(f"{exc}; or give {stem}, the shipped spec of this repo's model")
    short = catalog_name(model_id.split("@", 1)[0].strip())
    return exc if short is None else SpecError(f"{exc}; or give {short}, the offline catalog's copy of its config")


def load_model(name_or_path: str) -> ModelSpec:
    """A shipped model by name or alias, a model of the offline catalog by short name or Hub id
    (:mod:`llm_cost.specs.catalog`), a YAML spec file, a Hugging Face config.json (or a folder
    holding one, see :mod:`llm_cost.specs.hf`), or a Hub id ``org/name[@revision]`` that is not an
    existing path (see :mod:`llm_cost.specs.hub`); SpecError if none works."""
    from llm_cost.specs.schema import ModelSpec

    # A shipped name first: it has no "/", so it is never a Hub id, and it skips the Hub module.
    if not looks_like_path(name_or_path) and (shipped := _shipped("models", name_or_path)) is not None:
        return index.rebuilt(ModelSpec, shipped)
    if (short := catalog_name(name_or_path)) is not None:
        from llm_cost.specs.catalog import load_catalog_model

        return load_catalog_model(short)
    from llm_cost.specs import hub

    if hub.is_hub_id(name_or_path):
        try:
            return hub.load_hub_model(name_or_path)
        except SpecError as exc:
            raise _with_shipped_hint(exc, name_or_path) from None
    if name_or_path.strip().lower().endswith(".gguf"):
        from llm_cost.specs.gguf import load_gguf  # lazy: only GGUF models pay for the gguf import

        return load_gguf(Path(name_or_path))[0]
    path = Path(name_or_path) if looks_like_path(name_or_path) else _resolve("models", name_or_path, "model")
    if path.suffix.lower() == ".json" or (_is_dir(path) and path.suffix.lower() not in (".yaml", ".yml")):
        from llm_cost.specs.hf import load_hf_config  # lazy: only config.json models pay for the import

        return load_hf_config(path)
    from llm_cost.specs.files import read_yaml

    return _validate(path, ModelSpec, read_yaml(path))


def load_gpu(name_or_path: str) -> HardwareSpec:
    """A shipped GPU by name or alias, or a YAML spec file; SpecError if neither works."""
    from llm_cost.specs.schema import HardwareSpec

    if not looks_like_path(name_or_path) and (shipped := _shipped("hardware", name_or_path)) is not None:
        return index.rebuilt(HardwareSpec, shipped)
    path = Path(name_or_path) if looks_like_path(name_or_path) else _resolve("hardware", name_or_path, "GPU")
    from llm_cost.specs.files import read_yaml

    return _validate(path, HardwareSpec, read_yaml(path))
