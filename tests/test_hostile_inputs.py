"""The hostile-input attacks of issues 26 and 36, kept: one row per reproducer, with its files
built in ``tmp_path``. A row gives the command line (or a Python call of the API), the exit code
(2 and one ``error:`` line naming the file, field or flag; 1 only for the environment; 0 for an
answer, whose output holds the phrase), a phrase of the message, and the limits every row is
held to: 2 s of CPU and 200 MB of resident memory. A row with an environment of its own (a Hub
that does not answer, a stdout that cannot encode the help, a matplotlib backend: properties of a
process), or whose point is a whole process's memory or time, runs in a fresh interpreter (also
held to 10 s of the clock after it started; 5 s for the Hub); every other row runs in the test's
process, its CPU time and the growth of its peak resident memory measured there (about 30 s of
interpreter starts saved).

Then hypothesis fuzzes the readers of checkpoint folders, timing files and workload traces with
hostile content: each answers or raises the package's one error class, never another exception.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llm_cost.specs.load as load
from llm_cost.analyses.calibration import profile_yaml
from llm_cost.analyses.measurements import check_distinct, load_measurements, measurements_dir
from llm_cost.core.errors import InputError
from llm_cost.perf.choose import load_profile
from llm_cost.simulate.workload import read_trace
from llm_cost.specs.checkpoint import read_checkpoint

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "hf"
MODEL = (load.data_dir("models") / "llama3-8b.yaml").read_text()
PROFILE = profile_yaml(load_profile("hopper-pytorch-eager"))
TIMINGS = measurements_dir() / "local-h200-llama3-8b-measured.yaml"
TIME_LIMIT_S = 2.0  # of the process's CPU: the work itself, whatever else the machine runs
WALL_LIMIT_S = 10.0  # of the clock: a read that blocks (a FIFO) uses no CPU
HUB_TIME_LIMIT_S = 5.0  # of the clock: the Hub has 3 s to answer
MEMORY_LIMIT_MB = 200

# --- files ------------------------------------------------------------------------------------

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "vocab_size": 64,
    "hidden_size": 16,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 32,
    "max_position_embeddings": 128,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def _shapes() -> dict[str, tuple[int, ...]]:
    """The tensors transformers' LlamaForCausalLM saves for CONFIG (6,736 parameters)."""
    t: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (64, 16), "model.norm.weight": (16,)}
    t["lm_head.weight"] = (64, 16)
    for i in range(2):
        p = f"model.layers.{i}"
        for name, shape in (
            ("self_attn.q_proj", (16, 16)),
            ("self_attn.k_proj", (8, 16)),
            ("self_attn.v_proj", (8, 16)),
            ("self_attn.o_proj", (16, 16)),
            ("mlp.gate_proj", (32, 16)),
            ("mlp.up_proj", (32, 16)),
            ("mlp.down_proj", (16, 32)),
        ):
            t[f"{p}.{name}.weight"] = shape
        t[f"{p}.input_layernorm.weight"] = (16,)
        t[f"{p}.post_attention_layernorm.weight"] = (16,)
    return t


def _safetensors(shapes: dict[str, tuple[int, ...]], header: bytes | None = None) -> bytes:
    """A BF16 safetensors file of zeros as the format documents it: header length, JSON, data."""
    entries, offset = {}, 0
    for name, shape in shapes.items():
        size = 2
        for s in shape:
            size *= s
        entries[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(entries).encode() if header is None else header
    return struct.pack("<Q", len(raw)) + raw + bytes(offset)


def _folder(tmp: Path, name: str, shapes=None, header: bytes | None = None, index=None) -> Path:
    """A checkpoint folder: config.json and either model.safetensors or ``index`` (JSON text)."""
    folder = tmp / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    if index is None:
        (folder / "model.safetensors").write_bytes(_safetensors(shapes or _shapes(), header))
    else:
        (folder / "model.safetensors.index.json").write_text(index)
    return folder


def _weight_map(value) -> str:
    return json.dumps({"weight_map": {"model.norm.weight": "model.safetensors", "lm_head.weight": value}})


def _loop(tmp: Path, name: str) -> Path:
    """``name`` and ``name``.2, each a symbolic link to the other."""
    a, b = tmp / name, tmp / f"{name}.2"
    a.symlink_to(b.name)
    b.symlink_to(a.name)
    return a


def _timings(tmp: Path, name: str, change) -> Path:
    """The shipped H200 timing file (models map made explicit) after ``change(data)``."""
    data = yaml.safe_load(TIMINGS.read_text())
    change(data)
    path = tmp / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _row0(field, value):
    def change(data):
        data["rows"][0][field] = value

    return change


def _copy_row(data):
    data["rows"].append(dict(data["rows"][0], id="a-copy"))


def _big_csv(tmp: Path) -> Path:
    path = tmp / "big.csv"
    head = "id,model,gpu,phase,batch,context,measured_ms\n"
    path.write_text(
        head + "".join(f"r{i},llama3-8b,h200,decode,1,{128 + i},{7 + i * 1e-4:.4f}\n" for i in range(11_000))
    )
    return path


def _config(tmp: Path, name: str, **changes) -> Path:
    data = json.loads((FIXTURES / "llama-3.1-8b" / "config.json").read_text())
    for key, value in changes.items():
        *parents, leaf = key.split(".")
        target = data
        for part in parents:
            target = target.setdefault(part, {})
        target[leaf] = value
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


def _changed(tmp: Path, folder: str, change: dict, text: bool = False) -> Path:
    """A fixture's config.json with ``change`` (in its text_config with ``text``), written to ``tmp``."""
    data = json.loads((FIXTURES.parent / folder / "config.json").read_text())
    (data["text_config"] if text else data).update(change)
    path = tmp / f"{Path(folder).name}-changed.json"
    path.write_text(json.dumps(data))
    return path


def _glm_without_mla(tmp: Path) -> Path:
    """GLM-5.1's config (DeepSeek Sparse Attention) with ``kv_lora_rank: null``: no MLA to put
    the indexer on."""
    data = json.loads((FIXTURES.parent / "hf-kinds" / "glm-5.1" / "config.json").read_text())
    data["kv_lora_rank"] = None
    path = tmp / "glm-no-mla.json"
    path.write_text(json.dumps(data))
    return path


def _spec(tmp: Path, name: str, old: str, new: str) -> Path:
    assert old in MODEL
    path = tmp / f"{name}.yaml"
    path.write_text(MODEL.replace(old, new))
    return path


def _decode_call(path: Path, tp: int) -> str:
    """The API call a row evaluates: a decode step of the spec at ``path`` over ``tp`` GPUs."""
    return f"llm_cost.decode({str(path)!r}, 'h100', batch=8, context=2048, layout=llm_cost.Layout(tp={tp}))"


def _rate_file(tmp: Path, rate: str) -> str:
    """A workload file of poisson arrivals at ``rate`` requests/s for 50 s, 512 + 64 tokens."""
    path = tmp / f"rate-{rate}.yaml"
    path.write_text(
        f"arrivals: {{process: poisson, rate_rps: {rate}, duration_s: 50}}\ninput_tokens: 512\noutput_tokens: 64\n"
    )
    return str(path)


def _edited(tmp: Path, model: str, old: str, new: str) -> str:
    """The shipped ``model``'s spec with ``old`` replaced by ``new``, written to ``tmp``."""
    text = (load.data_dir("models") / f"{model}.yaml").read_text()
    assert old in text
    path = tmp / f"{model}-edited.yaml"
    path.write_text(text.replace(old, new))
    return str(path)


def _hub_cache_loop(tmp: Path) -> dict[str, str]:
    repo = tmp / "hub" / "models--NousResearch--Meta-Llama-3.1-8B"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0123456789abcdef")
    snapshot = repo / "snapshots" / "0123456789abcdef"
    snapshot.mkdir(parents=True)
    _loop(snapshot, "config.json")
    return {"HF_HUB_CACHE": str(tmp / "hub"), "HF_HUB_OFFLINE": "1"}


def _fifo(tmp: Path, name: str) -> Path:
    path = tmp / name
    os.mkfifo(path)
    return path


def _fifo_checkpoint(tmp: Path) -> Path:
    folder = tmp / "fifo-checkpoint"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    _fifo(folder, "model.safetensors")
    return folder


def _link_to(tmp: Path, name: str, target: str) -> Path:
    path = tmp / name
    path.symlink_to(target)
    return path


LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}
YARN = {
    "rope_type": "yarn",
    "factor": 4.0,
    "beta_fast": 1.0,
    "beta_slow": 32.0,
    "original_max_position_embeddings": 8192,
}
NO_HUB = {"HF_HUB_OFFLINE": "", "HF_ENDPOINT": "http://127.0.0.1:9"}  # a closed port: refused at once
CONFIG_PATH = str(FIXTURES / "llama-3.1-8b" / "config.json")
TINY = str(FIXTURES / "gpt2" / "config.json")

# (id, build(tmp) -> argv (a list: the command line) or a str (a Python expression of the API),
#  environment, exit code, phrase of stderr (exit 2 or 1) or of stdout (exit 0))
ROWS = [
    # the checkpoint reader
    (
        "weight-map-int",
        lambda t: ["params", str(_folder(t, "c", index=_weight_map(3)))],
        {},
        2,
        "not the name of a shard",
    ),
    ("weight-map-list", lambda t: ["params", str(_folder(t, "c", index=_weight_map(["a"])))], {}, 2, "is ['a']"),
    (
        "weight-map-mixed",
        lambda t: ["params", str(_folder(t, "c", index=json.dumps({"weight_map": {"a": "x.safetensors", "b": 1}})))],
        {},
        2,
        "weight_map['b']",
    ),
    (
        "header-5000-digits",
        lambda t: ["params", str(_folder(t, "c", header=b'{"a": {"dtype": "BF16", "shape": [' + b"9" * 5000 + b"]}}"))],
        {},
        2,
        "5,000 digits",
    ),
    (
        "header-deep",
        lambda t: ["params", str(_folder(t, "c", header=b"[" * 100_000 + b"]" * 100_000))],
        {},
        2,
        "too deeply",
    ),
    (
        "index-deep",
        lambda t: ["params", str(_folder(t, "c", index="[" * 100_000 + "]" * 100_000))],
        {},
        2,
        "too deeply",
    ),
    (
        "shard-etc-passwd",
        lambda t: ["params", str(_folder(t, "c", index=_weight_map("/etc/passwd")))],
        {},
        2,
        "outside",
    ),
    (
        "shard-dotdot",
        lambda t: ["params", str(_folder(t, "c", index=_weight_map("../x.safetensors")))],
        {},
        2,
        "outside",
    ),
    ("shard-fifo", lambda t: ["params", str(_fifo_checkpoint(t))], {}, 2, "not a regular file (a FIFO)"),
    (
        "index-total-size-disagrees",
        lambda t: [
            "params",
            str(_index_with_total(t, 12_345)),
        ],
        {},
        0,
        "12,345 B, but the shards' tensors hold 13,472 B",
    ),
    (
        "inv-freq-is-a-buffer",
        lambda t: ["params", str(_folder(t, "c", {**_shapes(), "model.layers.0.self_attn.rotary_emb.inv_freq": (4,)}))],
        {},
        0,
        "every stored tensor is explained",
    ),
    ("tiny-model-count", lambda t: ["params", str(_folder(t, "c"))], {}, 0, "6,736 (6.74K)"),
    # paths resolved once, loops caught
    ("spec-link-loop", lambda t: ["params", str(_loop(t, "spec.yaml"))], {}, 2, "a loop of symbolic links"),
    ("gpu-link-loop", lambda t: ["roofline", "llama3-8b", "--gpu", str(_loop(t, "gpu.yaml"))], {}, 2, "loop"),
    ("timing-link-loop", lambda t: ["calibrate", str(_loop(t, "t.yaml")), "-o", str(t / "p.yaml")], {}, 2, "loop"),
    ("profile-link-loop", lambda t: ["validate", "--profile", str(_loop(t, "p.yaml"))], {}, 2, "loop"),
    ("spec-fifo", lambda t: ["params", str(_fifo(t, "spec.yaml"))], {}, 2, "not a regular file (a FIFO)"),
    ("profile-fifo", lambda t: ["validate", "--profile", str(_fifo(t, "p.yaml"))], {}, 2, "not a regular file"),
    (
        "hub-cache-link-loop",
        lambda t: ["params", "NousResearch/Meta-Llama-3.1-8B"],
        "hub-loop",
        2,
        "delete that snapshot",
    ),
    # calibrate: timing files validated before any fit
    (
        "timing-inf",
        lambda t: ["calibrate", str(_timings(t, "t.yaml", _row0("measured_ms", "inf"))), "-o", str(t / "p.yaml")],
        {},
        2,
        "measured_ms",
    ),
    (
        "timing-models-list",
        lambda t: ["calibrate", str(_timings(t, "t.yaml", lambda d: d.update(models=["x"]))), "-o", str(t / "p.yaml")],
        {},
        2,
        "field models",
    ),
    (
        "timing-batch-400-digits",
        lambda t: ["calibrate", str(_timings(t, "t.yaml", _row0("batch", int("9" * 400)))), "-o", str(t / "p.yaml")],
        {},
        2,
        "field batch",
    ),
    (  # an attack: serve refuses --group-size beside bf16, calibrate had taken it
        "timing-group-size-on-bf16",
        lambda t: ["calibrate", str(_timings(t, "t.yaml", _row0("group_size", 128))), "-o", str(t / "p.yaml")],
        {},
        2,
        "group_size 128 groups weight-only int8 or int4 weights, not bf16",
    ),
    (  # an attacker: the command line refuses --group-size 7 for llama3-8b, calibrate had taken int4 rows of it
        "timing-group-size-not-dividing",
        lambda t: [
            "calibrate",
            str(_timings(t, "t.yaml", lambda d: d["rows"][0].update(weights_dtype="int4", group_size=7))),
            "-o",
            str(t / "p.yaml"),
        ],
        {},
        2,
        "field group_size: 7 does not divide the input width of every matrix int4 quantizes (4,096, 14,336)",
    ),
    (
        "timing-duplicate-row",
        lambda t: ["calibrate", str(_timings(t, "t.yaml", _copy_row)), "-o", str(t / "p.yaml")],
        {},
        2,
        "and t.yaml: row 'a-copy' repeat one measurement",
    ),
    (
        "timing-1e300-ms",
        lambda t: ["calibrate", str(_timings(t, "t.yaml", _row0("measured_ms", 1e300))), "-o", str(t / "p.yaml")],
        {},
        2,
        "slower than any profile",
    ),
    (
        "timing-faster-than-bound",
        lambda t: ["calibrate", str(_timings(t, "t.yaml", _row0("measured_ms", 0.001))), "-o", str(t / "p.yaml")],
        {},
        2,
        "faster than the Roofline bound",
    ),
    ("timing-11000-rows", lambda t: ["calibrate", str(_big_csv(t)), "-o", str(t / "p.yaml")], {}, 2, "at most 1,000"),
    (
        "timing-row-tp-field",
        lambda t: ["calibrate", str(_timings(t, "t.yaml", _row0("tp", 3))), "-o", str(t / "p.yaml")],
        {},
        2,
        "field tp: 3",
    ),
    (
        "profile-overlap-1e300",
        lambda t: ["validate", "--profile", str(_profile(t, "overlap_p", "1.0e+300"))],
        {},
        2,
        "parameters.family.overlap_p",
    ),
    # import, help
    (
        "import-name-newline",
        lambda t: ["import", str(_config(t, "nl", _name_or_path="a\nb")), "-o", str(t / "nl.yaml")],
        {},
        0,
        "nl",
    ),
    ("help-ascii", lambda t: ["params", "-h"], {"PYTHONIOENCODING": "ascii"}, 0, "--weights-dtype"),
    # the Hub
    ("hub-unreachable", lambda t: ["params", "NousResearch/Meta-Llama-3.1-8B"], NO_HUB, 2, "cannot be reached"),
    (
        "hub-offline-maybe",
        lambda t: ["params", "NousResearch/Meta-Llama-3.1-8B"],
        {"HF_HUB_OFFLINE": "maybe"},
        2,
        "neither true",
    ),
    # -o writes regular files only
    (
        "out-fifo",
        lambda t: ["import", CONFIG_PATH, "-o", str(_fifo(t, "o.yaml")), "--force"],
        {},
        2,
        "not a regular file",
    ),
    ("out-dev-null", lambda t: ["calibrate", str(TIMINGS), "-o", "/dev/null", "--force"], {}, 2, "not a regular file"),
    (
        "out-link-to-dev-null",
        lambda t: ["import", CONFIG_PATH, "-o", str(_link_to(t, "o.yaml", "/dev/null")), "--force"],
        {},
        2,
        "not a regular file",
    ),
    ("out-link-loop", lambda t: ["import", CONFIG_PATH, "-o", str(_loop(t, "o.yaml")), "--force"], {}, 2, "--out"),
    (
        "out-unwritable",
        lambda t: ["import", CONFIG_PATH, "-o", "/proc/llm-cost-test.yaml"],
        {},
        1,
        "nothing was written",
    ),
    # accepted silently before
    ("serve-fp64", lambda t: ["serve", "llama3-8b", "--dtype", "fp64"], {}, 2, "fp64"),
    (
        "train-int8",
        lambda t: ["train", "llama3-8b", "--tokens", "15T", "--gpu-hours", "1.3M", "--dtype", "int8"],
        {},
        2,
        "'int8'",
    ),
    (
        "fit-utilization-tiny",
        lambda t: ["fit", "llama3-70b", "--gpu-memory-utilization", "1e-300"],
        {},
        2,
        "rounds to 0",
    ),
    ("serve-qps-tiny", lambda t: ["serve", "llama3-8b", "--qps", "1e-300"], {}, 2, "--qps"),
    (
        "serve-1m-1m",
        lambda t: ["serve", "llama3-8b", "--input", "1M", "--output", "1M", "--json"],
        {},
        2,
        "longer than the model's context of 8,192 tokens",
    ),
    (
        "serve-tiny-4090",
        lambda t: ["serve", TINY, "--gpu", "rtx-4090", "--input", "512", "--output", "128", "--json"],
        {},
        0,
        '"prefill_share"',
    ),
    ("config-sliding-negative", lambda t: ["params", str(_config(t, "c", sliding_window=-5))], {}, 2, "sliding_window"),
    (
        "config-sliding-string",
        lambda t: ["params", str(_config(t, "c", sliding_window="4096"))],
        {},
        2,
        "sliding_window",
    ),
    (
        "config-rope-type",
        lambda t: ["params", str(_config(t, "c", **{"rope_scaling.rope_type": "bogus"}))],
        {},
        2,
        "rope_type 'bogus'",
    ),
    (
        "config-llama3-factor",
        lambda t: ["params", str(_config(t, "c", **{"rope_scaling.factor": 0.5}))],
        {},
        2,
        "below 1",
    ),
    (
        "config-llama3-inverted",
        lambda t: [
            "params",
            str(_config(t, "c", rope_scaling={**LLAMA3_ROPE, "low_freq_factor": 4.0, "high_freq_factor": 1.0})),
        ],
        {},
        2,
        "low_freq_factor",
    ),
    ("config-yarn-betas", lambda t: ["params", str(_config(t, "c", rope_scaling=YARN))], {}, 2, "beta_fast"),
    ("config-tie-1", lambda t: ["params", str(_config(t, "c", tie_word_embeddings=1))], {}, 2, "tie_word_embeddings"),
    ("config-odd-head-dim", lambda t: ["params", str(_config(t, "c", head_dim=127))], {}, 2, "is odd"),
    (
        "config-quant-method-dict",
        lambda t: ["params", str(_config(t, "c", quantization_config={"quant_method": {"a": 1}}))],
        {},
        2,
        "quant_method",
    ),
    (
        "spec-tie-yes",
        lambda t: ["params", str(_spec(t, "s", "tie_word_embeddings: false", 'tie_word_embeddings: "yes"'))],
        {},
        2,
        "tie_word_embeddings",
    ),
    (
        "spec-tie-1",
        lambda t: ["params", str(_spec(t, "s", "tie_word_embeddings: false", "tie_word_embeddings: 1"))],
        {},
        2,
        "tie_word_embeddings",
    ),
    (
        "spec-sliding-negative",
        lambda t: ["params", str(_spec(t, "s", "head_dim: 128", "head_dim: 128\n  sliding_window: -1"))],
        {},
        2,
        "sliding_window",
    ),
    (
        "spec-rope-type",
        lambda t: [
            "params",
            str(_spec(t, "s", "rope_theta: 500000.0", "rope_theta: 500000.0\nrope_scaling: {rope_type: x}")),
        ],
        {},
        2,
        "rope_type 'x'",
    ),
    (
        "mplbackend",
        lambda t: ["kv", "llama3-8b", "--context", "1K,2K", "--plot", str(t / "k.png")],
        {"MPLBACKEND": "nosuch"},
        2,
        "MPLBACKEND",
    ),
    # issue 36 item 6: nonsense that used to change the count (743.9B -> 33.2B; active 12.77B -> 8.37B)
    (
        "moe-layer-freq-1e300",
        lambda t: ["params", str(_changed(t, "hf-kinds/glm-5.1", {"moe_layer_freq": 1e300}))],
        {},
        2,
        "moe_layer_freq must be an integer",
    ),
    (
        "text-config-list",
        lambda t: ["params", str(_changed(t, "hf/qwen3.5-35b-a3b", {"text_config": []}))],
        {},
        2,
        "text_config must be a mapping or null (got list)",
    ),
    (
        "full-attention-interval-1e20",
        lambda t: ["params", str(_changed(t, "hf/qwen3.5-27b", {"full_attention_interval": 1e20}, text=True))],
        {},
        2,
        "full_attention_interval must be an integer",
    ),
    (
        "null-experts-per-token",
        lambda t: ["params", str(_changed(t, "hf-kinds/nemotron-3-super-120b-a12b", {"num_experts_per_tok": None}))],
        {},
        2,
        "num_experts_per_tok = null",
    ),
    (
        "dsa-without-mla",
        lambda t: ["params", str(_glm_without_mla(t))],
        {},
        2,
        "kv_lora_rank = null: transformers 5.24.0 GlmMoeDsaConfig declares an integer",
    ),
    (
        # a plot that cannot be written is the environment's failure (exit 1), and leaves no file
        "plot-unwritable",
        lambda t: ["kv", "llama3-8b", "--context", "1K,2K", "--plot", "/proc/llm-cost-plot.png"],
        {},
        1,
        "/proc/llm-cost-plot.png: cannot be written",
    ),
    # the API
    ("api-train-tokens", lambda t: 'llm_cost.train("llama3-8b", -1, mfu=0.4)', {}, 2, "tokens:"),
    ("api-layout-type", lambda t: 'llm_cost.params("llama3-8b", layout=True)', {}, 2, "layout:"),
    ("api-dtype-string", lambda t: 'llm_cost.moe("mixtral-8x7b", gpu="h100", dtype="fp3")', {}, 2, "dtype"),
    ("api-kv-dtype-string", lambda t: 'llm_cost.kv("llama3-8b", kv_dtype="fp3")', {}, 2, "kv_dtype"),
    ("api-context-mfu", lambda t: 'llm_cost.context("llama3-8b", mfu=5)', {}, 2, "mfu:"),
    (
        "api-train-planner-knob",
        lambda t: 'llm_cost.train("llama3-8b", 10**12, mfu=0.4, cp=2)',
        {},
        2,
        "cp: a predicted plan (neither mfu nor gpu_hours) uses it, not a run at a given mfu or gpu_hours",
    ),
    # work bounded at the schema's own bounds
    (
        "fit-10000-layers",
        lambda t: ["fit", str(_spec(t, "s", "num_hidden_layers: 32", "num_hidden_layers: 10000"))],
        {},
        0,
        "usable at 90%",
    ),
    (
        "train-plan-10000-layers",
        lambda t: [
            "train",
            str(_spec(t, "s", "num_hidden_layers: 32", "num_hidden_layers: 10000")),
            "--tokens",
            "1T",
            "--gpus",
            "4096",
            "--seq",
            "2K",
        ],
        {},
        0,
        "training plan",
    ),
    # the attacker's leftovers: the right flag blamed, none ignored
    (
        "train-tp-over-gpus",
        lambda t: ["train", "llama3-405b", "--tokens", "15T", "--gpus", "8", "--tp", "16"],
        {},
        2,
        "--tp: 16 does not divide the 8 GPUs",
    ),
    ("serve-tp-16", lambda t: ["serve", "llama3-8b", "--tp", "16"], {}, 2, "--tp 16 x --pp 1: 16 GPUs"),
    (
        "flops-prefill-context",
        lambda t: ["flops", "llama3-8b", "--phase", "prefill", "--context", "100"],
        {},
        2,
        "--context does not apply",
    ),
    (
        "flops-decode-seq",
        lambda t: ["flops", "llama3-8b", "--phase", "decode", "--seq", "100"],
        {},
        2,
        "--seq does not apply",
    ),
    ("moe-tp-3", lambda t: ["moe", "mixtral-8x7b", "--tp", "3"], {}, 2, "--tp: 3 does not divide"),
    ("moe-dtype-without-gpu", lambda t: ["moe", "mixtral-8x7b", "--dtype", "fp8"], {}, 2, "--dtype"),
    (
        "train-mfu-cp",
        lambda t: ["train", "llama3-8b", "--tokens", "15T", "--mfu", "0.4", "--cp", "2"],
        {},
        2,
        "--cp: a predicted plan (neither --mfu nor --gpu-hours) uses it",
    ),
    (
        "train-mfu-top",
        lambda t: ["train", "llama3-8b", "--tokens", "15T", "--mfu", "0.4", "--top", "3"],
        {},
        2,
        "--top: a predicted plan",
    ),
]


def _file(tmp: Path, name: str, text: str) -> str:
    path = tmp / name
    path.write_text(text)
    return str(path)


def _work(tmp: Path, arrivals: str, rest: str = "input_tokens: 100\noutput_tokens: 10\n") -> list[str]:
    return ["serve", "llama3-8b", "--tp", "1", "--workload", _file(tmp, "w.yaml", f"arrivals: {arrivals}\n{rest}")]


def _trace_rows(tmp: Path, rows: int, output: int = 10) -> list[str]:
    text = "".join(f'{{"arrival_s": {i * 0.01}, "input_tokens": 10, "output_tokens": {output}}}\n' for i in range(rows))
    return ["serve", "llama3-8b", "--tp", "1", "--trace", _file(tmp, "t.jsonl", text)]


SERVE = ["serve", "llama3-8b", "--tp", "1"]
#: The second attack on serve's traffic (issue 26): work bounded, parameters checked.
ROWS += [
    ("work-closed-no-end", lambda t: _work(t, "{users: 4}"), {}, 2, "a closed loop needs an end"),
    ("work-think-1e300", lambda t: _work(t, "{users: 4, think_s: 1.0e+300}"), {}, 2, "arrivals.think_s"),
    ("work-users-1e9", lambda t: _work(t, "{users: 1000000000, think_s: 1}"), {}, 2, "arrivals.users"),
    ("work-users-no-think", lambda t: _work(t, "{users: 4, duration_s: 600}"), {}, 2, "give requests"),
    (
        "work-requests-1e11",
        lambda t: _work(t, "{rate_rps: 10}", "input_tokens: 100\noutput_tokens: 10\nrequests: 100000000000\n"),
        {},
        2,
        "requests: 100000000000 must be a whole number from 1 to 20,000",
    ),
    (
        "work-rate-x-duration",
        lambda t: _work(t, "{rate_rps: 1.0e+6, duration_s: 1.0e+9}"),
        {},
        2,
        "rate_rps x duration_s",
    ),
    (
        "work-fixed-count-huge",
        lambda t: _work(t, "{process: fixed_count, rate_rps: 1.0e+6, duration_s: 1.0e+6}"),
        {},
        2,
        "rate_rps x duration_s",
    ),
    (
        "work-cv-tiny",
        lambda t: _work(t, "{process: gamma, cv: 1.0e-300, rate_rps: 10, duration_s: 10}"),
        {},
        2,
        "arrivals.cv",
    ),
    (  # an attack: a poisson process's cv was dropped without a word
        "work-cv-without-gamma",
        lambda t: _work(t, "{process: poisson, cv: 2.0, rate_rps: 10, duration_s: 10}"),
        {},
        2,
        "arrivals.cv: sets a gamma process's burstiness; 'poisson' arrivals have none (give process: gamma)",
    ),
    (  # and so was an open loop's think time
        "work-think-on-open-loop",
        lambda t: _work(t, "{rate_rps: 10, duration_s: 10, think_s: 2.0}"),
        {},
        2,
        "an open loop (rate_rps or stages) takes no think_s; give users for a closed loop",
    ),
    (
        "work-prefix-longer",
        lambda t: _work(
            t, "{rate_rps: 1, duration_s: 100}", "input_tokens: 100\noutput_tokens: 10\nprefix: {tokens: 5000}\n"
        ),
        {},
        2,
        "prefix.tokens: 5,000 shared tokens must be fewer",
    ),
    (
        "work-long-outputs",
        lambda t: _work(t, "{rate_rps: 1000}", "input_tokens: 1\noutput_tokens: 8000\nrequests: 20000\n"),
        {},
        2,
        "requests x output_tokens",
    ),
    ("trace-20001-rows", lambda t: _trace_rows(t, 20_001), {}, 2, "more than 20,000 rows"),
    ("trace-long-outputs", lambda t: _trace_rows(t, 2_000, 8_000), {}, 2, "requests x output_tokens"),
    (  # an attacker: a header of "arrival_s, input_tokens, output_tokens" was refused for unknown
        # columns that looked like the valid ones; a space after a comma is part of no name or value
        "trace-spaces-after-commas",
        lambda t: (
            SERVE
            + ["--trace", _file(t, "t.csv", "arrival_s, input_tokens, output_tokens\n0, 100, 10\n2, 1, 1\n"), "--json"]
        ),
        {},
        0,
        '"requests": 2',
    ),
    (  # an attacker: requests 5 on a trace of 3 rows ran 3, unsaid
        "trace-more-requests-than-rows",
        lambda t: _trace_rows(t, 3) + ["--requests", "5"],
        {},
        2,
        "error: --requests: 5 is more than the trace's 3 rows; give at most 3 (the first are replayed)",
    ),
    (
        "trace-superscript-digit",
        lambda t: SERVE + ["--trace", _file(t, "t.csv", "arrival_s,input_tokens,output_tokens\n0,\u00b2,5\n")],
        {},
        2,
        "is not a whole number",
    ),
    (
        "trace-arabic-indic-digit",
        lambda t: SERVE + ["--trace", _file(t, "t.csv", "arrival_s,input_tokens,output_tokens\n0,\u0663,5\n")],
        {},
        2,
        "is not a whole number",
    ),
    (
        "trace-prefix-two-lengths",
        lambda t: (
            SERVE
            + [
                "--trace",
                _file(
                    t,
                    "t.jsonl",
                    '{"arrival_s": 0, "input_tokens": 2000, "output_tokens": 5, "prefix_id": "a", "prefix_tokens": 1900}\n'
                    '{"arrival_s": 1, "input_tokens": 2000, "output_tokens": 5, "prefix_id": "a", "prefix_tokens": 100}\n',
                ),
            ]
        ),
        {},
        2,
        "one prefix has one length",
    ),
    (
        "serve-long-outputs",
        lambda t: SERVE + ["--qps", "1000", "--requests", "20000", "--input", "1", "--output", "8000"],
        {},
        2,
        "--requests x --output",
    ),
    ("serve-sd-inf", lambda t: SERVE + ["--qps", "10", "--input", "lognormal:mean=800,sd=inf"], {}, 2, "finite sd"),
    ("serve-sd-1e308", lambda t: SERVE + ["--qps", "10", "--input", "lognormal:mean=800,sd=1e308"], {}, 2, "finite sd"),
    (
        "serve-sd-twice",
        lambda t: SERVE + ["--qps", "10", "--input", "lognormal:mean=800,sd=400,sd=3"],
        {},
        2,
        "given twice",
    ),
    (
        "serve-prefix-longer",
        lambda t: SERVE + ["--qps", "10", "--prefix", "3000"],
        {},
        2,
        "--prefix: 3,000 shared tokens",
    ),
    (
        "api-prefix-longer",
        lambda t: 'llm_cost.simulate_serving("llama3-8b", "h100", 100, 10, qps=1, prefix_tokens=5000)',
        {},
        2,
        "prefix_tokens:",
    ),
    (
        "roofline-redundant-1e8",
        lambda t: [
            "roofline",
            "deepseek-v3",
            "--tp",
            "1",
            "--ep",
            "8",
            "--dp",
            "8",
            "--redundant-experts",
            "100000000",
        ],
        {},
        2,
        "--redundant-experts",
    ),
    (
        "roofline-redundant-no-ep",
        lambda t: ["roofline", "deepseek-v3", "--redundant-experts", "32"],
        {},
        2,
        "give --ep",
    ),
    (
        "api-layout-redundant-negative",
        lambda t: "llm_cost.Layout(ep=8, dp=8, redundant_experts=-1000)",
        {},
        2,
        "redundant_experts:",
    ),
    ("api-layout-tp-text", lambda t: "llm_cost.Layout(tp='2')", {}, 2, "tp: '2'"),
]


def _lfm2_multiplier(tmp: Path, token: str) -> str:
    """LFM2.5-1.2B's config.json with ``block_ffn_dim_multiplier`` written as the JSON token
    ``token`` (``Infinity`` is Python's json extension, which transformers reads too)."""
    text = (FIXTURES.parent / "hf-kinds" / "lfm2.5-1.2b" / "config.json").read_text()
    text, n = re.subn(r'("block_ffn_dim_multiplier": )[^,\n]*', rf"\g<1>{token}", text)
    assert n == 1
    return _file(tmp, "config.json", text)


#: Issue 26's leftovers: a config value that overflows names its key; serve refuses flags that
#: would be ignored, the same GPU twice, and says how many GPUs were too many; the API's step
#: budget has the CLI's bound.
ROWS += [
    (
        "lfm2-multiplier-infinity",
        lambda t: ["params", _lfm2_multiplier(t, "Infinity")],
        {},
        2,
        "block_ffn_dim_multiplier must be a finite number > 0 (got Infinity)",
    ),
    (
        "lfm2-multiplier-1e308",
        lambda t: ["params", _lfm2_multiplier(t, "1e308")],
        {},
        2,
        "block_ffn_dim_multiplier = 1e+308 times the adjusted width",
    ),
    (
        "serve-prefix-groups-no-prefix",
        lambda t: SERVE + ["--qps", "10", "--prefix-groups", "4"],
        {},
        2,
        "--prefix-groups: 4 shapes a shared prefix; give --prefix too",
    ),
    (
        "serve-trace-and-lengths",
        lambda t: _trace_rows(t, 3) + ["--input", "100", "--output", "10"],
        {},
        2,
        "--trace: the file holds its own request lengths; leave out --input and --output",
    ),
    (
        "serve-gpu-twice",
        lambda t: ["serve", "llama3-8b", "--qps", "1", "--gpu", "h100,h100"],
        {},
        2,
        "--gpu: 'h100' is listed twice",
    ),
    (
        "api-compare-alias-twice",
        lambda t: 'llm_cost.serve_compare("llama3-8b", ["h100", "h100-sxm"], qps=1)',
        {},
        2,
        "gpu: 'h100-sxm' is listed again after 'h100', the same GPU",
    ),
    (  # an attacker: a file named h100 with 1/3,350 of its bandwidth was called "the same GPU"
        "serve-gpu-same-name-other-figures",
        lambda t: [
            "serve",
            "llama3-8b",
            "--gpus",
            "1",
            "--gpu",
            "h100,"
            + _file(
                t,
                "slow.yaml",
                (ROOT / "hardware" / "h100.yaml")
                .read_text()
                .replace("memory_bandwidth_tb_s: 3.35", "memory_bandwidth_tb_s: 0.001"),
            ),
        ],
        {},
        2,
        "is named 'h100', as 'h100' is, with other figures; the comparison labels each plan by its GPU's name",
    ),
    (
        "serve-17-gpus",
        lambda t: ["serve", "llama3-8b", "--qps", "1", "--gpu", ",".join(["h100", "h200"] * 8 + ["b200"])],
        {},
        2,
        "error: --gpu: 17 GPUs listed; a comparison takes 1 to 16 GPUs\n",
    ),
    (
        "api-batched-tokens-1",
        lambda t: 'llm_cost.simulate_serving("llama3-8b", "h100", 100, 10, qps=1, max_num_batched_tokens=1)',
        {},
        2,
        "max_num_batched_tokens: 1 must be an integer from 2",
    ),
    ("serve-chunk-1", lambda t: SERVE + ["--qps", "1", "--chunk", "1"], {}, 2, "--chunk: '1' must be at least 2"),
]


#: Issue 36, the rows whose point is a process's memory, time or environment: the file's shared
#: prefix has the flag's bound (1e9 groups grew to 24 GB), a two-token step budget under the
#: default traffic is refused before 1.15 million steps (20 s), a loop of links as the Hugging
#: Face cache is named (was an internal error).
ROWS += [
    (
        "i36-workload-groups-1e9",
        lambda t: _work(t, "{process: poisson, rate_rps: 5, duration_s: 60}", "input_tokens: 500\noutput_tokens: 100\n"
                        "prefix: {tokens: 100, groups: 1000000000}\n"),
        "process",
        2,
        "prefix.groups x prefix.users_per_group: 1,000,000,000 x 1 users is more than 20,000",
    ),
    (
        "i36-flag-groups-x-users",
        lambda t: SERVE + ["--qps", "5", "--prefix", "100", "--prefix-groups", "1000", "--users-per-prefix", "1000"],
        "process",
        2,
        "--prefix-groups x --users-per-prefix: 1,000 x 1,000 users is more than 20,000",
    ),
    ("i36-serve-chunk-2", lambda t: SERVE + ["--qps", "5", "--chunk", "2", "--max-num-seqs", "2"], "process", 2,
     "--chunk: 2 tokens a step"),
    (
        "i36-hub-cache-is-a-loop",
        lambda t: ["params", "a/b"],
        "cache-loop",
        2,
        "HF_HUB_CACHE: the Hugging Face cache folder",
    ),
]  # fmt: skip


def _index_with_total(tmp: Path, total: int) -> Path:
    folder = _folder(tmp, "c", index=json.dumps({"metadata": {"total_size": total}, "weight_map": {}}))
    (folder / "shard-1.safetensors").write_bytes(_safetensors(_shapes()))
    weight_map = dict.fromkeys(_shapes(), "shard-1.safetensors")
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map})
    )
    return folder


def _profile(tmp: Path, parameter: str, value: str) -> Path:
    text, n = re.subn(rf"(\n    {parameter}: )[^\n]*", rf"\g<1>{value}", PROFILE, count=1)
    assert n == 1
    path = tmp / "profile.yaml"
    path.write_text(text)
    return path


#: The child: runs the command line or evaluates the API call, then reports its exit code, the
#: seconds it took after the interpreter started and its peak resident memory.
RUNNER = r"""
import json, resource, sys, time
start = time.perf_counter()
kind, payload, report = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
code = 0
try:
    if kind == "cli":
        from llm_cost.cli import main
        sys.argv = ["llm-cost", *payload]
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    else:
        import llm_cost
        try:
            eval(payload, {"llm_cost": llm_cost})
        except llm_cost.LlmCostError as exc:
            sys.stderr.write(f"error: {exc}\n")
            code = 2
        except Exception as exc:
            sys.stderr.write(f"foreign exception {type(exc).__name__}: {exc}\n")
            code = 1
finally:
    try:  # this process image's peak (ru_maxrss keeps the forking parent's across exec on Linux)
        with open("/proc/self/status") as status:
            peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except OSError:
        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(report, "w") as f:
        json.dump({"code": code, "elapsed_s": time.perf_counter() - start, "cpu_s": usage.ru_utime + usage.ru_stime,
                   "maxrss_mb": peak_kb / 1024}, f)
"""


def _environment(tmp: Path, env) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "MPLBACKEND", "PYTHONIOENCODING")}
    base |= {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp / "empty-hf-cache"), "PYTHONPATH": str(ROOT)}
    if env == "process":  # a row whose point is the process's own memory or time
        return base
    if env == "cache-loop":
        return base | {"HF_HUB_CACHE": str(_loop(tmp, "hub-cache"))}
    return base | (_hub_cache_loop(tmp) if env == "hub-loop" else env)


#: The rows run in a fresh interpreter: those with an environment of their own (a Hub that does
#: not answer, a stdout that cannot encode the help, a matplotlib backend, a loop of links as the
#: cache) and those whose point is the memory or time of a whole process ("process"); every other
#: row runs in this process (:func:`test_reproducer_in_process`), its CPU and memory measured there.
PROCESS_ROWS = [r for r in ROWS if r[2]]


@pytest.mark.parametrize("case,build,env,code,phrase", PROCESS_ROWS, ids=[r[0] for r in PROCESS_ROWS])
def test_reproducer(tmp_path, case, build, env, code, phrase):
    call = build(tmp_path)
    kind = "cli" if isinstance(call, list) else "api"
    report = tmp_path / "report.json"
    r = subprocess.run(
        [sys.executable, "-c", RUNNER, kind, json.dumps(call), str(report)],
        capture_output=True,
        text=True,
        timeout=60,
        env=_environment(tmp_path, env),
        cwd=tmp_path,
    )
    facts = json.loads(report.read_text())
    assert facts["code"] == code, f"{case}: exit {facts['code']}; stderr {r.stderr[:400]}"
    assert "Traceback" not in r.stderr and r.stderr.count("\n") <= 1, r.stderr[:600]
    if code:
        assert r.stderr.startswith("error: ") and phrase in r.stderr, f"{case}: {r.stderr[:400]}"
        assert r.stdout == ""
    else:
        assert phrase in r.stdout, f"{case}: {r.stdout[-600:]}"
    assert facts["cpu_s"] < TIME_LIMIT_S, f"{case}: {facts['cpu_s']:.2f} s of CPU"
    wall = HUB_TIME_LIMIT_S if case.startswith("hub-") else WALL_LIMIT_S
    assert facts["elapsed_s"] < wall, f"{case}: {facts['elapsed_s']:.2f} s"
    assert facts["maxrss_mb"] < MEMORY_LIMIT_MB, f"{case}: {facts['maxrss_mb']:.0f} MB"


# --- issue 36, in-process: one row per reproducer whose point is its answer -------------------------

A100_TIMINGS = measurements_dir() / "local-a100-gpt-fast-decode.yaml"
GPU_SPEC = (load.data_dir("hardware") / "h100.yaml").read_text()


def _existing(tmp: Path, name: str, text: str = "notes\n") -> str:
    return _file(tmp, name, text)


def _gpu_spec(tmp: Path, old: str, new: str) -> str:
    text, n = re.subn(old, new, GPU_SPEC, count=1)
    assert n == 1
    return _file(tmp, "gpu.yaml", text)


def _trace_in(tmp: Path, row: dict) -> str:
    """A one-row trace in a folder and file named after the flag (``/tmp/.../p/trace.jsonl``)."""
    (tmp / "p").mkdir()
    return _file(tmp / "p", "trace.jsonl", json.dumps(row) + "\n")


def _calibrated(tmp: Path, change) -> str:
    """The shipped hopper-pytorch-eager profile after ``change(text)``."""
    return _file(tmp, "p.yaml", change(PROFILE))


def _mlp_only(tmp: Path) -> str:
    text = MODEL.replace(
        "num_hidden_layers: 32", "num_hidden_layers: 32\nlayer_types: [" + ", ".join(["mlp_only"] * 32) + "]"
    )
    return _file(tmp, "mlp-only.yaml", text)


ROW = {"arrival_s": 0, "input_tokens": 100, "output_tokens": 12}
#: (id, build(tmp) -> argv or an API call's text, exit code, phrase of stderr (2) or stdout (0)).
IN_PROCESS = [
    # attack (stop 52): a width under TP reached a division by zero in the GEMM tile count, an
    # internal error on the command line and a bare ZeroDivisionError through the API
    ("tp-past-intermediate-size", lambda t: ["roofline", str(_spec(t, "inter1", "intermediate_size: 14336",
     "intermediate_size: 1")), "--gpu", "h100", "--tp", "2"], 2, "--tp: 2 does not divide llama3-8b's "
     "mlp.intermediate_size 1"),
    ("tp-past-vocab-size", lambda t: ["serve", str(_spec(t, "v1", "vocab_size: 128256", "vocab_size: 1")), "--tp", "2",
     "--batch", "8"], 2, "--tp: 2 is more than llama3-8b's vocab_size 1"),
    ("tp-past-intermediate-size-api", lambda t: _decode_call(_spec(t, "inter4", "intermediate_size: 14336",
     "intermediate_size: 4"), 8), 2, "tp: 8 does not divide llama3-8b's mlp.intermediate_size 4"),
    ("reserve-past-memory", lambda t: ["serve", "llama3-8b", "--tp", "1", "--qps", "2", "--reserve-gb", "80"], 2,
     "--reserve-gb: 80 GB per GPU takes all of the 76.97 GB one h100 may use"),
    ("max-num-seqs-past-any-budget", lambda t: ["serve", "llama3-8b", "--tp", "1", "--max-num-seqs", "16777216"], 2,
     "which vLLM refuses (each running sequence needs a token of the step); give --max-num-seqs 8,192 or fewer"),
    ("sequence-parallel-to-a-plan", lambda t: ["train", "llama3-8b", "--tokens", "1T", "--gpus", "8",
     "--sequence-parallel"], 2, "--sequence-parallel: a predicted plan runs sequence parallelism wherever it runs TP"),
    ("sequence-parallel-not-a-flag-api", lambda t: "llm_cost.train('llama3-8b', 10**12, gpus=8, sequence_parallel='x')",
     2, "sequence_parallel: 'x' must be True or False"),
    ("pue-zero-states-its-range", lambda t: ["train", "llama3-8b", "--tokens", "1T", "--gpus", "8", "--pue", "0"], 2,
     "--pue: '0' must be a finite number at least 1 and at most 10"),
    ("qps-past-any-number-states-its-range", lambda t: ["serve", "llama3-8b", "--qps", "1e308"], 2,
     "--qps: '1e308' must be a finite number at least 0.001 and at most 1e+06"),
    ("workload-rate-past-a-float", lambda t: ["serve", "llama3-8b", "--tp", "1", "--workload", _rate_file(t, "1e308")],
     2, "rate_rps x duration_s = too large to print (beyond a float's range) requests"),
    ("workload-rate-under-one-request", lambda t: ["serve", "llama3-8b", "--tp", "1", "--workload",
     _rate_file(t, "1e-308")], 2, "--workload: no request arrives in the simulated run (rate_rps x duration_s under"),
    ("moe-odd-expert-width-at-the-default-tp", lambda t: ["moe", _edited(t, "mixtral-8x7b",
     "moe_intermediate_size: 14336", "moe_intermediate_size: 14338")], 0, "8 routed experts, top-2"),
    ("moe-tp-not-dividing-the-heads", lambda t: ["moe", "mixtral-8x7b", "--tp", "3"], 2,
     "--tp: 3 does not divide mixtral-8x7b's attention heads; give one of 1, 2, 4, 8, 16, 32"),
    ("a-plan-skips-layouts-a-width-refuses", lambda t: ["train", str(_spec(t, "inter3", "intermediate_size: 14336",
     "intermediate_size: 14337")), "--tokens", "1T", "--gpus", "8"], 0, "training plan"),
    # 4: every output path through the one writer
    ("i36-plot-existing", lambda t: ["kv", "llama3-8b", "--plot", _existing(t, "n.png")], 2, "already exists; pass --force"),
    ("i36-plot-fifo", lambda t: ["kv", "llama3-8b", "--plot", str(_fifo(t, "n.png")), "--force"], 2, "a FIFO, not a regular file"),
    ("i36-plot-link", lambda t: ["kv", "llama3-8b", "--plot", str(_link_to(t, "n.png", _existing(t, "x.png"))), "--force"],
     2, "a symbolic link, not a regular file"),
    ("i36-force-without-plot", lambda t: ["kv", "llama3-8b", "--force"], 2, "--force: replaces an existing --plot file"),
    # 5: the path is not rewritten; the one rule that failed
    ("i36-trace-path-kept", lambda t: SERVE + ["--trace", _trace_in(t, {**ROW, "prefix_id": "a", "prefix_tokens": 200})],
     2, "/p/trace.jsonl:1: prefix_tokens 200 is more than input_tokens 100"),
    # 7: typed trace rows, percentiles with their range
    ("i36-trace-output-text", lambda t: SERVE + ["--trace", _trace_in(t, {**ROW, "output_tokens": "12"})],
     2, "trace.jsonl:1: output_tokens '12' is text"),
    ("i36-trace-prefix-id-list", lambda t: SERVE + ["--trace", _trace_in(t, {**ROW, "prefix_id": [1], "prefix_tokens": 5})],
     2, "trace.jsonl:1: prefix_id [1] must be text or a whole number"),
    ("i36-p99.99999999", lambda t: SERVE + ["--qps", "1", "--ttft", "p99.99999999:2s"], 2, "--ttft: percentile 99.99999999 must be from 0.01 to 99.99"),
    ("i36-p0.0001", lambda t: SERVE + ["--qps", "1", "--ttft", "p0.0001:2s"], 2, "--ttft: percentile 0.0001 must be from 0.01"),
    ("i36-arabic-indic-digits", lambda t: SERVE + ["--qps", "1", "--ttft", "p\u0669\u0669:2s"], 2, "XX from 0.01 to 99.99"),
    # 8: options the form does not use
    ("i36-analytic-seed", lambda t: ["serve", "llama3-8b", "--analytic", "--seed", "3"], 2, "--seed: a simulation"),
    ("i36-saturated-simulation-flags", lambda t: SERVE + ["--batch", "8", "--requests", "50", "--max-num-seqs", "8",
     "--max-model-len", "4K", "--no-prefix-caching", "--prefix", "100"], 2,
     "--requests, --max-num-seqs, --max-model-len, --no-prefix-caching, --prefix: a simulation"),
    ("i36-disaggregated-chunk", lambda t: ["serve", "llama3-8b", "--mode", "disaggregated", "--chunk", "2K"], 2,
     "--chunk: aggregated serving (chunked prefill) uses it, not the disaggregated search"),
    ("i36-train-mfu-zero-sp", lambda t: ["train", "llama3-8b", "--tokens", "15T", "--mfu", "0.4", "--zero", "3", "--sequence-parallel"],
     2, "--zero, --sequence-parallel: a layout's memory (--tp, --pp or --dp) uses them"),
    ("i36-train-gpu-hours-zero-with-layout", lambda t: ["train", "llama3-8b", "--tokens", "15T", "--gpu-hours", "1.3M", "--tp", "8", "--zero", "3"],
     0, "ZeRO-3"),
    # 10: the refusal names what is wrong
    ("i36-train-csv-json", lambda t: ["train", "llama3-8b", "--tokens", "1T", "--mfu", "0.4", "--csv", "--json"], 2, "--csv: train prints no table of rows to give as CSV; use --json"),
    ("i36-gpus-per-node-5000", lambda t: ["serve", "llama3-8b", "--gpu", _gpu_spec(t, r"gpus_per_node: .*", "gpus_per_node: 5000")],
     2, "field interconnect.gpus_per_node"),
    ("i36-fit-mlp-only", lambda t: ["fit", _mlp_only(t)], 2, "llama3-8b: no layer of its layer_types keeps a KV cache"),
    ("i36-kv-mlp-only", lambda t: ["kv", _mlp_only(t)], 0, "per token (all caching layers)         0 B"),
    # 11: calibrate's names, profiles and GPU specs read strictly
    ("i36-profile-name-newline", lambda t: ["calibrate", str(A100_TIMINGS), "-o", str(t / "x.yaml"), "--name", "a\nb"], 2,
     "--name: 'a\\nb' is not a valid profile identifier"),
    ("i36-profile-name-dotdot", lambda t: ["calibrate", str(A100_TIMINGS), "-o", str(t / "x.yaml"), "--name", "../evil"], 2,
     "'../evil' is not a valid profile identifier"),
    ("i36-profile-name-5000", lambda t: ["calibrate", str(A100_TIMINGS), "-o", str(t / "x.yaml"), "--name", "a" * 5000], 2,
     "(5,000 characters)' is not a valid profile identifier"),
    ("i36-profile-family-tpu", lambda t: ["validate", "--profile", _calibrated(t, lambda s: s.replace("\nfamily: hopper\n", "\nfamily: tpu-v9\n"))],
     2, "family: 'tpu-v9' is not a kernel family"),
    ("i36-profile-error-nan", lambda t: ["validate", "--profile", _calibrated(t, lambda s: re.sub(r"\n  median: .*", "\n  median: .nan", s, count=1))],
     2, "field out_of_source.median: Input should be a finite number"),
    ("i36-gpu-memory-string", lambda t: ["fit", "llama3-8b", "--gpu", _gpu_spec(t, r"memory_gb: .*", 'memory_gb: "80"')], 2,
     "field memory_gb: Input should be a valid number (got '80')"),
    ("i36-gpu-name-binary", lambda t: ["fit", "llama3-8b", "--gpu", _gpu_spec(t, r"\nname: .*", "\nname: !!binary aDEwMA==")], 2,
     "field name: Input should be a valid string"),
    # the CLI fuzz: a picture of one step is refused for a sweep before the sweep is computed (3 s before)
    ("i36-roofline-sweep-plot", lambda t: ["roofline", "qwen2-vl-7b", "--batch", "1", "--context", "1..10000:1",
     "--plot", str(t / "r.png")], 2, "--plot: the Roofline picture is of one step"),
    # 13: an echoed value is cut to 80 characters
    ("i36-context-5000-digits", lambda t: ["kv", "llama3-8b", "--context", "9" * 5000], 2, "9' (5,000 characters) is larger than 1e+15"),
    # 14: the API raises its own error only
    ("i36-api-10e400", lambda t: "llm_cost.spec(alpha=0.8, gamma=4, c=10**400)", 2, "c: an integer of 401 digits must be a finite number"),
    ("i36-api-calibrate-true", lambda t: f"llm_cost.calibrate(True, {str(t / 'x.yaml')!r})", 2, "measurements: True must be a list"),
    ("i36-api-name-100000", lambda t: 'llm_cost.params("x" * 100_000 + ".yaml")', 2, "(100,005 characters): cannot be read"),
    ("i36-api-config-100000", lambda t: 'llm_cost.params("x" * 100_000 + ".json")', 2, "cannot be read (File name too long)"),
    ("i36-api-numpy-contexts", lambda t: 'llm_cost.kv("llama3-8b", __import__("numpy").array([1024, 2048]))', 2, "contexts: array([1024, 2048])"),
    # numpy's int64 is an integer (checks.integer: an attacker of stop 53 had kv contexts of an array refused)
    ("i36-api-numpy-batch", lambda t: 'llm_cost.decode("llama3-8b", batch=__import__("numpy").int64(8))', 0, ""),
    ("api-numpy-array-batch", lambda t: 'llm_cost.decode("llama3-8b", batch=__import__("numpy").array([8, 9]))', 2,
     "batch: "),
]  # fmt: skip


def _fitted(tmp: Path, old: str, new: str) -> str:
    """The shipped hopper-pytorch-eager profile with its text ``old`` replaced by ``new``."""
    assert old in PROFILE
    return _file(tmp, "p.yaml", PROFILE.replace(old, new))


#: The hostile-input trial after issue 36: each row failed (or answered silently) before its fix.
EMIT = ["serve", "llama3-8b", "--tp", "1", "--batch", "32", "--emit"]
IN_PROCESS += [
    # an emitted command whose engine has no flag value for the plan's KV dtype says so
    ("trial-emit-vllm-kv-int4", lambda t: [*EMIT, "vllm", "--kv-dtype", "int4"], 0,
     "warning: vLLM's --kv-cache-dtype has no int4 KV cache: the command asks auto"),
    ("trial-emit-sglang-kv-fp32", lambda t: [*EMIT, "sglang", "--kv-dtype", "fp32"], 0,
     "SGLang takes auto, fp8_e4m3, fp8_e5m2"),
    ("trial-emit-vllm-kv-int8", lambda t: [*EMIT, "vllm", "--kv-dtype", "int8"], 0,
     "the command asks fp8, so the engine keeps its KV cache in FP8"),
    ("trial-emit-trtllm-kv-int4", lambda t: [*EMIT, "trtllm", "--kv-dtype", "int4"], 0,
     "warning: TensorRT-LLM's kv_cache_config.dtype (no trtllm-serve flag) has no int4 KV cache: the command leaves "
     "it at auto"),
    ("trial-emit-trtllm-kv-fp32", lambda t: [*EMIT, "trtllm", "--kv-dtype", "fp32"], 0, "TensorRT-LLM takes auto, fp8"),
    # flops forms that cannot change a decode count, or MLA forms of a model without MLA, were accepted
    ("trial-flops-decode-logits-all", lambda t: ["flops", "llama3-8b", "--phase", "decode", "--logits", "all"], 2,
     "--logits: all does not apply to --phase decode"),
    ("trial-flops-decode-full-mask", lambda t: ["flops", "llama3-8b", "--phase", "decode", "--attention", "full"], 2,
     "--attention: full does not apply to --phase decode"),
    ("trial-flops-mla-without-mla", lambda t: ["flops", "llama3-8b", "--mla", "absorbed"], 2,
     "--mla: absorbed is a form of multi-head latent attention"),
    ("trial-roofline-decode-logits", lambda t: ["roofline", "llama3-8b", "--logits", "all"], 2,
     "use --phase prefill for a prompt (--logits is where its LM head runs)"),
    ("trial-emit-trtllm-kv-int8", lambda t: [*EMIT, "trtllm", "--kv-dtype", "int8"], 0,
     "has no int8 KV cache: the command can ask fp8 at most, so the engine keeps its KV cache in FP8"),
    # a price a float cannot hold: a subnormal (printed as $9.99989e-321), or 1e-400 read as $0
    ("trial-price-subnormal", lambda t: [*EMIT[:-1], "--usd-per-gpu-hour", "1e-320"], 2,
     "--usd-per-gpu-hour: '1e-320' is too small to hold; give 0 or from 2.23e-308 to 1e+06"),
    ("trial-price-underflows", lambda t: ["train", "llama3-8b", "--tokens", "1T", "--mfu", "0.4", "--usd-per-gpu-hour",
     "1e-400"], 2, "--usd-per-gpu-hour: '1e-400' is too small to hold"),
    ("trial-api-train-price-subnormal", lambda t: 'llm_cost.train("llama3-8b", tokens=10**12, mfu=0.4, usd_per_gpu_hour=1e-320)',
     2, "usd_per_gpu_hour: 1e-320 is a subnormal number, too small to hold; give 0 or a price from 2.23e-308"),
    ("trial-api-serve-price-subnormal", lambda t: 'llm_cost.serve("llama3-8b", layout=llm_cost.Layout(tp=1), '
     'concurrency=8, usd_per_gpu_hour=5e-324)', 2, "usd_per_gpu_hour: 5e-324 is a subnormal number"),
    # a workload file's preset that is not a name: its file and key, not the --workload flag's message
    ("trial-workload-preset-number", lambda t: [*SERVE, "--workload", _file(t, "w.yaml", "preset: 5\narrivals: "
     "{process: poisson, rate_rps: 2, duration_s: 10}\n")], 2,
     "w.yaml.preset: 5 is not a preset; give one of chat, code, rag, agentic-long-context"),
    ("trial-workload-preset-unknown", lambda t: [*SERVE, "--workload", _file(t, "w.yaml", "preset: chatt\narrivals: "
     "{process: poisson, rate_rps: 2, duration_s: 10}\n")], 2, "w.yaml.preset: 'chatt' is not a preset; give one of chat"),
    # an EP that does not divide the expert slots: no EP size is named that --tp 4 cannot make (was 'EP sizes that do: 131')
    ("trial-serve-ep-redundant", lambda t: ["serve", "qwen3-30b-a3b", "--tp", "4", "--ep", "4", "--redundant-experts", "3",
     "--batch", "8"], 2, "--ep: 4 does not divide 128 experts + 3 redundant; no EP size at --tp 4 does (EP is --tp x --dp); "
     "or 0 or 4 redundant experts at --ep 4"),
    # a hand-edited profile's fitted shapes: [least, greatest], batch from 1 (had been taken as written)
    ("trial-profile-batch-zero", lambda t: ["validate", "--profile", _fitted(t, "fitted_batch:\n- 1\n", "fitted_batch:\n- 0\n")],
     2, "p.yaml: invalid spec: field (top level): fitted_batch: [0, 256] is not a range of the shapes fitted; give "
     "[least, greatest], whole numbers from 1 with the least first"),
    ("trial-profile-batch-negative", lambda t: ["validate", "--profile", _fitted(t, "fitted_batch:\n- 1\n- 256\n",
     "fitted_batch:\n- -4\n- -2\n")], 2, "fitted_batch: [-4, -2] is not a range of the shapes fitted"),
    ("trial-profile-context-reversed", lambda t: ["validate", "--profile", _fitted(t, "fitted_context:\n- 128\n- 32768\n",
     "fitted_context:\n- 32768\n- 128\n")], 2, "fitted_context: [32768, 128] is not a range of the shapes fitted"),
    # a list of 100,001 values and no alias: the limit is the file's values, not an alias (had read 'once YAML
    # aliases are expanded', as if the file had used one)
    ("trial-profile-100001-values", lambda t: ["validate", "--profile", _fitted(t, "fitted_batch:\n- 1\n- 256\n",
     "fitted_batch:\n" + "- 1\n" * 100_001)], 2, "more than 100,000 values (in all its lists and mappings, counted after "
     "any YAML aliases are expanded), the most a file llm-cost reads may hold"),
]  # fmt: skip


def _peak_mb() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024


HERE_ROWS = [(case, build, code, phrase) for case, build, env, code, phrase in ROWS if not env] + IN_PROCESS


@pytest.mark.parametrize("case,build,code,phrase", HERE_ROWS, ids=[r[0] for r in HERE_ROWS])
def test_reproducer_in_process(cli, tmp_path, monkeypatch, case, build, code, phrase):
    """A reproducer run in this process (as the suite's ``cli`` fixture runs the program, or an
    API call), in its own folder: exit 0 with the phrase in its output, or 2 (1 for the
    environment) with one ``error:`` line holding it and nothing on stdout; under 2 s of CPU and
    200 MB more resident memory at its peak (the peak is reset first)."""
    import time

    import llm_cost

    monkeypatch.chdir(tmp_path)
    call = build(tmp_path)
    with open("/proc/self/clear_refs", "w") as refs:  # reset the peak resident memory (Linux)
        refs.write("5")
    before, start = _peak_mb(), time.process_time()
    if isinstance(call, list):
        r = cli(*call)
        got, out, err = r.code, r.out, r.err
    else:
        got, out, err = 0, "", ""
        try:
            eval(call, {"llm_cost": llm_cost})  # noqa: S307 - the row's own API call
        except llm_cost.LlmCostError as exc:
            got, err = 2, f"error: {exc}\n"
    cpu_s, grown_mb = time.process_time() - start, _peak_mb() - before
    assert got == code, f"{case}: exit {got}; {err[:400]}"
    assert (phrase in err) if code else (phrase in out), f"{case}: {(err or out)[-400:]}"
    assert "Traceback" not in err and err.count("\n") <= 1, err[:600]
    if code:
        assert err.startswith("error: ") and len(err) < 600 and out == "", err[:600]
    assert cpu_s < TIME_LIMIT_S and grown_mb < MEMORY_LIMIT_MB, (cpu_s, grown_mb)


def test_prefill_share_is_never_negative(cli):
    """A step that carries a prompt chunk is never faster than the same step without it."""
    for args in (
        ["llama3.1-8b", "--input", "100K", "--output", "20K", "--analytic"],  # near its 131,072-token context
        [str(FIXTURES / "gpt2" / "config.json"), "--gpu", "rtx-4090", "--input", "512", "--output", "128"],
    ):
        r = cli("serve", *args, "--json")
        shares = [float(x) for x in re.findall(r'"prefill_share": ([-0-9.e]+)', r.out)]
        assert r.code == 0 and shares and min(shares) >= 0, args


def test_out_refuses_a_link_and_writes_with_the_umask(cli, tmp_path):
    """``-o`` onto a symbolic link is refused, even with --force, and neither the link nor the
    file it names changes (the one writer never follows a link); a new file is readable under the
    umask (0o644 under umask 022, not a temporary file's 0o600)."""
    target, link = tmp_path / "target.yaml", tmp_path / "link.yaml"
    target.write_text("kept\n")
    link.symlink_to(target.name)
    refused = cli("import", CONFIG_PATH, "-o", str(link), "--name", "x", "--force")
    assert refused.code == 2 and "is a symbolic link" in refused.err
    assert link.is_symlink() and target.read_text() == "kept\n"
    old = os.umask(0o022)
    try:
        r = cli("import", CONFIG_PATH, "-o", str(tmp_path / "new.yaml"), "--name", "x")
    finally:
        os.umask(old)
    assert r.code == 0, r.err
    assert ((tmp_path / "new.yaml").stat().st_mode & 0o777) == 0o644 and "name: x" in (
        tmp_path / "new.yaml"
    ).read_text()


def test_newline_in_name_or_path_writes_one_header_line(cli, tmp_path):
    out = tmp_path / "nl.yaml"
    r = cli("import", str(_config(tmp_path, "nl", _name_or_path="org/a\nb")), "-o", str(out))
    assert r.code == 0, r.err
    assert out.read_text().splitlines()[0].startswith("# org/a b: written by")


# --- fuzz: checkpoint folders, timing files, workload traces --------------------------------

JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**30), 10**30),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=12),
        st.sampled_from(["/etc/passwd", "../x.safetensors", "model.safetensors", "BF16", "F8_E4M3", "\x00"]),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)


def _dumps(value) -> str:
    return json.dumps(value, allow_nan=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    header=st.one_of(
        JSON_VALUES,
        st.dictionaries(
            st.sampled_from(["model.norm.weight", "__metadata__", "lm_head.weight"]),
            st.fixed_dictionaries(
                {
                    "dtype": JSON_VALUES | st.sampled_from(["BF16", "U8"]),
                    "shape": JSON_VALUES,
                    "data_offsets": JSON_VALUES,
                }
            ),
            max_size=3,
        ),
    ),
    index=st.one_of(
        st.none(), JSON_VALUES, st.fixed_dictionaries({"weight_map": JSON_VALUES, "metadata": JSON_VALUES})
    ),
    extra=st.binary(max_size=64),
)
def test_fuzz_checkpoint_folders(tmp_path_factory, header, index, extra):
    folder = tmp_path_factory.mktemp("ckpt")
    raw = _dumps(header).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + extra)
    if index is not None:
        (folder / "model.safetensors.index.json").write_text(_dumps(index))
    try:
        read_checkpoint(folder)
    except InputError:
        pass


ROW_FIELDS = ["id", "model", "gpu", "phase", "batch", "context", "tp", "weights_dtype", "group_size", "kv_dtype",
              "compute_dtype", "measured_ms"]  # fmt: skip
ROW_VALUES = st.one_of(
    JSON_VALUES,
    st.sampled_from(["llama3-8b", "h200", "decode", "prefill", "bf16", "int4", "inf", "nan", "1e300", "9" * 400]),
    st.integers(-5, 10**7),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(st.dictionaries(st.sampled_from(ROW_FIELDS), ROW_VALUES, max_size=12), max_size=4),
    models=st.one_of(st.none(), JSON_VALUES),
    as_csv=st.booleans(),
)
def test_fuzz_timing_files(tmp_path_factory, rows, models, as_csv):
    folder = tmp_path_factory.mktemp("timings")
    valid = yaml.safe_load(TIMINGS.read_text())["rows"][0]
    rows = [{**valid, **row} for row in rows]
    if as_csv:
        path = folder / "t.csv"
        lines = [",".join(ROW_FIELDS)] + [
            ",".join(str(r.get(k, "")).replace(",", ";") for k in ROW_FIELDS) for r in rows
        ]
        path.write_text("\n".join(lines) + "\n")
    else:
        path = folder / "t.yaml"
        path.write_text(yaml.safe_dump({"models": models, "rows": rows}))
    try:
        check_distinct(load_measurements([path]))
    except InputError:
        pass


TRACE_VALUES = st.one_of(JSON_VALUES, st.integers(-5, 2**40), st.sampled_from(["12", "1.5", "1e9", "nan", "-1", ""]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.one_of(
            JSON_VALUES,
            st.dictionaries(
                st.sampled_from(["arrival_s", "input_tokens", "output_tokens", "prefix_id", "prefix_tokens", "x"]),
                TRACE_VALUES,
                max_size=5,
            ),
        ),
        max_size=4,
    ),
    as_csv=st.booleans(),
)
def test_fuzz_workload_traces(tmp_path_factory, rows, as_csv):
    folder = tmp_path_factory.mktemp("trace")
    if as_csv:
        columns = ["arrival_s", "input_tokens", "output_tokens", "prefix_id", "prefix_tokens"]
        lines = [",".join(columns)] + [
            ",".join(str(r.get(k, "")).replace(",", ";").replace("\n", " ") for k in columns)
            for r in rows
            if isinstance(r, dict)
        ]
        path = folder / "t.csv"
        path.write_text("\n".join(lines) + "\n")
    else:
        path = folder / "t.jsonl"
        path.write_text("\n".join(_dumps(r) for r in rows) + "\n")
    try:
        trace = read_trace(path)
    except InputError:
        return
    assert all(
        1 <= r.input_tokens and 1 <= r.output_tokens and 0 <= r.prefix_tokens <= r.input_tokens for r in trace.rows
    )


@pytest.mark.parametrize("target", [["--tpot", "p99:1us"], ["--itl", "1us"]])
def test_a_gap_target_on_one_token_answers_is_refused(cli, target):
    """An attack: ``--output 1 --tpot p99:1us`` ran and read "TPOT p99 1.00 us met; 100% of
    requests within": a one-token answer has no time between tokens (the plan form already
    refused fewer than 2 output tokens)."""
    out = cli("serve", "llama3-8b", "--tp", "1", "--qps", "5", "--input", "100", "--output", "1", *target)
    assert out.code == 2 and out.out == "" and len(out.err.strip().splitlines()) == 1
    assert out.err.startswith(f"error: {target[0]}: ") and "--output 2 or more" in out.err


def test_a_prompt_shorter_than_a_presets_prefix_names_the_prompt(cli):
    """An attack: ``--input 2K --workload agentic-long-context`` said "--prefix: 115,584 shared
    tokens must be fewer ...", a flag never given: the prefix is the preset's (its 115,584-token
    shared context), the prompt length is the user's."""
    out = cli("serve", "llama3-8b", "--input", "2K", "--workload", "agentic-long-context", "--qps", "5")
    assert out.code == 2 and len(out.err.strip().splitlines()) == 1
    assert out.err.startswith("error: --input: ") and "--prefix" not in out.err and "115,584" in out.err


def test_a_relative_link_loop_is_named_as_one_not_as_a_hub_id(cli, tmp_path, monkeypatch):
    """An attack: ``params files/loop1`` (a folder/name, so also a Hub id's shape) said the Hub could
    not be reached: a looping symbolic link does not 'exist', so it was sent to the Hub."""
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "loop1").symlink_to("loop2")
    (tmp_path / "files" / "loop2").symlink_to("loop1")
    monkeypatch.chdir(tmp_path)
    out = cli("params", "files/loop1")
    assert out.code == 2 and "a loop of symbolic links" in out.err and "Hub" not in out.err


@pytest.mark.parametrize(
    "flag", [["--moe-dispatcher", "deepep"], ["--moe-capacity-factor", "2"], ["--ep-comm-overlap"]]
)
def test_moe_training_options_on_a_dense_model_are_refused(cli, flag):
    """An attack: ``train llama3-8b ... --moe-dispatcher deepep --moe-capacity-factor 2
    --ep-comm-overlap`` ran with no word of them: Llama-3-8B has no routed experts."""
    out = cli("train", "llama3-8b", "--tokens", "1T", "--gpus", "8", *flag)
    assert out.code == 2 and out.err.startswith(f"error: {flag[0]}: ") and "dense" in out.err


def test_a_rate_past_the_largest_plan_does_not_ask_for_more_gpus(cli):
    """An attack: ``serve llama3-8b --qps 1e6`` advised "raise --gpus" while --gpus was already at
    the 4,096 a plan covers."""
    out = cli("serve", "llama3-8b", "--qps", "1e6")
    assert out.code == 2 and "raise --gpus" not in out.err and "4,096 GPUs are the most a plan covers" in out.err


def test_a_chunk_whose_workspace_fills_the_gpu_names_the_chunk(cli):
    """An attack: ``--chunk 1048576`` on one H100 was refused as "give more GPUs (--tp/--pp)": the
    weights (16 GB of Llama-3-8B) fit; the workspace of a million-token step does not leave a KV
    block. The error names --chunk and a budget that leaves one (which then runs)."""
    out = cli("serve", "llama3-8b", "--qps", "5", "--tp", "1", "--chunk", "1048576", "--gpu-memory-utilization", "1")
    assert out.code == 2 and out.err.startswith("error: --chunk: ") and "--tp" not in out.err
    smaller = re.search(r"give --chunk ([\d,]+) or fewer", out.err).group(1).replace(",", "")
    ran = cli("serve", "llama3-8b", "--qps", "5", "--tp", "1", "--chunk", smaller, "--gpu-memory-utilization", "1",
              "--requests", "50")  # fmt: skip
    assert ran.code == 0


def test_a_measurement_row_of_a_pipeline_or_of_missing_cells_is_refused(cli, tmp_path):
    """An attack: ``pp: 0`` (or 2) in a measurement row was read as pp 1 (the field was not one of
    the row's), and a CSV line with a cell short was dropped without a word, so a 3-row file read
    "2 rows: a profile needs at least 3"."""
    head = "id,model,gpu,phase,batch,context,measured_ms"
    rows = ["b,llama3-8b,h100,decode,8,100,11", "c,llama3-8b,h100,decode,16,100,12"]
    short = tmp_path / "short.csv"
    short.write_text("\n".join([head, "a,llama3-8b,h100,decode,1,100", *rows]) + "\n")
    out = cli("calibrate", str(short), "-o", str(tmp_path / "a.yaml"), "--engine", "vllm")
    assert out.code == 2 and "line 2: 6 cells where the header names 7" in out.err
    for pp in ("0", "2"):
        piped = tmp_path / f"pp{pp}.csv"
        piped.write_text("\n".join([head + ",pp", f"a,llama3-8b,h100,decode,1,100,10,{pp}", *(r + ",1" for r in rows)]))
        out = cli("calibrate", str(piped), "-o", str(tmp_path / "b.yaml"), "--engine", "vllm")
        assert out.code == 2 and "row 1" in out.err and "pp" in out.err and not (tmp_path / "b.yaml").exists()


def test_a_tiny_terminal_width_still_prints_whole_figures(cli, monkeypatch):
    """An attack: ``COLUMNS=1 llm-cost params llama3-8b`` printed a character per cell, every figure
    lost. Text is laid out in at least 80 columns: Llama-3-8B's 8,030,261,248 parameters (its
    checkpoint total) show whole."""
    monkeypatch.setenv("COLUMNS", "1")
    out = cli("params", "llama3-8b")
    assert out.code == 0 and "8,030,261,248" in out.out


@pytest.mark.parametrize(
    "change, phrase",
    [
        (_row0("mfu", 5.0), "row 1: field mfu: Input should be less than or equal to 1 (got 5.0)"),
        (_row0("output_tokens", -5), "row 1: field output_tokens: Input should be greater than or equal to 0"),
        (_row0("foo", 1), "row 1: field foo: unknown field"),
        (lambda data: data.update(foo=1), "field foo: unknown field of a measurement file; it takes check_only"),
    ],
)
def test_a_measurement_files_unknown_or_impossible_keys_are_refused(cli, tmp_path, change, phrase):
    """An attack: a row's MFU of 5, its -5 output tokens, a key no row has and a file key no file
    has were all left out without a word (the rows' published context is kept, within bounds)."""
    path = _timings(tmp_path, "t.yaml", change)
    out = cli("calibrate", str(path), "-o", str(tmp_path / "p.yaml"))
    assert out.code == 2 and phrase in out.err and not (tmp_path / "p.yaml").exists(), out.err


def test_a_measurement_csv_with_a_byte_order_mark_is_read(cli, tmp_path):
    """An attack: a spreadsheet's UTF-8 byte-order mark made the first column '\\ufeffid', and the
    file was refused as missing 'model' in row 1 (traces and specs take one)."""
    text = "id,model,gpu,phase,batch,context,measured_ms\n" + "".join(
        f"r{b},llama3-8b,h100,decode,{b},1024,{9 + b / 8:g}\n" for b in (1, 8, 32, 64)
    )
    plain, marked = tmp_path / "plain.csv", tmp_path / "marked.csv"
    plain.write_text(text)
    marked.write_text("\ufeff" + text, encoding="utf-8")
    runs = [
        cli("calibrate", str(p), "-o", str(tmp_path / f"{p.stem}.yaml"), "--engine", "vllm") for p in (plain, marked)
    ]
    assert [r.code for r in runs] == [0, 0], [r.err for r in runs]


def test_a_measurement_csvs_decimal_columns_are_read_as_numbers(cli, tmp_path):
    """An attack: a CSV's ``mfu`` 0.5, ``tpot_ms`` and ``tokens_per_s`` were refused as text ("a
    valid number (got '0.5')"), which a YAML file's are not; an MFU over 1 is refused as in YAML."""
    head = "id,model,gpu,phase,batch,context,measured_ms,tpot_ms,mfu,tokens_per_s\n"
    rows = "".join(f"r{b},llama3-8b,h100,decode,{b},1024,{9 + b / 8:g},{9 + b / 8:g},MFU,100\n" for b in (1, 8, 32, 64))
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text(head + rows.replace("MFU", "0.5"))
    bad.write_text(head + rows.replace("MFU", "1.5"))
    out = cli("calibrate", str(good), "-o", str(tmp_path / "g.yaml"), "--engine", "vllm")
    assert out.code == 0, out.err
    out = cli("calibrate", str(bad), "-o", str(tmp_path / "b.yaml"), "--engine", "vllm")
    assert out.code == 2 and "row 1: field mfu: Input should be less than or equal to 1 (got 1.5)" in out.err


@pytest.mark.parametrize(
    "gpu, model, phrase",
    [("h999", "llama3-8b", "rows.csv: row 1: field gpu: unknown GPU 'h999'"),
     ("h100", "nosuchmodel", "rows.csv: row 'r1': field model: unknown model 'nosuchmodel'")],
)  # fmt: skip
def test_a_measurement_rows_unknown_gpu_or_model_names_the_file_and_row(cli, tmp_path, gpu, model, phrase):
    """An attack: "unknown GPU 'h999'" and "unknown model ..." named neither the file nor the row."""
    path = tmp_path / "rows.csv"
    path.write_text("id,model,gpu,phase,batch,context,measured_ms\n" + "".join(
        f"r{b},{model},{gpu},decode,{b},1024,{9 + b / 8:g}\n" for b in (1, 8, 32)
    ))  # fmt: skip
    out = cli("calibrate", str(path), "-o", str(tmp_path / "p.yaml"), "--engine", "vllm")
    assert out.code == 2 and phrase in out.err and out.err.count("\n") == 1, out.err


@pytest.mark.parametrize("case", ["hub-id", "gpu-alias", "config-json", "renamed-spec"])
def test_a_row_repeated_under_any_name_of_its_model_or_gpu_is_one_measurement(cli, tmp_path, case):
    """The same step and time in a YAML file (its model a Hub id the file maps to a spec file) and in
    a CSV file (the shipped name) is one measurement, said twice: refused, naming both files (an
    attacker's pair had passed, the names compared as text); so are a second attacker's repeats
    under other names: the GPU's alias (h100-sxm beside h100), the model's config.json, and a spec
    copy whose only change is its name. Another model's step at the same shape and time is none."""
    root = Path(__file__).resolve().parents[1]
    spec = tmp_path / "l8.yaml"
    text = cli("show", "llama3.1-8b").out
    spec.write_text(text.replace("name: llama3.1-8b", "name: my-8b", 1) if case == "renamed-spec" else text)
    target = (
        str(root / "tests" / "fixtures" / "hf" / "llama-3.1-8b" / "config.json") if case == "config-json" else "l8.yaml"
    )
    gpu = "h100-sxm" if case == "gpu-alias" else "h100"
    rows = tmp_path / "a.yaml"
    rows.write_text(yaml.safe_dump({
        "source": "a test", "engine": "vLLM 0.15.1", "models": {"meta-llama/Llama-3.1-8B": target},
        "rows": [{"id": f"y{b}", "model": "meta-llama/Llama-3.1-8B", "gpu": gpu, "phase": "decode",
                  "batch": b, "context": 1024, "measured_ms": 9 + b / 8} for b in (1, 8, 32)],
    }, sort_keys=False))  # fmt: skip
    other = tmp_path / "b.csv"
    other.write_text("id,model,gpu,phase,batch,context,measured_ms\nc8,llama3.1-8b,h100,decode,8,1024,10\n")
    out = cli("calibrate", str(rows), str(other), "-o", str(tmp_path / "p.yaml"), "--engine", "vllm")
    assert out.code == 2 and "a.yaml: row 'y8' and b.csv: row 'c8' repeat one measurement" in out.err, out.err
    if case == "hub-id":
        other.write_text("id,model,gpu,phase,batch,context,measured_ms\nc8,mistral-7b,h100,decode,8,1024,10\n")
        out = cli("calibrate", str(rows), str(other), "-o", str(tmp_path / "q.yaml"), "--engine", "vllm")
        assert out.code == 0, out.err
