"""Hugging Face model ids as MODEL (llm_cost.specs.hub), against a Hub cache built in a temporary
folder. Nothing here touches the network: conftest sets HF_HUB_OFFLINE=1 for every test, and the
failure cases raise the huggingface_hub errors from a stand-in for the download."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from llm_cost.core.errors import SpecError
from llm_cost.model.params import count_params
from llm_cost.specs import hub
from llm_cost.specs.load import load_model

pytest.importorskip("huggingface_hub")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf"
COMMIT = "0e9e39f249a16976918f6564b8830bc894c89659"


def _cache(root: Path, repo: str, config: Path, commit: str = COMMIT, ref: str = "main") -> Path:
    """A Hugging Face hub cache holding ``repo``'s config.json at ``commit`` (branch ``ref``)."""
    folder = root / f"models--{repo.replace('/', '--')}"
    snap = folder / "snapshots" / commit
    snap.mkdir(parents=True)
    shutil.copy(config, snap / "config.json")
    (folder / "refs").mkdir(exist_ok=True)
    (folder / "refs" / ref).write_text(commit)
    return root


@pytest.fixture
def llama_cache(tmp_path, monkeypatch):
    root = _cache(tmp_path / "hub", "meta-llama/Llama-3.1-8B", FIXTURES / "llama-3.1-8b" / "config.json")
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    return root


def test_cached_id_loads_offline(llama_cache):
    """meta-llama/Llama-3.1-8B from the cache: the checkpoint's 8,030,261,248 (CHECKPOINTS.yaml)."""
    spec = load_model("meta-llama/Llama-3.1-8B")
    assert count_params(spec).total_params == 8_030_261_248
    assert (spec.name, spec.display_name) == ("llama-3.1-8b", "meta-llama/Llama-3.1-8B")
    assert spec.source.url == "https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json"


def test_revision_selects_the_snapshot(llama_cache):
    _cache(llama_cache, "Qwen/Qwen2.5-7B", FIXTURES / "qwen2.5-7b" / "config.json", commit="a" * 40)
    assert count_params(load_model(f"Qwen/Qwen2.5-7B@{'a' * 40}")).total_params == 7_615_616_512
    with pytest.raises(SpecError, match=r"Qwen/Qwen2.5-7B@v9: HF_HUB_OFFLINE is set and config.json is not in"):
        load_model("Qwen/Qwen2.5-7B@v9")


def test_hf_home_locates_the_cache(tmp_path, monkeypatch):
    _cache(tmp_path / "home" / "hub", "meta-llama/Llama-3.1-8B", FIXTURES / "llama-3.1-8b" / "config.json")
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub.cache_dir() == tmp_path / "home" / "hub"
    assert load_model("meta-llama/Llama-3.1-8B").name == "llama-3.1-8b"


def test_cli_params_from_the_cache(cli, llama_cache):
    r = cli("params", "meta-llama/Llama-3.1-8B", "--json")
    assert r.code == 0 and r.json()["total_params"] == 8_030_261_248
    r = cli("params", "meta-llama/Llama-3.1-8B", "--json", "--verbose")
    assert r.code == 0 and "a shipped or YAML spec" not in r.err


def test_offline_and_not_cached_is_one_line(cli):
    r = cli("params", "meta-llama/Llama-3.1-8B")
    assert r.code == 2 and r.out == ""
    assert r.err.strip().count("\n") == 0
    assert "meta-llama/Llama-3.1-8B: HF_HUB_OFFLINE is set and config.json is not in the Hugging Face cache" in r.err


def test_existing_path_wins_over_an_id(tmp_path, monkeypatch):
    """A relative path with a slash that exists is a path, not an id; a missing .yaml stays a file error."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org" / "gemma").mkdir(parents=True)
    shutil.copy(FIXTURES / "gemma-2b" / "config.json", tmp_path / "org" / "gemma" / "config.json")
    assert count_params(load_model("org/gemma")).total_params == 2_506_172_416
    with pytest.raises(SpecError, match=r"models/x\.yaml: no such file"):
        load_model("models/x.yaml")


@pytest.mark.parametrize(
    "text,parsed",
    [
        ("meta-llama/Llama-3.1-8B", ("meta-llama/Llama-3.1-8B", None)),
        ("Qwen/Qwen3-8B@refs/pr/1", ("Qwen/Qwen3-8B", "refs/pr/1")),
        ("llama3-8b", None),
        ("a/b/c", None),
        ("org/spec.yaml", None),
        ("../x", None),
        ("org/..", None),
    ],
)
def test_id_pattern(text, parsed):
    assert hub.parse_hub_id(text) == parsed


def test_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(
        SpecError,
        match=r"org/model: looks like a Hugging Face model id; resolving it needs "
        r"huggingface_hub: pip install 'llm-cost\[hub\]'",
    ):
        load_model("org/model")


def _raising(exc):
    def download(repo, rev, local_only):
        from huggingface_hub import errors

        if local_only:
            raise errors.LocalEntryNotFoundError("not cached")
        raise exc

    return download


@pytest.mark.parametrize(
    "name,status,message",
    [
        (
            "GatedRepoError",
            403,
            r"org/model: the repository is gated; accept its terms on huggingface\.co, then log in "
            r"with `hf auth login` or set HF_TOKEN",
        ),
        (
            "RepositoryNotFoundError",
            401,
            r"org/model: no such model on the Hugging Face Hub \(or it is private: log in",
        ),
        ("RevisionNotFoundError", 404, r"org/model: no such revision"),
        ("RemoteEntryNotFoundError", 404, r"org/model: the repository has no config\.json"),
    ],
)
def test_hub_errors_are_one_line(monkeypatch, name, status, message):
    from huggingface_hub import errors

    cls = getattr(errors, name)
    exc = cls.__new__(cls)
    Exception.__init__(exc, f"{status} Client Error")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(hub, "_download", _raising(exc))
    with pytest.raises(SpecError, match=message) as info:
        load_model("org/model")
    assert "\n" not in str(info.value)


def test_unreachable_hub_not_cached(monkeypatch):
    from huggingface_hub import errors

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(hub, "_download", _raising(errors.LocalEntryNotFoundError("connection refused")))
    with pytest.raises(
        SpecError,
        match=r"org/model: config\.json is not in the Hugging Face cache .* cannot be "
        r"reached",
    ):
        load_model("org/model")


def test_token_is_passed_from_the_environment(monkeypatch, tmp_path):
    seen = {}

    def fake(repo_id, filename, **kw):
        seen.update(kw, repo_id=repo_id, filename=filename)
        path = tmp_path / "config.json"
        path.write_text(json.dumps(json.loads((FIXTURES / "gpt2" / "config.json").read_text())))
        return str(path)

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake)
    monkeypatch.setenv("HF_TOKEN", "hf_test_token_not_real")
    spec = load_model("openai-community/gpt2")
    assert seen["token"] == "hf_test_token_not_real" and seen["local_files_only"] is True
    assert seen["filename"] == "config.json" and count_params(spec).total_params == 124_439_808
