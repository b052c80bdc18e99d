"""Hugging Face model ids as MODEL: ``org/name`` or ``org/name@revision`` -> its config.json -> a spec.

The config is fetched with ``huggingface_hub`` (the optional extra ``pip install 'llm-cost[hub]'``,
imported only when MODEL is such an id), cache first: a config already in the local Hugging Face
cache is read without touching the network. Online, the Hub has :data:`HUB_TIMEOUT_S` seconds to
answer one request for the file's metadata, with no retries, so an unreachable Hub fails in a few
seconds (huggingface_hub alone retries for up to a minute). The usual environment is honoured:
``HF_HUB_OFFLINE`` (never go online; a value that is neither true nor false, such as ``maybe``,
is refused rather than read as false and online as huggingface_hub reads it), ``HF_TOKEN`` (gated and private repos) and the cache location (``HF_HUB_CACHE``,
else ``HF_HOME``/hub, else ``XDG_CACHE_HOME``/huggingface/hub, else ~/.cache/huggingface/hub). The
variables are read when MODEL is resolved, not when huggingface_hub was imported.

Which MODEL is an id: a plain shipped name never contains "/", but a relative path such as
``models/x.yaml`` does, so an existing path always wins; otherwise text of the form ``org/name``
(letters, digits, ``-``, ``_``, ``.``; optional ``@revision``) that does not end in a spec or
checkpoint suffix is an id. Every failure is a one-line :class:`SpecError` (exit code 2) that says
what to do: install the extra, go online or pre-fetch, log in for a gated repo, check the name.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Optional

from llm_cost.core.errors import SpecError
from llm_cost.specs.files import shown

__all__ = [
    "is_hub_id",
    "parse_hub_id",
    "cache_dir",
    "offline",
    "config_path",
    "load_hub_model",
    "hub_checkpoint",
    "HEADER_TIMEOUT_S",
]

_HUB_ID = re.compile(
    r"(?P<repo>[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95})"
    r"(?:@(?P<rev>[A-Za-z0-9_./-]{1,255}))?"
)
_FILE_SUFFIXES = (".yaml", ".yml", ".json", ".gguf", ".safetensors")
_TRUE = {"1", "on", "yes", "true"}
_FALSE = {"", "0", "off", "no", "false"}
#: Seconds the Hub has to answer (connect and respond), once.
HUB_TIMEOUT_S = 3.0


def parse_hub_id(text: str) -> Optional[tuple[str, Optional[str]]]:
    """``(repo_id, revision or None)`` when ``text`` has the form of a Hub model id, else None."""
    m = _HUB_ID.fullmatch(text.strip())
    if not m or ".." in m.group("repo") or m.group("repo").lower().endswith(_FILE_SUFFIXES):
        return None
    return m.group("repo"), m.group("rev")


def is_hub_id(text: str) -> bool:
    """True when MODEL should be resolved on the Hub: an id that is not an existing path (nor a
    symbolic link, broken or looping: the path's own error says what is wrong with it)."""
    return parse_hub_id(text) is not None and not os.path.lexists(text)


def _cache_variable() -> str:
    """The environment variable that names the cache folder (for messages)."""
    for name in ("HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        if os.environ.get(name):
            return name
    return "the default cache folder"


def cache_dir() -> Path:
    """The Hugging Face hub cache folder the environment names (read now, not at import).
    SpecError naming the variable when the system cannot use it as a folder: a loop of symbolic
    links (huggingface_hub fails on it with a RuntimeError), a file, a path it refuses; a folder
    that does not exist yet is an empty cache."""
    if os.environ.get("HF_HUB_CACHE"):
        folder = Path(os.environ["HF_HUB_CACHE"]).expanduser()
    elif os.environ.get("HF_HOME"):
        folder = Path(os.environ["HF_HOME"]).expanduser() / "hub"
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        folder = Path(base).expanduser() / "huggingface" / "hub"
    try:
        mode = os.stat(folder).st_mode
    except FileNotFoundError:  # not made yet: an empty cache
        return folder
    except (OSError, ValueError) as exc:  # a loop of links (ELOOP), a file as a folder, a NUL character
        why = getattr(exc, "strerror", None) or "not a path the system accepts"
        raise SpecError(
            f"{_cache_variable()}: the Hugging Face cache folder {shown(folder)} cannot be used ({why}); point it "
            "at a folder"
        ) from None
    if not stat.S_ISDIR(mode):
        raise SpecError(f"{_cache_variable()}: the Hugging Face cache {shown(folder)} is not a folder; point it at one")
    return folder


def offline() -> bool:
    """HF_HUB_OFFLINE is set to a true value; SpecError for a value neither true nor false."""
    value = os.environ.get("HF_HUB_OFFLINE", "").strip().lower()
    if value not in _TRUE | _FALSE:
        raise SpecError(
            f"HF_HUB_OFFLINE={shown(value, 20)!r} is neither true (1, on, yes, true) nor false (0, off, no, false); "
            "huggingface_hub would read it as false and go online"
        )
    return value in _TRUE


def _shown(repo: str, rev: Optional[str]) -> str:
    return f"{repo}@{rev}" if rev else repo


def _token() -> Optional[str]:
    return os.environ.get("HF_TOKEN") or None  # None: the stored login (hf auth login), if any


def _download(repo: str, rev: Optional[str], local_only: bool, filename: str = "config.json") -> Path:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # its retry warnings would break the one-line error
    try:
        if not local_only:  # one request with a short timeout: hf_hub_download would retry for a minute
            from huggingface_hub import get_hf_file_metadata, hf_hub_url

            get_hf_file_metadata(hf_hub_url(repo, filename, revision=rev), token=_token(), timeout=HUB_TIMEOUT_S)
        return Path(
            hf_hub_download(
                repo,
                filename,
                revision=rev,
                cache_dir=str(cache_dir()),
                token=_token(),
                local_files_only=local_only,
                etag_timeout=HUB_TIMEOUT_S,
            )
        )
    finally:
        hf_logging.set_verbosity(level)


def hf_repo_id(url: str | None) -> str | None:
    """The Hugging Face repo id (``meta-llama/Meta-Llama-3-70B``) of a spec's source URL on
    huggingface.co, else None."""
    if not url or "huggingface.co/" not in url:
        return None
    parts = url.split("huggingface.co/", 1)[1].split("?")[0].split("/")
    if len(parts) < 2 or not parts[0] or not parts[1] or parts[0] in ("api", "datasets", "spaces"):
        return None
    return f"{parts[0]}/{parts[1]}"


def _error(model_id: str, exc: Exception) -> SpecError:
    """One line for a failed Hub lookup, naming the id and what would fix it."""
    from huggingface_hub import errors

    status = getattr(getattr(exc, "response", None), "status_code", None)
    login = "log in with `hf auth login` or set HF_TOKEN"
    if isinstance(exc, errors.GatedRepoError) or status == 403:
        return SpecError(f"{model_id}: the repository is gated; accept its terms on huggingface.co, then {login}")
    if isinstance(exc, errors.RevisionNotFoundError):
        return SpecError(
            f"{model_id}: no such revision on the Hugging Face Hub (give a branch, tag or commit after '@')"
        )
    if isinstance(exc, errors.RepositoryNotFoundError) or status == 401:
        return SpecError(f"{model_id}: no such model on the Hugging Face Hub (or it is private: {login})")
    if isinstance(exc, errors.LocalEntryNotFoundError):  # before EntryNotFoundError, its base class
        return SpecError(
            f"{model_id}: config.json is not in the Hugging Face cache ({cache_dir()}) and the Hub "
            "cannot be reached; connect once, or copy the model's config.json and give its path"
        )
    if isinstance(exc, (errors.RemoteEntryNotFoundError, errors.EntryNotFoundError)) or status == 404:
        return SpecError(
            f"{model_id}: the repository has no config.json (a GGUF-only repo? download the .gguf and give its path)"
        )
    kind = type(exc).__name__
    if "timeout" in kind.lower() or "connect" in kind.lower():
        why = f"did not answer within {HUB_TIMEOUT_S:g} s" if "timeout" in kind.lower() else "cannot be reached"
        return SpecError(
            f"{model_id}: the Hugging Face Hub {why} ({kind}); connect, or copy the model's config.json and give "
            "its path"
        )
    return SpecError(
        f"{model_id}: the Hugging Face Hub lookup failed ({type(exc).__name__}: "
        f"{str(exc).splitlines()[0] if str(exc) else 'no detail'})"
    )


def _check_cache_links(model_id: str, repo: str) -> None:
    """SpecError when a cached snapshot's config.json of ``repo`` is a link that does not resolve
    (a loop, or a missing blob): huggingface_hub takes it as absent and would replace it."""
    snapshots = cache_dir() / f"models--{repo.replace('/', '--')}" / "snapshots"
    links = [d / "config.json" for d in sorted(snapshots.iterdir())] if snapshots.is_dir() else []
    for link in (p for p in links if p.is_symlink()):
        try:
            os.path.realpath(link, strict=True)
        except OSError as exc:
            raise SpecError(
                f"{model_id}: the Hugging Face cache's {shown(link)} cannot be read ({exc.strerror}); delete that "
                "snapshot folder and fetch it again"
            ) from None


def config_path(model_id: str) -> Path:
    """The local path of ``model_id``'s config.json: from the cache, else downloaded (unless offline).

    SpecError (one line) when huggingface_hub is missing, the id is malformed, the config is not
    cached while offline, the repo is gated, private or absent, or has no config.json."""
    parsed = parse_hub_id(model_id)
    if parsed is None:
        raise SpecError(f"{model_id!r} is not a Hugging Face model id (expected org/name or org/name@revision)")
    repo, rev = parsed
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        raise SpecError(
            f"{model_id}: looks like a Hugging Face model id; resolving it needs huggingface_hub: "
            "pip install 'llm-cost[hub]' (or give the path of its config.json)"
        ) from None
    from huggingface_hub import errors

    cache_dir()  # a cache the system cannot use is named here, not inside huggingface_hub
    try:
        return _download(repo, rev, local_only=True)
    except errors.LocalEntryNotFoundError:
        _check_cache_links(model_id, repo)
        if offline():
            raise SpecError(
                f"{model_id}: HF_HUB_OFFLINE is set and config.json is not in the Hugging Face cache "
                f"({cache_dir()}); unset HF_HUB_OFFLINE once, or give the path of a config.json"
            ) from None
    except (errors.HFValidationError, ValueError) as exc:
        raise SpecError(f"{model_id}: not a valid Hugging Face model id ({str(exc).splitlines()[0]})") from None
    except OSError as exc:
        raise _error(model_id, exc) from None
    try:
        return _download(repo, rev, local_only=False)
    except (errors.HFValidationError, ValueError) as exc:
        raise SpecError(f"{model_id}: not a valid Hugging Face model id ({str(exc).splitlines()[0]})") from None
    except Exception as exc:  # network and HTTP errors of any kind become one line
        raise _error(model_id, exc) from None


def load_hub_model(model_id: str, verbose: bool = False):
    """The :class:`ModelSpec` of a Hub model id (``(spec, defaults)`` with ``verbose``); the spec is
    named after the repo (``meta-llama/Llama-3.1-8B`` -> ``llama-3.1-8b``) and displayed as the id."""
    from llm_cost.specs.hf import load_hf_config_verbose

    parsed = parse_hub_id(model_id)
    path = config_path(model_id)
    assert parsed is not None
    repo, rev = parsed
    name = re.sub(r"\s+", "-", repo.split("/", 1)[1]).lower()
    url = f"https://huggingface.co/{repo}/blob/{rev or 'main'}/config.json"
    spec, defaults = load_hf_config_verbose(path, name=name, source=url, display_name=_shown(repo, rev))
    return (spec, defaults) if verbose else spec


# -- checkpoint headers -------------------------------------------------------------------------------

#: Seconds each Hub request for a checkpoint header may take (connect and read), before the lookup
#: gives up with a one-line error: headers are a few kilobytes, so a longer wait is a dead link.
HEADER_TIMEOUT_S = 10.0
_INDEX = "model.safetensors.index.json"
_SINGLE = "model.safetensors"


def _endpoint() -> str:
    """The Hub's address: HF_ENDPOINT (read now, not at import) or huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def _ranged(url: str, first: int, last: int) -> tuple[bytes, int]:
    """Bytes ``first``..``last`` (inclusive) of the file at ``url`` by one HTTP range request, and
    the file's size from the Content-Range answer. SpecError when the server sends more than asked
    (it ignored the range: the weights would follow) or no size."""
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    headers = {**build_hf_headers(token=_token()), "Range": f"bytes={first}-{last}"}
    response = get_session().get(url, headers=headers, timeout=HEADER_TIMEOUT_S)
    hf_raise_for_status(response)
    body = response.content
    total = str(response.headers.get("Content-Range", "")).rpartition("/")[2]
    if response.status_code != 206 or len(body) > last - first + 1 or not total.isdigit():
        raise SpecError(f"{url}: the server did not answer the range request for bytes {first}-{last} with them alone")
    return body, int(total)


def _shard_header(repo: str, rev: Optional[str], filename: str) -> list:
    """The tensors of one shard on the Hub, from two range requests: its first 8 bytes (the header
    length N), then bytes 8 .. 8 + N - 1 (the header). No byte past the header is requested."""
    from llm_cost.specs.checkpoint import header_length, parse_safetensors_header

    url = f"{_endpoint()}/{repo}/resolve/{rev or 'main'}/{filename}"
    shown = Path(f"{repo}/{filename}")
    head, size = _ranged(url, 0, 7)
    n = header_length(shown, head, size)
    raw, _ = _ranged(url, 8, 8 + n - 1)
    return parse_safetensors_header(shown, raw, size)


def hub_checkpoint(model_id: str):
    """The stored tensors of a Hub model's safetensors checkpoint, read from the shard headers
    only: the index ``model.safetensors.index.json`` (else the one ``model.safetensors``) through
    the cache, then each shard's 8-byte length and its header by HTTP range requests, eight shards
    at a time (huggingface_hub's session; HF_TOKEN and HF_ENDPOINT honoured; each request 10 s at
    most, :data:`HEADER_TIMEOUT_S`). No weight byte is requested. None when HF_HUB_OFFLINE is set
    (as before: the config alone is read offline), when huggingface_hub is not installed (a
    catalogued id's config needs no Hub, so neither do its counts) or the repository has no
    safetensors files; a one-line SpecError when the Hub fails or a header is malformed."""
    import json

    from llm_cost.specs.checkpoint import Checkpoint, StoredTensor, index_total_size

    parsed = parse_hub_id(model_id)
    if parsed is None or offline():
        return None
    repo, rev = parsed
    try:
        from huggingface_hub import errors
    except ImportError:
        return None

    try:
        try:
            index = json.loads(_download(repo, rev, local_only=False, filename=_INDEX).read_text(encoding="utf-8"))
            weight_map = index["weight_map"]
            files = sorted(set(weight_map.values()))
            total = index_total_size((index.get("metadata") or {}).get("total_size"), f"{model_id}: {_INDEX}")
        except (errors.RemoteEntryNotFoundError, errors.EntryNotFoundError):
            files, total = [_SINGLE], None
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(8, len(files))) as pool:  # 163 shards of DeepSeek-V3: 8 at a time
            headers = list(pool.map(lambda f: _shard_header(repo, rev, f), files))
        tensors: dict[str, StoredTensor] = {}
        for filename, stored in zip(files, headers):
            for t in stored:
                if t.name in tensors:
                    raise SpecError(f"{repo}/{filename}: tensor {t.name!r} is also in {tensors[t.name].file}")
                tensors[t.name] = t
    except SpecError:
        raise
    except (errors.RemoteEntryNotFoundError, errors.EntryNotFoundError):
        return None
    except (KeyError, TypeError, ValueError, AttributeError):
        raise SpecError(
            f"{model_id}: {_INDEX} on the Hub is not a safetensors index (a JSON object with a weight_map)"
        ) from None
    except Exception as exc:  # network and HTTP errors of any kind become one line
        raise _error(model_id, exc) from None
    index_total = total if isinstance(total, int) and not isinstance(total, bool) else None
    return Checkpoint(f"hf://{repo}", tuple(files), tuple(tensors.values()), index_total)
