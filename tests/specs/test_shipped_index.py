"""The shipped index (``llm_cost/specs/shipped_index.py``) is what validating the YAML files
gives, and a shipped name loads the same spec through the index as through its YAML."""

from __future__ import annotations

import pytest

import llm_cost.specs.files as files
import llm_cost.specs.load as load
from llm_cost.specs import index
from llm_cost.specs.declare import validated
from llm_cost.specs.files import read_yaml
from llm_cost.specs.schema import HardwareSpec, ModelSpec
from llm_cost.specs.shipped_index import INDEX


def test_index_is_current():
    assert INDEX == load.build_index(), "run: python scripts/build_index.py"
    namespace: dict = {}
    exec(load.index_source(INDEX), namespace)  # the generated text evaluates back to the index
    assert namespace["INDEX"] == INDEX


@pytest.mark.parametrize(
    "kind,cls,loader", [("models", ModelSpec, load.load_model), ("hardware", HardwareSpec, load.load_gpu)]
)
def test_index_loads_the_same_specs_as_the_yaml(kind, cls, loader):
    for path in sorted(load.data_dir(kind).glob("*.yaml")):
        from_yaml = validated(cls, read_yaml(path))
        assert loader(path.stem) == from_yaml == loader(str(path))
        for alias in from_yaml.aliases:
            assert loader(alias.upper()) == from_yaml


def test_an_edited_file_is_read_from_its_yaml(monkeypatch, tmp_path):
    """A checkout whose YAML changed after the index was built loads the YAML, not the index."""
    folder = tmp_path / "models"
    folder.mkdir()
    text = (load.data_dir("models") / "llama3-8b.yaml").read_text()
    (folder / "llama3-8b.yaml").write_text(text.replace("num_hidden_layers: 32", "num_hidden_layers: 16"))
    monkeypatch.setattr(load, "data_dir", lambda kind: folder)
    assert load.load_model("llama3-8b").num_hidden_layers == 16
    assert load.load_model("meta-llama-3-8b").num_hidden_layers == 16


@pytest.mark.parametrize("kind,cls", [("models", ModelSpec), ("hardware", HardwareSpec)])
def test_the_unvalidated_fast_path_gives_the_validated_spec(kind, cls):
    """Every index entry rebuilt without validation equals it validated, down to each nested
    object's class and each number's type (``repr`` tells 312 from 312.0)."""
    entries = INDEX[kind]
    assert {path.stem for path in load.data_dir(kind).glob("*.yaml")} == set(entries)
    for entry in entries.values():
        fast, checked = index.rebuilt(cls, entry), validated(cls, entry["spec"])
        assert fast == checked and repr(fast) == repr(checked)
        assert vars(fast).keys() == vars(checked).keys()


def test_a_name_the_index_lacks_parses_no_yaml(monkeypatch):
    """A GPU name given where a model may be (``show h100``) or an unknown name is looked up in
    the index's aliases, not by parsing every shipped YAML file."""

    def no_yaml(path):
        raise AssertionError(f"parsed {path}")

    monkeypatch.setattr(files, "read_yaml", no_yaml)  # load imports it where it reads a file
    with pytest.raises(load.SpecError, match="unknown model 'h100'.*llama3-8b"):
        load.load_model("h100")
    assert load.load_gpu("H100-SXM").name == "h100"
