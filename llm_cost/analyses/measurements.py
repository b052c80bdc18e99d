"""Measured step times: the files, their rows, their sources, and the step each row timed.

Measurement files (YAML or CSV). YAML: a mapping with ``source`` (where the numbers were published:
a URL, or ``owner/repo path @ commit``), ``engine`` (the engine and its version, e.g. ``vLLM 0.21.0``),
``engine_family`` (vllm, sglang, trtllm, pytorch-eager, torch-compile, llamacpp), optional ``models``
(a row's model id -> an llm-cost model name or a spec path relative to the file) and ``rows``, a
list of mappings; CSV: one row per line with a header (a user's own timings: no source needed).

The fields of a row: ``id`` (optional in CSV: ``line`` and the line number), ``model``, ``gpu``
(shipped name or alias), ``phase`` (decode | prefill), ``batch`` (sequences), ``context`` (decode:
tokens cached per sequence; prefill: prompt tokens), ``tp`` (default 1), ``pp`` (1, the default: a
pipeline's step is not one measured step), ``weights_dtype`` (bf16 |
fp16 | fp8 | int8 | int4), ``group_size`` (weight-only quantisation group, blank for per-channel int8;
int4 without one is taken as 128), ``kv_dtype`` (default bf16), ``compute_dtype`` (bf16 | fp16 | fp8;
default bf16, fp16 with fp16 weights or KV), ``measured_ms`` (milliseconds per step: per token at
batch 1 for decode, the time to first token for a prefill); ``prefill_tokens`` and ``prefill_cached``
(a decode step under load that also computes a prompt chunk of that many tokens after that many
cached: chunked prefill's mixed step, as serving runs give it); optionally ``source`` (the row's own,
when a file gathers several), ``engine`` (the row's engine version), ``tpot_ms`` / ``ttft_ms`` (the
published figure the step time was derived from: it must agree with ``measured_ms``), ``quote`` and
``derivation``. A row with ``excluded`` (a reason: not one step, a duplicate) is kept in the file but
neither fitted on nor checked. A file with ``check_only`` (a reason: a kernel path the time model does
not represent, e.g. one release's slow INT4 MoE kernels) gives rows that no fit uses, the whole fit's
nor any fold's, but that ``llm-cost validate`` predicts and counts as held out like any other source:
its error is reported, not hidden, and does not bend the parameters every other prediction uses.

A SOURCE is one publication (a blog post, a vendor table, a benchmark posted in one issue): its rows
share a setup and its biases, so the fit is checked leave-one-source-out
(:mod:`llm_cost.analyses.calibration`). A row's source is its file's ``source_id`` when the file
gives one (files drawn from one publication share it, e.g. the tables of one README), else its
file's ``source``; a row's own ``source`` (a revision of the document, a comment) is kept for reading.

Weight bits (:func:`llm_cost.core.types.stored_weight_bits`): a group of G weights carries a bf16 scale and zero,
32 / G bits per weight (int4 at G = 32: 5 bits; int8 per channel: 8).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from llm_cost.core.errors import InputError, SpecError
from llm_cost.core.limits import MAX_CALIBRATION_ROWS
from llm_cost.core.types import DTYPE_BITS, Dtype, Engine, Phase, WeightFormat, stored_weight_bits
from llm_cost.model.formats import check_group_divides
from llm_cost.model.layout import Layout
from llm_cost.specs.declare import Bounds, Spec, spec, validated
from llm_cost.specs.files import read_text, read_yaml, real_path, shown, validation_message
from llm_cost.specs.load import load_model
from llm_cost.specs.schema import ModelSpec
from llm_cost.workload.step import SeqGroup, Step, build_step, decode, prefill

__all__ = [
    "Measurement",
    "steps_of",
    "measurements_dir",
    "shipped_files",
    "load_measurements",
    "check_distinct",
    "category",
    "step_of",
    "engine_of_files",
]

_WHAT = "a .yaml or .csv measurement file"
#: How far a row's published ``tpot_ms`` / ``ttft_ms`` may differ from its ``measured_ms`` (rounding).
AGREEMENT = 0.01
#: An engine text names a version: digits with a dot (``vLLM 0.21.0``, ``TensorRT-LLM v0.9.0``), a build
#: (``b3447``), a commit, a pull request (``#7676``) or, for an unnamed build, its year.
_VERSION = re.compile(r"\d+\.\d+|\bb\d{3,}\b|\bv\d+\b|\b[0-9a-f]{7,40}\b|\b20\d\d\b|#\d{3,}")


@spec
class Measurement(Spec):
    """One measured step time (fields in the module docstring). Validated from a file's row, as a
    spec is (CSV text such as ``"8"`` is read as the number it spells). A row's published context
    (``quote``, ``derivation``, its request lengths, throughput and MFU) is kept as given, within
    its bounds, and read by no fit; any other key is refused, as a spec refuses one (an attack: a
    typo, an MFU of 5 and -5 output tokens had been left out without a word)."""

    __pydantic_config__ = {"extra": "forbid"}

    id: str
    model: str
    gpu: str
    phase: Phase
    batch: Annotated[int, Bounds(ge=1, le=2**20)]
    context: Annotated[int, Bounds(ge=0, le=2**30)]
    tp: Annotated[int, Bounds(ge=1, le=4096)] = 1
    pp: Annotated[int, Bounds(ge=1, le=4096)] = 1
    weights_dtype: Literal["bf16", "fp16", "fp8", "int8", "int4"] = "bf16"
    group_size: Optional[Annotated[int, Bounds(ge=1, le=2**20)]] = None
    kv_dtype: Literal["bf16", "fp16", "fp8"] = "bf16"
    compute_dtype: Optional[Literal["bf16", "fp16", "fp8"]] = None
    measured_ms: Annotated[float, Bounds(gt=0)]
    prefill_tokens: Annotated[int, Bounds(ge=0, le=2**24)] = 0
    prefill_cached: Annotated[int, Bounds(ge=0, le=2**30)] = 0
    tpot_ms: Optional[Annotated[float, Bounds(gt=0)]] = None
    ttft_ms: Optional[Annotated[float, Bounds(gt=0)]] = None
    excluded: Optional[str] = None
    check_only: Optional[str] = None
    spec: str = ""  # the model name or path the step is built from (resolved from ``models``)
    source: str = ""  # the row's source (its own, else its file's)
    engine: str = ""  # the engine and version (the row's, else its file's)
    engine_family: Optional[Engine] = None  # the file's engine family
    file: str = ""  # the file's name
    # what the source published beside the time, kept as given
    quote: Optional[str] = None
    derivation: Optional[str] = None
    input_tokens: Optional[Annotated[int, Bounds(ge=0, le=2**30)]] = None
    output_tokens: Optional[Annotated[int, Bounds(ge=0, le=2**30)]] = None
    tokens_per_s: Optional[Annotated[float, Bounds(gt=0)]] = None
    mfu: Optional[Annotated[float, Bounds(gt=0, le=1)]] = None

    def _check(self) -> None:
        if self.phase == Phase.MIXED:
            raise ValueError("phase must be decode or prefill (a step is measured by itself)")
        if self.pp != 1:  # an attack: pp 0 and pp 2 had been read as pp 1
            raise ValueError(
                f"pp {self.pp}: a row times one step of a tensor-parallel layout (pp 1); a pipeline's step is not one "
                "measured step"
            )
        if self.phase == Phase.PREFILL and self.context < 1:  # an attack: the step had failed unnamed
            raise ValueError("context 0: a prefill row's context is its prompt tokens, at least 1")
        if self.group_size is not None and self.weights_dtype not in ("int8", "int4"):
            raise ValueError(  # as serve refuses --group-size beside a dtype without groups
                f"group_size {self.group_size} groups weight-only int8 or int4 weights, not {self.weights_dtype}"
            )
        published = self.tpot_ms if self.phase == Phase.DECODE else self.ttft_ms
        if published is not None and abs(published / self.measured_ms - 1) > AGREEMENT:
            key = "tpot_ms" if self.phase == Phase.DECODE else "ttft_ms"
            raise ValueError(
                f"measured_ms {self.measured_ms:g} disagrees with {key} {published:g} (a {self.phase} row)"
            )


def measurements_dir() -> Path:
    """Folder of the shipped measurement files."""
    return Path(__file__).resolve().parent.parent / "data" / "measurements"


def shipped_files() -> list[Path]:
    """The shipped step-time files (not the serving or training runs in sub-folders), by name."""
    return sorted(measurements_dir().glob("*.yaml"))


#: The keys of a YAML measurement file: its rows and their models, where they come from and which
#: engine made them, and what is said of them (``notes``, ``retrieved``, ``held_out`` and
#: ``held_out_reason``: why a source is kept out of a fit, ``check_only``: that none may use it).
FILE_KEYS = frozenset(
    {"rows", "models", "source", "source_id", "engine", "engine_family", "notes", "retrieved", "held_out",
     "held_out_reason", "check_only"}
)  # fmt: skip


def _file_fields(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """A YAML file's source, engine and family (and ``check_only``, when it gives one), checked: a
    published file must say where its numbers come from and which engine version produced them;
    a key that is none of :data:`FILE_KEYS` is refused, as a spec refuses one."""
    unknown = sorted(str(k) for k in data if k not in FILE_KEYS)
    if unknown:
        raise SpecError(
            f"{shown(path)}: field {shown(unknown[0], 40)}: unknown field of a measurement file; it takes "
            f"{', '.join(sorted(FILE_KEYS))}"
        )
    source, engine, family = data.get("source_id") or data.get("source"), data.get("engine"), data.get("engine_family")
    check_only = data.get("check_only")
    if check_only is not None and (not isinstance(check_only, str) or not check_only.strip()):
        raise SpecError(f"{shown(path)}: field check_only: give the reason no fit may use these rows, as text")
    if not isinstance(source, str) or not source.strip():
        raise SpecError(
            f"{shown(path)}: field source: say where the numbers were published (a URL or owner/repo path @ commit)"
        )
    if not isinstance(engine, str) or not engine.strip():
        raise SpecError(f"{shown(path)}: field engine: name the engine and its version (e.g. 'vLLM 0.21.0')")
    if family is not None:
        try:
            family = Engine(str(family).strip().lower())
        except ValueError:
            raise SpecError(
                f"{shown(path)}: field engine_family: {shown(str(family), 40)!r} is not one of {', '.join(e.value for e in Engine)}"
            ) from None
    fields = {"source": source.strip(), "engine": engine.strip(), "engine_family": family}
    return fields | ({"check_only": check_only.strip()} if check_only is not None else {})


def _rows_of(path: Path) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, Any]]:
    if path.suffix.lower() == ".csv":
        text = read_text(path, "a .csv measurement file").removeprefix("\ufeff")  # a spreadsheet's byte-order mark
        reader = csv.DictReader(text.splitlines())
        lines = list(reader)
        for i, r in enumerate(lines):  # a short or long row would be dropped or misread without a word
            if None in r or any(v is None for v in r.values()):
                cells = len(r.get(None) or []) + sum(v is not None for k, v in r.items() if k is not None)
                raise SpecError(
                    f"{shown(path)}: line {i + 2}: {cells} cells where the header names {len(reader.fieldnames or [])}; "
                    "give one cell per column (an empty one for a blank)"
                )
        rows = [
            {k: _csv_number(k, v) for k, v in r.items() if v not in (None, "")} | {"id": r.get("id") or f"line{i + 2}"}
            for i, r in enumerate(lines)
        ]
        return rows, {}, {"source": f"file {path.name}", "engine": "", "engine_family": None}
    data = read_yaml(path)
    listed = data.get("rows")
    if not isinstance(listed, list) or not all(isinstance(r, dict) for r in listed):
        raise SpecError(f"{shown(path)}: a measurement file needs 'rows', a list of mappings")
    models = data.get("models") or {}
    if not isinstance(models, dict) or not all(isinstance(v, str) for v in models.values()):
        raise SpecError(
            f"{shown(path)}: field models must map each row's model id to an llm-cost model name or spec path"
        )
    return listed, {str(k): v for k, v in models.items()}, _file_fields(path, data)


#: The CSV columns read as decimal numbers (the whole-number ones are read as the integers they
#: spell by validation itself).
_DECIMAL_COLUMNS = frozenset({"measured_ms", "tpot_ms", "ttft_ms", "tokens_per_s", "mfu"})


def _csv_number(column: object, text: object) -> object:
    """A CSV cell of a decimal column (:data:`_DECIMAL_COLUMNS`) as the number it spells (CSV holds
    only text; a YAML row's must be a number): ASCII decimal notation, else the text, which
    validation refuses (an attack: a CSV's ``mfu`` 0.5 and ``tpot_ms`` were refused as text)."""
    if column not in _DECIMAL_COLUMNS or not isinstance(text, str) or not text.strip().isascii():
        return text
    try:
        return float(text)
    except ValueError:
        return text


def _spec_name(model: str, models: dict[str, str], folder: Path) -> str:
    target = models.get(model, model)
    return str(folder / target) if target.endswith((".yaml", ".yml", ".json")) else target


def load_measurements(paths: Sequence[Path], *, with_excluded: bool = False) -> list[Measurement]:
    """The rows with a measured time of the files (rows without one, e.g. MFU-only, are skipped;
    ``excluded`` rows too unless ``with_excluded``), each with its source, engine version and
    family; SpecError naming the file, row and field for an invalid one."""
    from pydantic import ValidationError

    out = []
    known: set[tuple[str, str]] = set()  # (field, name) resolved already
    for path in paths:
        rows, models, fields = _rows_of(path)
        if len(rows) > MAX_CALIBRATION_ROWS:
            raise InputError(
                f"{shown(path)}: {len(rows):,} rows; a file holds at most {MAX_CALIBRATION_ROWS:,}: give a sample of the configurations"
            )
        folder = real_path(path, _WHAT).parent
        for i, row in enumerate(rows):
            if row.get("measured_ms") in (None, ""):
                continue
            own = {k: row[k] for k in ("engine",) if isinstance(row.get(k), str) and row[k].strip()}
            try:
                m = validated(Measurement, row | fields | own | {"file": path.name})
            except ValidationError as exc:
                raise SpecError(validation_message(path, exc).replace("invalid spec", f"row {i + 1}")) from None
            if fields["engine"] and not _VERSION.search(m.engine):
                raise SpecError(
                    f"{shown(path)}: row {i + 1}: field engine: {shown(m.engine, 60)!r} names no version (e.g. "
                    "'vLLM 0.21.0', a build number or commit); give it in the file's or the row's engine"
                )
            if m.excluded is None or with_excluded:
                m = replace(m, spec=_spec_name(m.model, models, folder))
                _check_names(path, i, m, known)
                out.append(m)
    if not paths:
        raise InputError("measurements: give at least one measurement file", fields=("measurements",))
    if not out:
        raise InputError(f"{', '.join(shown(p) for p in paths)}: no rows with measured_ms")
    return out


def _check_names(path: Path, i: int, m: Measurement, known: set[tuple[str, str]]) -> None:
    """SpecError naming the file, the row and the field when a row's GPU does not resolve (an
    attack: "unknown GPU 'h999'" named neither), each GPU resolved once (``known``); a row's model
    is resolved where its step is built (:func:`steps_of`), which names the file and row too."""
    from llm_cost.specs.load import load_gpu

    if ("gpu", m.gpu) in known:
        return
    try:
        load_gpu(m.gpu)
    except (InputError, SpecError) as exc:
        raise SpecError(f"{shown(path)}: row {i + 1}: field gpu: {exc}") from None
    known.add(("gpu", m.gpu))


def _model_of(m: Measurement) -> ModelSpec:
    """The spec a row's model names, or SpecError naming the row's file, id and ``model`` (an
    attack: "unknown model 'nosuchspec'" named neither; an id missing from the file's models
    went to the Hub)."""
    try:
        return load_model(m.spec)
    except (InputError, SpecError) as exc:
        raise SpecError(
            f"{m.file}: row {m.id!r}: field model: {exc}; map the row's model to an llm-cost model name or spec path "
            "in the file's models"
        ) from None


def _measured(m: Measurement) -> tuple:
    """What a row says but its model: the step (GPU, phase, sizes, dtypes, layout) and its time."""
    return (m.gpu.lower(), m.phase, m.batch, m.context, m.tp, m.weights_dtype, m.group_size, m.kv_dtype,
            m.compute_dtype, m.prefill_tokens, m.prefill_cached, m.measured_ms)  # fmt: skip


#: A spec's fields that name it, not its shapes: two specs alike but for these are one model.
_NAMING = frozenset({"name", "display_name", "aliases", "source"})


def _same_model(a: str, b: str) -> bool:
    """Whether two rows' models are one model, whatever the rows call it or its spec calls itself
    (a YAML file's Hub id mapped to a config.json, a CSV file's shipped name, a renamed copy of a
    spec: a second attacker's pairs had passed as two measurements); a model that does not load is
    its name (refused where the row's model is checked)."""
    if a == b:
        return True
    try:
        return _shapes(load_model(a)) == _shapes(load_model(b))
    except (InputError, SpecError):
        return False


def _shapes(spec: ModelSpec) -> tuple:
    """A spec's fields but those that name it (:data:`_NAMING`)."""
    import dataclasses

    return tuple(repr(getattr(spec, f.name)) for f in dataclasses.fields(spec) if f.name not in _NAMING)


def _gpu_name(gpu: str) -> str:
    """The name of the GPU spec ``gpu`` resolves to (a row's alias or case), or ``gpu`` itself."""
    from llm_cost.specs.load import load_gpu

    try:
        return load_gpu(gpu).name
    except (InputError, SpecError):
        return gpu.lower()


def check_distinct(rows: list[Measurement]) -> None:
    """InputError naming the first rows that share an id, or that repeat one another (the same
    step, the same time: a copied row weighs twice in a fit and hides its error held out). Models
    are compared as specs only between rows alike in everything else (rare: a fit's rows load no
    model here)."""
    ids: set[str] = set()
    seen: dict[tuple, list[Measurement]] = {}
    gpus: dict[str, str] = {}  # each row's GPU as its spec names it (an alias, another case: one GPU)
    for m in rows:
        if m.id in ids:
            raise InputError(f"{m.file}: row id {m.id!r} is given to two rows; give each row its own id")
        if m.gpu not in gpus:
            gpus[m.gpu] = _gpu_name(m.gpu)
        alike = seen.setdefault((gpus[m.gpu], *_measured(m)[1:]), [])
        twin = next((t for t in alike if _same_model(t.spec, m.spec)), None)
        if twin is not None:  # the files named: the second attacker's message named rows only
            raise InputError(
                f"{twin.file}: row {twin.id!r} and {m.file}: row {m.id!r} repeat one measurement (the same step "
                "and time); keep one"
            )
        ids.add(m.id)
        alike.append(m)


def category(m: Measurement) -> str:
    """The row's category in error tables: phase, batch 1 or more, weight format, TP."""
    parts: list[str] = [m.phase.value]
    if m.phase == Phase.DECODE:
        parts.append("batch 1" if m.batch == 1 else "batch > 1")
    if m.weights_dtype in ("int8", "int4"):
        parts.append(f"{m.weights_dtype} weight-only")
    if m.tp > 1:
        parts.append("TP > 1")
    return ", ".join(parts)


def step_of(m: Measurement, spec: ModelSpec | None = None) -> Step:
    """The step a measurement timed: its model (``spec``, else loaded from the row), layout,
    weight bits and dtypes. InputError naming the row and its field (``tp``, not an argument) for a
    layout the model cannot take."""
    try:
        return _step(m, spec or load_model(m.spec))
    except InputError as exc:
        if not exc.fields:
            raise
        raise InputError(f"row {m.id!r}: field {exc}") from None


def steps_of(rows: Sequence[Measurement]) -> list[Step]:
    """:func:`step_of` of each row, each model the rows name loaded once."""
    specs: dict[str, ModelSpec] = {}
    return [step_of(m, specs.get(m.spec) or specs.setdefault(m.spec, _model_of(m))) for m in rows]


def _step(m: Measurement, spec: ModelSpec) -> Step:
    bits = stored_weight_bits(m.weights_dtype, m.group_size)
    compute = (
        Dtype(m.compute_dtype)
        if m.compute_dtype
        else (Dtype.FP16 if "fp16" in (m.weights_dtype, m.kv_dtype) else Dtype.BF16)
    )
    if m.group_size is not None:  # as --group-size is checked (an attacker's rows of group 7 were taken)
        kept = compute if compute in (Dtype.BF16, Dtype.FP16) else Dtype.BF16
        check_group_divides(spec, WeightFormat(m.weights_dtype), m.group_size, kept, False)
    groups = decode(m.batch, m.context) if m.phase == Phase.DECODE else prefill(m.batch, m.context)
    if m.prefill_tokens:  # a prompt chunk computed in the same step (chunked prefill under load)
        groups = [*groups, SeqGroup(1, m.prefill_tokens, m.prefill_cached)]
    return build_step(
        spec,
        groups,
        layout=Layout(tp=m.tp),
        weight_bits=bits,
        kv_bits=DTYPE_BITS[Dtype(m.kv_dtype)],
        compute_dtype=compute,
    )


def engine_of_files(paths: Sequence[Path]) -> Optional[Engine]:
    """The engine family the measurement files declare (their ``engine_family``), or None when
    none does; InputError when they declare two."""
    found = {m.engine_family for m in load_measurements(paths) if m.engine_family is not None}
    if len(found) > 1:
        raise InputError(
            f"the files declare engines {', '.join(sorted(e.value for e in found))}: a profile is for one engine"
        )
    return next(iter(found), None)
