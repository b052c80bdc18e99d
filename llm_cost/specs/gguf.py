"""GGUF files (llama.cpp) as MODEL: metadata -> a spec, tensor types -> exact bytes per quantisation.

Read with the ``gguf`` package (llama.cpp's own reader, the optional extra
``pip install 'llm-cost[checkpoints]'``; imported only for a ``.gguf`` MODEL). The reader maps the
file and parses its metadata and tensor infos; no weight is decoded. Metadata keys follow
llama.cpp's ``gguf-py/gguf/constants.py`` (``{arch}.block_count``, ``{arch}.embedding_length``,
``{arch}.feed_forward_length``, ``{arch}.attention.head_count`` / ``head_count_kv`` /
``key_length``, ``{arch}.rope.freq_base``, ``{arch}.context_length``, ``{arch}.expert_count`` /
``expert_used_count``); tensor names follow its ``MODEL_TENSOR`` table (``token_embd``,
``blk.N.attn_q``, ``ffn_gate_exps`` ...).

Architectures mapped: ``llama`` (which llama.cpp also uses for Mistral and Mixtral: with
``expert_count`` the FFN is a MoE), ``qwen2`` (q/k/v biases), ``qwen3`` (per-head q/k norms). The
LM head is tied when the file has no ``output.weight``; the vocabulary is the embedding's rows.
"""

from __future__ import annotations

import re
from dataclasses import field
from datetime import date
from pathlib import Path
from typing import Any

from llm_cost.core.errors import SpecError
from llm_cost.core.limits import MAX_LAYERS
from llm_cost.core.records import record

__all__ = ["GGUFTensor", "GGUFFile", "read_gguf", "gguf_to_spec", "load_gguf", "SUPPORTED_ARCHITECTURES"]

SUPPORTED_ARCHITECTURES = ("llama", "qwen2", "qwen3")


@record
class GGUFTensor:
    name: str
    type: str  # ggml type name: F16, Q8_0, Q4_K ...
    n_elements: int
    n_bytes: int
    shape: tuple[int, ...]  # ggml order (ne0 first)


@record
class GGUFFile:
    """Metadata and tensor infos of one GGUF file."""

    path: str
    architecture: str
    name: str | None
    metadata: dict[str, Any]
    tensors: tuple[GGUFTensor, ...]
    by_type: dict[str, list[int]] = field(default_factory=dict)  # type -> [tensors, elements, bytes]

    @property
    def n_elements(self) -> int:
        return sum(t.n_elements for t in self.tensors)

    @property
    def n_bytes(self) -> int:
        return sum(t.n_bytes for t in self.tensors)


def _value(field_: Any) -> Any:
    v = field_.contents()
    return v


def read_gguf(path: Path) -> GGUFFile:
    """Metadata and tensor infos of a GGUF file; SpecError (one line) if it cannot be read."""
    if not path.is_file():
        raise SpecError(f"{path}: no such file" if not path.exists() else f"{path}: not a regular file")
    try:
        from gguf import GGUFReader
    except ImportError:
        raise SpecError(
            f"{path}: reading GGUF files needs the gguf package: pip install 'llm-cost[checkpoints]'"
        ) from None
    try:
        reader = GGUFReader(str(path), "r")
    except Exception as exc:  # the reader raises ValueError, struct errors, OSError ...
        raise SpecError(f"{path}: not a readable GGUF file ({type(exc).__name__}: {str(exc)[:120]})") from None
    meta: dict[str, Any] = {}
    for key, f in reader.fields.items():
        if key.startswith("tokenizer.ggml.") and key not in ("tokenizer.ggml.model",):
            continue  # token lists are large and change no shape here
        try:
            meta[key] = _value(f)
        except Exception:  # an odd field type: leave it out, it is not one we read
            continue
    tensors = tuple(
        GGUFTensor(t.name, t.tensor_type.name, int(t.n_elements), int(t.n_bytes), tuple(int(s) for s in t.shape))
        for t in reader.tensors
    )
    by_type: dict[str, list[int]] = {}
    for t in tensors:
        row = by_type.setdefault(t.type, [0, 0, 0])
        row[0] += 1
        row[1] += t.n_elements
        row[2] += t.n_bytes
    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        raise SpecError(f"{path}: GGUF metadata has no general.architecture")
    name = meta.get("general.name")
    return GGUFFile(str(path), arch, name if isinstance(name, str) else None, meta, tensors, by_type)


def _int(g: GGUFFile, key: str, default: Any = None) -> int:
    v = g.metadata.get(key, default)
    if v is None:
        raise SpecError(f"{g.path}: GGUF metadata key {key} is required for architecture {g.architecture!r}")
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise SpecError(f"{g.path}: GGUF metadata key {key} must be a positive integer (got {v!r})")
    return v


def _dtype(g: GGUFFile) -> str:
    """The spec dtype nearest the file's dominant weight type (bytes are exact in the GGUF report)."""
    top = max(g.by_type.items(), key=lambda kv: kv[1][2])[0] if g.by_type else "F16"
    if top in ("F32", "F16", "BF16"):
        return {"F32": "fp32", "F16": "fp16", "BF16": "bf16"}[top]
    return "int8" if top.startswith(("Q8", "Q6", "Q5")) else "int4"


def _check_blocks(g: GGUFFile, a: str, names: dict[str, Any]) -> None:
    """SpecError naming both when ``{arch}.block_count`` disagrees with the blocks the tensors
    name (``blk.N.*``, N = 0 .. block_count - 1): a file whose metadata and tensors describe two
    models gives no count."""
    blocks = {int(m.group(1)) for n in names if (m := re.match(r"blk\.(\d+)\.", n))}
    count = _int(g, f"{a}.block_count")
    if count > MAX_LAYERS:  # before any list of its length is built (4,000,000,000 took 24 GB)
        raise SpecError(f"{g.path}: {a}.block_count is {count:,}; a model has 1 to {MAX_LAYERS:,} blocks")
    if blocks != set(range(count)):
        held = (
            f"blocks 0..{max(blocks)}" if blocks and blocks == set(range(max(blocks) + 1)) else f"{len(blocks)} blocks"
        )
        raise SpecError(
            f"{g.path}: {a}.block_count is {count}, but the tensors (blk.N.*) hold {held}; "
            "the metadata and the tensors describe different models"
        )


def _embedding(g: GGUFFile, a: str, names: dict[str, Any]) -> tuple[Any, int]:
    """(token_embd.weight, d) of a GGUF file of architecture ``a``; SpecError for an architecture
    not mapped, a file without the embedding, or an embedding that is not a whole number of rows of d."""
    if a not in SUPPORTED_ARCHITECTURES:
        raise SpecError(
            f"{g.path}: GGUF architecture {a!r} is not mapped; supported: {', '.join(SUPPORTED_ARCHITECTURES)}"
        )
    embd = names.get("token_embd.weight")
    if embd is None:
        raise SpecError(f"{g.path}: GGUF file has no token_embd.weight tensor")
    d = _int(g, f"{a}.embedding_length")
    if embd.n_elements % d or (embd.shape and embd.shape[0] != d):  # ggml order: ne0 is the row's width
        held = f"rows of {embd.shape[0]:,}" if embd.shape else f"{embd.n_elements:,} elements"
        raise SpecError(
            f"{g.path}: {a}.embedding_length is {d:,}, but token_embd.weight holds {held}; "
            "the metadata and the tensors describe different models"
        )
    return embd, d


def gguf_to_spec(g: GGUFFile):
    """The :class:`ModelSpec` a GGUF file describes (architectures in SUPPORTED_ARCHITECTURES)."""
    from pydantic import ValidationError

    from llm_cost.specs.files import validation_message
    from llm_cost.specs.schema import MLP, GQAAttention, ModelSpec, MoE, Source

    a = g.architecture
    names = {t.name: t for t in g.tensors}
    embd, d = _embedding(g, a, names)
    _check_blocks(g, a, names)
    n_q = _int(g, f"{a}.attention.head_count")
    n_kv = _int(g, f"{a}.attention.head_count_kv", n_q)
    head_dim = g.metadata.get(f"{a}.attention.key_length")
    experts = g.metadata.get(f"{a}.expert_count") or 0
    if experts and not any(n.endswith("_exps.weight") for n in names):
        raise SpecError(
            f"{g.path}: {a}.expert_count is {experts}, but no tensor holds experts (blk.N.ffn_*_exps); "
            "the metadata and the tensors describe different models"
        )
    ff = _int(g, f"{a}.feed_forward_length")
    bias = "blk.0.attn_q.bias" in names
    fields: dict[str, Any] = dict(
        vocab_size=embd.n_elements // d,
        hidden_size=d,
        num_hidden_layers=_int(g, f"{a}.block_count"),
        tie_word_embeddings="output.weight" not in names,
        max_position_embeddings=_int(g, f"{a}.context_length", 4096),
        rope_theta=float(g.metadata.get(f"{a}.rope.freq_base", 10000.0)),
        attention=GQAAttention(
            num_attention_heads=n_q,
            num_key_value_heads=n_kv,
            head_dim=head_dim if isinstance(head_dim, int) and head_dim > 0 else None,
            attention_bias=bias,
            qk_norm=a == "qwen3",
        ),
        torch_dtype=_dtype(g),
    )
    if experts:
        fields["moe"] = MoE(
            num_experts=experts, num_experts_per_tok=_int(g, f"{a}.expert_used_count"), moe_intermediate_size=ff
        )
    else:
        fields["mlp"] = MLP(intermediate_size=ff)
    stem = Path(g.path).stem
    try:  # the parts are validated with the whole, so a bad part's error names its field
        return ModelSpec.checked(
            name=stem.lower(),
            display_name=g.name or stem,
            model_type=a,
            source=Source(
                url=g.path,
                retrieved=date.today().isoformat(),
                note=f"Read from GGUF metadata (architecture {a}) by llm-cost.",
            ),
            **fields,
        )
    except ValidationError as exc:
        raise SpecError(validation_message(Path(g.path), exc)) from None


def load_gguf(path: Path):
    """``(ModelSpec, GGUFFile)`` of a .gguf path."""
    g = read_gguf(Path(path))
    return gguf_to_spec(g), g
