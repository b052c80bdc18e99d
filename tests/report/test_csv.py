"""CSV grids: one header line, one row per point, the JSON's keys as columns, exact integers."""

from __future__ import annotations

import csv
import io

import pytest


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_roofline_sweep_has_a_row_per_batch_and_the_json_values(cli):
    rows = _rows(cli("roofline", "llama3-8b", "--gpu", "h100", "--batch", "1..256", "--context", "2K", "--csv").out)
    assert [int(r["batch"]) for r in rows] == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    one = cli("roofline", "llama3-8b", "--gpu", "h100", "--batch", "64", "--context", "2K", "--json").json()
    row = next(r for r in rows if r["batch"] == "64")
    assert int(row["kv_read_bytes"]) == one["kv_read_bytes"] == 64 * 2048 * 131_072
    assert float(row["bound_s"]) == one["bound_s"] and row["layout_tp"] == "1"


def test_kv_grid_is_batch_by_context(cli):
    """128 KiB per token (seed 000 §七) x context x batch, for 8 contexts and 3 batches."""
    rows = _rows(cli("kv", "llama3-8b", "--context", "1K..128K", "--batch", "1,8,64", "--csv").out)
    assert len(rows) == 24
    assert all(int(r["total_bytes"]) == int(r["batch"]) * int(r["context"]) * 131_072 for r in rows)


def test_a_batch_list_needs_a_machine_format(cli):
    r = cli("kv", "llama3-8b", "--batch", "1,8")
    assert r.code == 2 and "--json or --csv" in r.err


def _text(value) -> str:
    """How a JSON value reads in the CSV: None empty, booleans as JSON spells them, numbers and
    strings as str()."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


@pytest.mark.parametrize(
    "model, options",
    [
        ("llama3-8b", []),
        ("mixtral-8x7b", []),
        ("deepseek-v3", ["--weights-dtype", "fp8"]),
        ("mistral-7b", []),  # sliding window: the KV read stops growing at 4,096 tokens
        ("llama3-70b", ["--tp", "4", "--pp", "2"]),
        ("mixtral-8x7b", ["--tp", "2", "--dp", "2", "--ep", "4"]),
    ],
)
def test_a_sweep_row_is_the_point_run_alone(cli, model, options):
    """Every column of every row of a sweep equals the JSON of that point run on its own."""
    rows = _rows(
        cli(
            "roofline",
            model,
            "--gpu",
            "h100",
            "--batch",
            "1,3,64..128:64",
            "--context",
            "0,2K,100000",
            *options,
            "--csv",
        ).out
    )
    assert [(int(r["batch"]), int(r["context"])) for r in rows] == [
        (b, c) for b in (1, 3, 64, 128) for c in (0, 2048, 100_000)
    ]
    for row in rows:
        alone = cli(
            "roofline", model, "--gpu", "h100", "--batch", row["batch"], "--context", row["context"], *options, "--json"
        ).json()
        expected = {k: _text(v) for k, v in alone.items() if not isinstance(v, (list, dict))}
        expected.update({f"layout_{k}": _text(v) for k, v in alone["layout"].items()})
        assert row == expected


def _flat(row: dict, prefix: str = "") -> dict:
    """A JSON row's scalar fields as CSV text, nested objects' fields prefixed by their name."""
    out = {}
    for key, value in row.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}_"))
        elif not isinstance(value, list):
            out[f"{prefix}{key}"] = _text(value)
    return out


@pytest.mark.parametrize(
    "args, rows_key",
    [
        (["flops", "llama3-8b", "--seq", "1K..8K"], None),
        (["flops", "llama3-8b", "--phase", "decode", "--context", "1K..8K:2K"], None),
        (["context", "llama3-70b", "--context", "8K,128K", "--weight-flops", "total"], "rows"),
        (["moe", "deepseek-v3", "--batch", "1,32,128", "--gpu", "h100"], "rows"),
        (
            ["spec", "llama3-8b", "--gpu", "h100", "--alpha", "0.8", "--gamma", "4", "--c", "0.1", "--batch", "1..256"],
            "rows",
        ),
        (["activations", "llama3-8b", "--seq", "4K"], None),
        (["numerics"], "formats"),
        (["fit", "llama3-70b", "--gpu", "h100", "--context", "8K"], "smallest_layouts"),
    ],
)
def test_commands_with_rows_print_the_json_rows_as_csv(cli, args, rows_key):
    """One header line of the JSON rows' keys, then one line per JSON row with the same values."""
    text = cli(*args, "--csv").out
    data = cli(*args, "--json").json()
    expected = [_flat(r) for r in (data[rows_key] if rows_key else data)]
    assert text.splitlines()[0].split(",") == list(expected[0])
    assert _rows(text) == expected


def test_spec_csv_needs_the_step_model(cli):
    r = cli("spec", "--alpha", "0.8", "--gamma", "4", "--c", "0.1", "--csv")
    assert r.code == 2 and "--gpu" in r.err


def test_serve_csv_is_the_frontier_of_the_json(cli):
    """The analytic plan (disaggregated alone stays analytic): one row per frontier point, its
    JSON figures as columns, the chosen one marked."""
    args = ["serve", "llama3-70b", "--gpu", "h100", "--gpus", "8", "--input", "2K", "--output", "256"]
    args += ["--ttft", "2s", "--tpot", "50ms", "--mode", "disaggregated"]
    rows = _rows(cli(*args, "--csv").out)
    plan = cli(*args, "--json").json()
    assert len(rows) == len(plan["frontier"])
    for row, point in zip(rows, plan["frontier"]):
        assert row["tpot_s"] == _text(point["tpot_s"]) and row["concurrency"] == _text(point["concurrency"])
        assert row["layout_tp"] == _text(point["layout"]["tp"]) and row["misses"] == " ".join(point["violates"])
    assert sum(r["chosen"] == "true" for r in rows) == (plan["chosen"] in plan["frontier"])


def test_serve_csv_of_the_simulated_plan_is_its_candidates(cli):
    """The plan on the simulator: one row per candidate simulated (best first, marked chosen),
    its simulated means and percentiles as the JSON has them: the first, the chosen plan's run
    (``chosen``, at nominal step times), the others the candidates' (``simulated``, at the band's
    slow end)."""
    args = ["serve", "llama3-8b", "--gpu", "h100", "--gpus", "2", "--input", "1K", "--output", "128"]
    args += ["--ttft", "p99:1s", "--tpot", "p90:30ms"]
    rows = _rows(cli(*args, "--csv").out)
    plan = cli(*args, "--json").json()
    assert len(rows) == len(plan["simulated"]) and [r["chosen"] for r in rows][0] == "true"
    for row, run in zip(rows, [plan["chosen"], *plan["simulated"][1:]]):
        assert row["ttft_s"] == _text(run["ttft_s"]) and row["ttft_p99_s"] == _text(run["percentiles"]["ttft_s"]["p99"])
        assert row["max_num_seqs"] == _text(run["max_num_seqs"]) and row["violates"] == " ".join(run["violates"])
        # each row says its step times (a MoE user read the chosen nominal row against slow-end others)
        if row["chosen"] == "false":  # the chosen row is the chosen plan's run, at nominal step times
            assert row["timed_at"] == run["timed_at"] == "slow end"
    assert rows[0]["timed_at"] == plan["chosen"]["timed_at"] == "nominal"


def test_serve_csv_carries_the_chosen_plans_band(cli):
    """The chosen row holds the band the JSON's ``chosen`` has (its fast and slow ends, goodput and
    $/M at each end): it had been the candidate's run without them, every *_low column empty (a new
    user's trial), where the README says a CSV leaves empty only what does not apply."""
    args = ["serve", "llama3-8b", "--gpu", "h100", "--gpus", "2", "--input", "1K", "--output", "128"]
    args += ["--ttft", "p99:1s", "--tpot", "p90:30ms", "--usd-per-gpu-hour", "2.5"]
    chosen = _rows(cli(*args, "--csv").out)[0]
    plan = cli(*args, "--json").json()["chosen"]
    for name in ("tpot_low_s", "ttft_high_s", "usd_per_million_output_tokens_low", "goodput_rps_low"):
        assert plan[name] is not None and chosen[name] == _text(plan[name]), name
    assert chosen["tpot_p90_low_s"] == _text(plan["percentiles"]["tpot_s"]["p90_low_s"])


def test_fit_with_a_layout_gives_that_layout_as_one_csv_row(cli):
    """fit --tp 2: the one layout's JSON (``deployment``) as the CSV's one row (fit had refused
    --csv though it prints a table of layouts, a new-user trial found)."""
    args = ["fit", "llama3-70b", "--gpu", "h100", "--tp", "2"]
    data = cli(*args, "--json").json()
    assert _rows(cli(*args, "--csv").out) == [_flat(data["deployment"])]


def test_fit_csv_with_no_layout_that_fits_is_one_error_line(cli):
    """Nothing fits on 2.5 GB (0.1 GB a GPU past the 2 GiB reserve; 16 GB of weights): the text
    says so; CSV had printed an empty line with exit 0."""
    r = cli("fit", "llama3-8b", "--memory-gb", "2.5", "--csv")
    assert r.code == 2 and r.out == "" and r.err.startswith("error: --csv: no layout") and len(r.err.splitlines()) == 1


def test_a_comparison_csv_gives_each_gpus_price(cli):
    """Each GPU of a comparison is priced on its own (``--usd-per-gpu-hour 2.5,1.5``, in order); its
    CSV row says at what price, beside its $/M (a helper found the column missing)."""
    r = cli(
        "serve", "llama3-8b", "--gpu", "h100,a100", "--gpus", "2", "--input", "1K", "--output", "128",
        "--ttft", "1s", "--usd-per-gpu-hour", "2.5,1.5", "--csv",
    )  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert r.code == 0 and [(row["gpu"], float(row["usd_per_gpu_hour"])) for row in rows] == [
        ("h100", 2.5),
        ("a100", 1.5),
    ]
