"""A new user's trial (finding F10): each refusal names what the user gave and what would work,
not an internal name or a flag the user never typed."""

from __future__ import annotations

import pytest

SERVE = ["serve", "llama3-8b", "--input", "2K", "--output", "256"]

# (case id, argv, phrases the one error line holds, phrases it must not hold)
CASES = [
    (
        "memory-share-too-small",
        [*SERVE, "--gpu", "h100", "--gpu-memory-utilization", "0.2", "--tp", "1", "--qps", "5"],
        ["with --gpu-memory-utilization 0.2", "a larger --gpu-memory-utilization", "--weights-dtype"],
        ["weights_dtype"],
    ),
    (
        "two-prices-one-gpu",
        [*SERVE, "--gpu", "h100", "--usd-per-gpu-hour", "1,2"],
        ["--usd-per-gpu-hour: 2 prices for 1 GPU: give one price per --gpu"],
        ["finite number"],
    ),
    (
        "gpu-list-empty-item",
        [*SERVE, "--gpu", "h100,"],
        ["--gpu: 'h100,' has an empty item"],
        ["unknown GPU"],
    ),
    (
        "price-list-empty-item",
        [*SERVE, "--gpu", "h100,h200,h20", "--usd-per-gpu-hour", "1,,2"],
        ["--usd-per-gpu-hour: '1,,2' has an empty item"],
        ["not a number"],
    ),
    (
        "mbu-negative",
        ["roofline", "llama3-8b", "--gpu", "h100", "--mbu", "-0.5"],
        ["--mbu: '-0.5' is negative; it must be in (0, 1]"],
        [],
    ),
    (
        "default-batch-too-small",
        ["train", "llama3-8b", "--tokens", "15T", "--gpu", "h100", "--gpus", "1000000"],
        [
            "--gpus: the default global batch, 512 sequences of 8,192 tokens, is too small for 1,000,000 GPUs",
            "give --global-batch 40,960,000 tokens",
            "such as 131,072",
        ],
        ["not a multiple of"],
    ),
]


@pytest.mark.parametrize("case,argv,wanted,unwanted", CASES, ids=[c[0] for c in CASES])
def test_message_names_what_was_given(cli, case, argv, wanted, unwanted):
    r = cli(*argv)
    assert r.code == 2 and r.out == "", f"{case}: exit {r.code}; {r.err[-400:]}"
    assert r.err.count("\n") == 1 and r.err.startswith("error: "), r.err
    for phrase in wanted:
        assert phrase in r.err, f"{case}: {phrase!r} not in {r.err}"
    for phrase in unwanted:
        assert phrase not in r.err, f"{case}: {phrase!r} in {r.err}"


def test_the_suggested_gpus_plan():
    """The GPU count the refusal offers for the default batch is one the planner takes."""
    import llm_cost

    plan = llm_cost.train_plan("llama3-8b", 15 * 10**12, "h100", gpus=131_072)
    assert plan.gpus == 131_072 and plan.sequences_per_step == 512


def test_a_collective_hidden_behind_compute_is_shown_at_zero(cli):
    """A new user read a training step with no DP row (Llama-3-8B, 1,024 H100s, DP 512) as a step
    without data-parallel traffic; its reduce-scatter and all-gather run, hidden behind the
    backward and forward passes. Each collective of a degree over 1 is shown, at 0 when hidden."""
    out = cli("train", "llama3-8b", "--tokens", "15T", "--gpus", "1024", "--tp", "2", "--dp", "512", "--pp", "1",
              "--cp", "1")  # fmt: skip
    assert out.code == 0
    row = next(line for line in out.out.splitlines() if "data-parallel collectives" in line)
    assert "hidden behind compute" in row or any(ch.isdigit() and ch != "0" for ch in row)
    assert not any("ring-attention" in line for line in out.out.splitlines())  # CP 1: none runs


def test_a_traces_lengths_are_blamed_on_the_trace_not_on_flags_never_given(cli, tmp_path):
    """An attacker: a trace of 100,000- and 200,000-token prompts was refused as "--input: prompts
    of 150,000 + 15 output tokens ...", a flag it never gave. A length or count a trace holds is
    named by --trace, unless the flag itself was given."""
    trace = tmp_path / "long.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0,100000,10\n1,200000,20\n")
    r = cli("serve", "llama3-8b", "--tp", "1", "--trace", str(trace), "--analytic")
    assert r.code == 2 and r.err.startswith("error: --trace: prompts of 150,000 + 15 output tokens")
    assert "--input" not in r.err
    given = cli("serve", "llama3-8b", "--tp", "1", "--qps", "1", "--input", "200K", "--output", "64")
    assert given.code == 2 and given.err.startswith("error: --input: ")
