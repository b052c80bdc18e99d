"""Hugging Face model ids as MODEL (llm_cost.specs.hub), against a Hub cache built in a temporary
folder. Nothing here touches the network: conftest sets HF_HUB_OFFLINE=1 for every test, and the
failure cases raise the huggingface_hub errors from a stand-in for the download. The id used,
NousResearch/Meta-Llama-3.1-8B (a re-upload of Llama-3.1-8B with its config.json), is not in the
offline catalog (llm_cost.specs.catalog), which answers meta-llama/Llama-3.1-8B before the Hub."""

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
    root = _cache(tmp_path / "hub", "NousResearch/Meta-Llama-3.1-8B", FIXTURES / "llama-3.1-8b" / "config.json")
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    return root


def test_cached_id_loads_offline(llama_cache):
    """NousResearch/Meta-Llama-3.1-8B from the cache: the checkpoint's 8,030,261,248 (CHECKPOINTS.yaml)."""
    spec = load_model("NousResearch/Meta-Llama-3.1-8B")
    assert count_params(spec).total_params == 8_030_261_248
    assert (spec.name, spec.display_name) == ("meta-llama-3.1-8b", "NousResearch/Meta-Llama-3.1-8B")
    assert spec.source.url == "https://huggingface.co/NousResearch/Meta-Llama-3.1-8B/blob/main/config.json"


def test_revision_selects_the_snapshot(llama_cache):
    _cache(llama_cache, "Qwen/Qwen2.5-7B", FIXTURES / "qwen2.5-7b" / "config.json", commit="a" * 40)
    assert count_params(load_model(f"Qwen/Qwen2.5-7B@{'a' * 40}")).total_params == 7_615_616_512
    with pytest.raises(SpecError, match=r"Qwen/Qwen2.5-7B@v9: HF_HUB_OFFLINE is set and config.json is not in"):
        load_model("Qwen/Qwen2.5-7B@v9")


def test_hf_home_locates_the_cache(tmp_path, monkeypatch):
    _cache(tmp_path / "home" / "hub", "NousResearch/Meta-Llama-3.1-8B", FIXTURES / "llama-3.1-8b" / "config.json")
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub.cache_dir() == tmp_path / "home" / "hub"
    assert load_model("NousResearch/Meta-Llama-3.1-8B").name == "meta-llama-3.1-8b"


def test_cli_params_from_the_cache(cli, llama_cache):
    r = cli("params", "NousResearch/Meta-Llama-3.1-8B", "--json")
    assert r.code == 0 and r.json()["total_params"] == 8_030_261_248
    r = cli("params", "NousResearch/Meta-Llama-3.1-8B", "--json", "--verbose")
    assert r.code == 0 and "a shipped or YAML spec" not in r.err


def test_offline_and_not_cached_is_one_line(cli):
    r = cli("params", "NousResearch/Meta-Llama-3.1-8B")
    assert r.code == 2 and r.out == ""
    assert r.err.strip().count("\n") == 0
    assert (
        "NousResearch/Meta-Llama-3.1-8B: HF_HUB_OFFLINE is set and config.json is not in the Hugging Face cache"
        in r.err
    )


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
        ("NousResearch/Meta-Llama-3.1-8B", ("NousResearch/Meta-Llama-3.1-8B", None)),
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


# -- checkpoint headers from the Hub, served by a local fake ------------------------------------------


class _RangeServer:
    """A local HTTP server for ``/ORG/NAME/resolve/REV/FILE`` that answers only range requests
    (206 with Content-Range) from the files of ``folder`` and records every range asked."""

    def __init__(self, folder: Path):
        import http.server
        import threading

        self.ranges: list[tuple[str, int, int]] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the http.server name)
                name = self.path.rsplit("/", 1)[-1]
                path = folder / name
                spec = self.headers.get("Range", "")
                if not path.is_file() or not spec.startswith("bytes="):
                    self.send_response(404 if not path.is_file() else 400)
                    self.end_headers()
                    return
                first, last = (int(x) for x in spec.removeprefix("bytes=").split("-"))
                data = path.read_bytes()
                server.ranges.append((name, first, last))
                body = data[first : last + 1]
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {first}-{first + len(body) - 1}/{len(data)}")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _tiny_llama_checkpoint(folder: Path) -> dict:
    """A two-shard Llama checkpoint (the names LlamaForCausalLM saves) and its config."""
    np = pytest.importorskip("numpy")
    st = pytest.importorskip("safetensors.numpy")
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": 64,
        "hidden_size": 16,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 32,
        "max_position_embeddings": 128,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }
    f16 = np.float16
    t = {"model.embed_tokens.weight": np.ones((64, 16), f16), "model.norm.weight": np.ones(16, f16)}
    t["lm_head.weight"] = np.ones((64, 16), f16)
    for i in range(2):
        for name, shape in (
            ("self_attn.q_proj", (16, 16)),
            ("self_attn.k_proj", (8, 16)),
            ("self_attn.v_proj", (8, 16)),
            ("self_attn.o_proj", (16, 16)),
            ("mlp.gate_proj", (32, 16)),
            ("mlp.up_proj", (32, 16)),
            ("mlp.down_proj", (16, 32)),
        ):
            t[f"model.layers.{i}.{name}.weight"] = np.ones(shape, f16)
        t[f"model.layers.{i}.input_layernorm.weight"] = np.ones(16, f16)
        t[f"model.layers.{i}.post_attention_layernorm.weight"] = np.ones(16, f16)
    folder.mkdir(parents=True)
    names = sorted(t)
    weight_map = {}
    for k in range(2):
        part = {n: t[n] for n in names[k::2]}
        fname = f"model-{k + 1:05d}-of-00002.safetensors"
        st.save_file(part, str(folder / fname))
        weight_map.update(dict.fromkeys(part, fname))
    (folder / "config.json").write_text(json.dumps(config))
    index = {"metadata": {"total_size": sum(a.nbytes for a in t.values())}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return t


@pytest.fixture
def hub_fake(tmp_path, monkeypatch):
    """ORG/tiny-llama online: config.json and the index through a stand-in for the cached
    download, the shards from a local range server at HF_ENDPOINT."""
    folder = tmp_path / "repo"
    tensors = _tiny_llama_checkpoint(folder)
    server = _RangeServer(folder)
    asked: list[str] = []

    def download(repo, rev, local_only, filename="config.json"):
        asked.append(filename)
        return folder / filename

    import huggingface_hub.constants

    monkeypatch.setattr(hub, "_download", download)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "is_offline_mode", lambda: False)
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    yield folder, tensors, server, asked
    server.close()


def test_params_of_a_hub_id_reads_the_shard_headers_only(hub_fake):
    """``params ORG/NAME`` online: the stored tensors by role from the two shards' headers, equal to
    the arrays written (2 x 64 x 16 + 16 + 2 x (256 + 2 x 128 + 256 + 3 x 512 + 32) = 6,736), and every
    byte range asked ends inside a header: no weight byte is requested."""
    from llm_cost.api.model import params
    from llm_cost.specs.checkpoint import read_safetensors_header

    folder, tensors, server, asked = hub_fake
    r = params("ORG/tiny-llama")
    c = r.checkpoint
    written = sum(a.size for a in tensors.values())
    assert c is not None and c.stored_params == c.described_params == r.total_params == written == 6_736
    assert c.files == 2 and c.unexplained == [] and c.missing == []
    assert asked == ["config.json", "model.safetensors.index.json"]
    for name in {n for n, _, _ in server.ranges}:
        head = (folder / name).read_bytes()[:8]
        header_end = 8 + int.from_bytes(head, "little")  # the first weight byte's offset
        assert read_safetensors_header(folder / name)  # a real shard, with weights after its header
        assert (folder / name).stat().st_size > header_end
        assert all(last < header_end for n, _, last in server.ranges if n == name)
    assert sorted(server.ranges) == sorted(
        [(n, 0, 7) for n in {n for n, _, _ in server.ranges}]
        + [
            (n, 8, 8 + int.from_bytes((folder / n).read_bytes()[:8], "little") - 1)
            for n in {x for x, _, _ in server.ranges}
        ]
    )


def test_hub_headers_are_not_read_offline(hub_fake, monkeypatch):
    from llm_cost.api.model import params

    _, _, server, asked = hub_fake
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = params("ORG/tiny-llama")
    assert r.checkpoint is None and server.ranges == [] and asked == ["config.json"]


def test_a_server_that_ignores_the_range_is_refused(hub_fake, monkeypatch):
    """A server answering 200 with the whole file would send the weights: refused, one line."""
    _, _, server, _ = hub_fake

    def whole(url, first, last):
        raise SpecError(f"{url}: the server did not answer the range request for bytes {first}-{last} with them alone")

    monkeypatch.setattr(hub, "_ranged", whole)
    with pytest.raises(SpecError, match=r"did not answer the range request for bytes 0-7"):
        hub.hub_checkpoint("ORG/tiny-llama")


def test_the_header_timeout_is_short_and_stated():
    assert hub.HEADER_TIMEOUT_S == 10.0 and "10 s" in hub.hub_checkpoint.__doc__


def test_a_hub_id_that_cannot_be_fetched_names_the_shipped_model_of_its_repo():
    """The ids ``serve --emit`` prints for shipped models (their specs' source repos) were refused
    offline with no word of the shipped spec (an attacker: meta-llama/Meta-Llama-3-8B,
    deepseek-ai/DeepSeek-V3); the refusal now names it, any case, with or without a revision. An id
    of no shipped model keeps its one line."""
    from llm_cost.core.errors import SpecError
    from llm_cost.specs.load import load_model, shipped_of_repo

    assert shipped_of_repo("Meta-Llama/meta-llama-3-8b@main") == "llama3-8b"
    assert shipped_of_repo("deepseek-ai/DeepSeek-V3") == "deepseek-v3" and shipped_of_repo("foo/bar") is None
    with pytest.raises(SpecError) as refused:
        load_model("meta-llama/Meta-Llama-3-8B")
    assert str(refused.value).endswith("; or give llama3-8b, the shipped spec of this repo's model")
    with pytest.raises(SpecError) as other:
        load_model("foo/bar-no-such-model")
    assert "shipped spec" not in str(other.value) and "catalog" not in str(other.value)
    with pytest.raises(SpecError) as catalogued:  # a catalog id with a revision is a Hub id: it names the copy
        load_model("meta-llama/Llama-3.1-70B-Instruct@main")
    assert str(catalogued.value).endswith("; or give llama3.1-70b-instruct, the offline catalog's copy of its config")
