"""Pictures: each --plot writes an image of the expected size that is not blank; without
matplotlib, --plot is a one-line exit 2 saying how to install it."""

from __future__ import annotations

import sys

import pytest

mpimg = pytest.importorskip("matplotlib.image")

PLOTS = [
    ["roofline", "llama3-8b", "--gpu", "h100", "--batch", "64", "--context", "2K"],
    ["kv", "llama3-8b", "--context", "1K..128K", "--batch", "1,8", "--json"],
    ["fit", "llama3-8b", "--gpu", "h100", "--batch", "8"],
    ["moe", "deepseek-v3", "--batch", "1..256"],
    ["spec", "llama3-8b", "--gpu", "h100", "--alpha", "0.8", "--gamma", "4", "--c", "0.1", "--batch", "1..512"],
    ["serve", "llama3-8b", "--gpu", "h100", "--gpus", "2", "--input", "1K", "--output", "128", "--tpot", "30ms"],
    ["serve", "llama3-8b", "--tp", "1", "--qps", "8", "--requests", "200", "--ttft", "p99:200ms"],
    ["serve", "llama3-8b", "--gpu", "h100,a100", "--gpus", "1", "--requests", "50", "--usd-per-gpu-hour", "2.5,1.8"],
    ["serve", "llama3-8b", "--gpus", "2", "--input", "1K", "--output", "128", "--tpot", "30ms", "--analytic"],
]


@pytest.mark.parametrize("args", PLOTS, ids=lambda a: a[0])
def test_plot_is_an_image_that_is_not_blank(cli, tmp_path, args):
    path = tmp_path / "picture.png"
    r = cli(*args, "--plot", str(path))
    assert r.code == 0, r.err
    pixels = mpimg.imread(path)
    assert pixels.shape[:2] == (500, 800)
    assert pixels.std() > 0.05  # lines, points and text, not one flat colour
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []  # the figure is closed once drawn: a process drawing many keeps none


def test_without_matplotlib_plot_says_how_to_install(cli, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    r = cli("roofline", "llama3-8b", "--batch", "8", "--plot", str(tmp_path / "r.png"))
    assert r.code == 2 and "pip install 'llm-cost[plot]'" in r.err and len(r.err.splitlines()) == 1


def test_plot_needs_a_picture_file_name(cli, tmp_path):
    r = cli("moe", "mixtral-8x7b", "--plot", str(tmp_path / "m.pdf"))
    assert r.code == 2 and ".png or .svg" in r.err


def test_the_comparison_plot_draws_each_plans_band(monkeypatch, tmp_path):
    """GPUs side by side: each bar of $/M and of tokens/s per GPU carries an error bar from the
    band's low to its high figure (the fast end's and the slow end's runs)."""
    import llm_cost
    from llm_cost.report import plots

    r = llm_cost.serve_compare("llama3-8b", ["h100", "a100"], gpus=1, requests=50, usd_per_gpu_hour=[2.5, 1.8])
    drawn = {}
    monkeypatch.setattr(plots, "_save", lambda fig, out: drawn.setdefault("fig", fig))
    plots.comparison(r, "Llama-3-8B", str(tmp_path / "c.png"))
    left, right = drawn["fig"].axes
    for ax, value, low, high in (
        (
            left,
            "usd_per_million_output_tokens",
            "usd_per_million_output_tokens_low",
            "usd_per_million_output_tokens_high",
        ),
        (right, "output_tokens_per_s_per_gpu", "output_tokens_per_s_per_gpu_low", "output_tokens_per_s_per_gpu_high"),
    ):
        bars = next(c for c in ax.containers if hasattr(c, "errorbar"))
        ends = [seg[:, 1] for seg in bars.errorbar.lines[2][0].get_segments()]
        plans = [g.plan for g in r.plans]
        want = [v for p in plans for v in (getattr(p, low), getattr(p, high))]
        assert [float(v) for e in ends for v in e] == pytest.approx(want)
        assert [b.get_height() for b in bars] == pytest.approx([getattr(p, value) for p in plans])


def test_a_comparison_without_prices_draws_no_cost_panel(monkeypatch, tmp_path):
    """A new user's trial (F11): without --usd-per-gpu-hour the $ panel drew every GPU at $0 on an
    axis from -0.04 to 0.04 under "green: cheapest" with nothing green. Now only tokens/s is drawn,
    and the title says no price was given."""
    import llm_cost
    from llm_cost.report import plots

    r = llm_cost.serve_compare("llama3-8b", ["h100", "a100"], gpus=1, requests=50)
    drawn = {}
    monkeypatch.setattr(plots, "_save", lambda fig, out: drawn.setdefault("fig", fig))
    plots.comparison(r, "Llama-3-8B", str(tmp_path / "c.png"))
    (only,) = drawn["fig"].axes
    assert only.get_ylabel().startswith("output tokens/s per GPU")
    assert "no --usd-per-gpu-hour given" in drawn["fig"]._suptitle.get_text()


def test_a_plot_file_needs_a_name_before_its_suffix(cli, tmp_path):
    """``--plot .png`` said "'.png' must end in .png or .svg", which it does."""
    r = cli("moe", "mixtral-8x7b", "--plot", str(tmp_path / ".png"))
    assert r.code == 2 and "has an empty name before .png" in r.err and "must end in" not in r.err


def test_a_plot_without_matplotlib_is_refused_before_anything_is_computed(cli, tmp_path, monkeypatch):
    """An attacker: a plan without matplotlib installed computed for 12 s, then said "--plot needs
    matplotlib". The file's check, before anything is computed, now finds matplotlib missing too:
    a plan of 20,000 requests is refused as fast as a bad path is, and nothing is written."""
    import importlib.util

    import llm_cost.api

    def computed(*args, **kwargs):
        raise AssertionError("the plan was computed")

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    monkeypatch.setattr(llm_cost.api, "serve_request", computed)
    out = tmp_path / "cdf.png"
    r = cli("serve", "llama3-8b", "--tp", "1", "--qps", "5", "--requests", "20000", "--plot", str(out))
    assert r.code == 2 and r.err == "error: --plot needs matplotlib: pip install 'llm-cost[plot]'\n"
    assert not out.exists()
