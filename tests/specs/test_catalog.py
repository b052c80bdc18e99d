"""The offline catalog (catalog/, :mod:`llm_cost.specs.catalog`).

Every entry's config.json has the bytes of the public copy its record names (the same git blob
id), is found by its short name, aliases and Hub ids in any case, and is counted through the API
against its checkpoint's parameter total from an independent source (the Hub's safetensors
total, a provider catalogue's count, a checkpoint recount; catalog/CATALOG.yaml names each): exactly,
or with the stored extras its record's ``total_counts`` names, each derived here from the config's
own sizes (tied head V x d; FP8 block scales ceil(rows/128) x ceil(cols/128) per quantized matrix;
MXFP4 scales 1 per 32 expert values; rotary inv_freq head_dim/2 per layer). An entry marked
``reader: pending`` is refused or miscounted today; its test fails once the reader is fixed, so
the mark is flipped then.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
import yaml

import llm_cost
from llm_cost.core.errors import SpecError
from llm_cost.model.formats import is_quantized
from llm_cost.model.structure import build
from llm_cost.specs import catalog, catalog_index, catalog_names, load
from llm_cost.specs.catalog import TotalCounts

FOLDER = catalog.catalog_dir()
RECORDS = yaml.safe_load((FOLDER / catalog.CATALOG_FILE).read_text(encoding="utf-8"))


def _blob(path: Path) -> str:
    """The git blob id of a file's bytes (``git hash-object``)."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _fp8_block_scales(spec) -> int:
    """FP32 weight_scale_inv elements: one per 128 x 128 block of every FP8 matrix, MTP included."""
    q = spec.quantization
    assert q is not None and q.weights_format == "fp8_block", (
        "an FP8-block checkpoint's config has its quantization_config"
    )
    return sum(
        math.ceil(t.shape[0] / 128) * math.ceil(t.shape[1] / 128) * t.copies * max(t.layers, 1)
        for t in build(spec).tensors
        if t.stored and is_quantized(q, t)
    )


def _expected(counts: str, config: dict, spec, r) -> int:
    """Our figure in the convention the record's total counts in (TotalCounts); the stored extras'
    sizes are read from the config.json itself."""
    kind = TotalCounts(counts)
    if kind is TotalCounts.TOTAL:
        return r.total_params
    extra = {
        TotalCounts.CHECKPOINT: lambda: 0,
        TotalCounts.TIED_HEAD: lambda: config["vocab_size"] * config["hidden_size"],
        TotalCounts.FP8_BLOCK_SCALES: lambda: _fp8_block_scales(spec),
        TotalCounts.MXFP4_SCALES: lambda: r.routed_expert_params // 32,
        TotalCounts.ROTARY_INV_FREQ: lambda: (
            config["num_hidden_layers"] * config["hidden_size"] // config["num_attention_heads"] // 2
        ),
    }[kind]()
    return r.checkpoint_params + extra


def test_index_is_current():
    built = catalog.build_catalog_index()
    assert catalog_index.INDEX == built["entries"], "run: python scripts/build_index.py"
    assert catalog_names.INDEX == built["names"], "run: python scripts/build_index.py"


def test_size_and_tested_totals():
    """The catalog does not shrink: 110 entries, 61 of them with a total tested today (reader ok);
    issue #34 asks for 120 and 100 (the gap is named in the catalog's hand-over)."""
    tested = [s for s, r in RECORDS.items() if r["total"] is not None and r["reader"] == "ok"]
    assert len(RECORDS) >= 110, len(RECORDS)
    assert len(tested) >= 61, len(tested)


@pytest.mark.parametrize("short", sorted(RECORDS))
def test_entry(short):
    """The file is the named copy; every name finds it; its count equals the checkpoint's total."""
    record = RECORDS[short]
    assert _blob(FOLDER / short / "config.json") == record["config_source"]["blob"]
    for name in (short, *record.get("aliases", []), *record["hub_ids"]):
        assert load.catalog_name(name.upper()) == short
    ok = record["reader"] == "ok"
    try:
        spec = llm_cost.load_model(short)
    except SpecError as exc:
        assert not ok, str(exc)
        return
    if record["total"] is None:
        assert ok, "loads now: set reader: ok"
        return
    config = json.loads((FOLDER / short / "config.json").read_text(encoding="utf-8"))
    got = _expected(record["total_counts"], config, spec, llm_cost.params(spec))
    if ok:
        assert got == record["total"]
    else:
        assert got != record["total"], "the reader counts it now: set reader: ok"


def test_names_are_unique_and_not_shipped():
    """No catalog name is a shipped model's name or alias (those keep theirs); building refuses one."""
    shipped = {n for stem, e in load._index("models").items() for n in (stem, *e["aliases"])}
    assert not shipped & set(catalog_names.INDEX)


def test_a_hub_id_loads_offline_without_the_hub(monkeypatch, tmp_path):
    """A catalog Hub id in any case loads with HF_HUB_OFFLINE=1 and an empty cache, named by its
    short name and shown as its Hub id; a revision goes to the Hub (and fails offline)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    spec = llm_cost.load_model("META-LLAMA/llama-3.1-70b-instruct")
    assert (spec.name, spec.display_name) == ("llama3.1-70b-instruct", "meta-llama/Llama-3.1-70B-Instruct")
    assert "offline catalog copy" in spec.source.url
    with pytest.raises(SpecError, match="HF_HUB_OFFLINE"):
        llm_cost.load_model("meta-llama/Llama-3.1-70B-Instruct@main")


def test_defaults_of_a_catalog_model_are_listed():
    """``--verbose`` lists the defaults a catalog config took, as for any config.json."""
    assert isinstance(llm_cost.defaults_used("llama3.1-8b"), list)


def test_unknown_name_offers_the_closest_catalog_name():
    with pytest.raises(SpecError, match="closest match: qwen3-32b.*offline catalog"):
        llm_cost.load_model("qwen3-32")


def test_list_models_shows_the_catalog():
    rows = {e.name: e for e in llm_cost.catalog("models")}
    assert rows["llama3.1-70b-instruct"].checkpoint_total == 70_553_706_496
    assert rows["llama3.1-70b-instruct"].source.startswith("github.com/inference-sim/inference-sim ")
    assert "llama3-8b" in rows  # the shipped models stay


def test_a_hub_id_offline_from_the_command_line(cli):
    """A catalog Hub id as MODEL with no network and an empty Hugging Face cache (the autouse
    fixture of tests/conftest.py sets HF_HUB_OFFLINE=1 and an empty HF_HUB_CACHE); ``serve`` takes
    MODEL through the same loader (its run is in the catalog's report, over a second)."""
    r = cli("params", "meta-llama/Llama-3.1-70B-Instruct", "--json")
    assert r.code == 0, r.err
    assert r.json()["total_params"] == 70_553_706_496


_QUANTIZED_NAME = ("fp8", "fp4")


@pytest.mark.parametrize("short", sorted(s for s, r in RECORDS.items() if "quant_config_source" in r))
def test_a_modelopt_export_reads_its_hf_quant_config(short):
    """NVIDIA's ModelOpt exports keep their format in hf_quant_config.json, not config.json; the
    copy beside the entry's config.json is the named public copy (same git blob id), and the model
    is weighed in its quant_algo, not at torch_dtype (a new user's trial: nvidia/DeepSeek-V3-0324-NVFP4
    printed 'weights at bf16 (16 bits) 1.34 TB' for a ~4.5-bit checkpoint)."""
    record = RECORDS[short]
    quant_file = FOLDER / short / "hf_quant_config.json"
    assert _blob(quant_file) == record["quant_config_source"]["blob"]
    algo = json.loads(quant_file.read_text(encoding="utf-8"))["quantization"]["quant_algo"]
    spec = llm_cost.load_model(short)
    assert spec.quantization is not None and spec.quantization.method == "modelopt"
    assert spec.quantization.weights_format == {"NVFP4": "nvfp4", "FP8": "fp8"}[algo]
    assert "hf_quant_config.json" in (spec.source.note or "")


@pytest.mark.parametrize(
    "short", sorted(s for s, r in RECORDS.items() if any(q in r["hub_ids"][0].lower() for q in _QUANTIZED_NAME))
)
def test_a_checkpoint_named_quantized_is_weighed_quantized_or_marked_pending(short):
    """Every entry whose Hub id says FP8 or NVFP4 loads with its quantization read, or its record
    says why not (``quantization: pending``); a pending mark fails once the format is read."""
    record = RECORDS[short]
    try:
        spec = llm_cost.load_model(short)
    except SpecError:
        assert record["reader"] != "ok"
        return
    read = spec.quantization is not None or spec.torch_dtype in ("fp8",)
    assert read != str(record.get("quantization", "")).startswith("pending: "), record.get("quantization")


def test_a_folder_with_hf_quant_config_beside_config_json(tmp_path):
    """Any folder, not only the catalog's: a config.json without quantization_config and an
    hf_quant_config.json beside it is read as ModelOpt's export (vLLM's modelopt loader does the
    same); a config.json with its own quantization_config keeps it."""
    src = FOLDER / "qwen3-32b-nvfp4"
    (tmp_path / "config.json").write_bytes((src / "config.json").read_bytes())
    plain = llm_cost.load_model(str(tmp_path))
    assert plain.quantization is None
    (tmp_path / "hf_quant_config.json").write_bytes((src / "hf_quant_config.json").read_bytes())
    spec = llm_cost.load_model(str(tmp_path / "config.json"))
    assert spec.quantization is not None and spec.quantization.weights_format == "nvfp4"
    # NVFP4 matrices at 4 + 8/16 bits (an E4M3 scale per 16), the embedding and LM head in BF16:
    # 2 x 151,936 x 5,120 of Qwen3-32B's 32.8 B parameters (4.7%) -> about 0.953 x 4.5 + 0.047 x 16
    bits = float(llm_cost.params(spec).bits_per_param)
    assert 5.0 < bits < 5.1, bits


def test_a_pending_entry_that_loads_says_so_beside_its_count(cli):
    """A new user's trial: ``params nemotron-3-ultra-550b-a55b`` printed 549,308,993,536 with no
    sign that its record says the count is 884,736 over the published total. Every entry marked
    pending that loads now carries its record's reason into params' notes; an entry read as ok
    carries none."""
    loading = [s for s, r in RECORDS.items() if str(r["reader"]).startswith("pending: ")]
    shown = 0
    for short in loading:
        try:
            r = llm_cost.params(llm_cost.load_model(short))
        except SpecError:
            continue
        reason = str(RECORDS[short]["reader"]).removeprefix("pending: ")
        assert any(n.params["reason"] == reason for n in r.conventions if n.code == "params.catalog_pending"), short
        shown += 1
    assert shown >= 2  # MiMo-V2-Flash and Nemotron 3 Ultra load
    out = cli("params", "nemotron-3-ultra-550b-a55b").out
    assert "not yet matched to its checkpoint" in out and "884,736 above the published total" in " ".join(out.split())
    assert not any(
        n.code == "params.catalog_pending" for n in llm_cost.params(llm_cost.load_model("qwen3-8b")).conventions
    )
