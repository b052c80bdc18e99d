"""Regenerate llm_cost/data/workloads/sharegpt-vllm-bench-1000.csv: 1,000 (prompt, output) token-length
pairs of ShareGPT's first rounds, drawn as ``vllm bench serve --dataset-name sharegpt`` draws them.

Source: the vLLM paper's artifact (SOSP 2023), github.com/sosp-ae-39/sosp-ae-astra at commit
3180d2f8c2a2aa1729245f9b0cb75a854746e6a8, datasets/sharegpt_opt_text_completion_length.pkl: 84,226
(prompt, output) lengths of the first round of each ShareGPT conversation (March 2023), OPT tokenizer.
Draw (vLLM's ShareGPTDataset.sample, vllm/benchmarks/datasets.py): shuffle with ``random.seed(0)``
(the benchmark's default seed), keep pairs whose prompt and output are at least 4 tokens, prompt at
most 1,024 and prompt + output at most 2,048, and take the first 1,000.

    python scripts/make_sharegpt_lengths.py PATH/TO/sharegpt_opt_text_completion_length.pkl
"""

from __future__ import annotations

import pickle
import random
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "llm_cost" / "data" / "workloads" / "sharegpt-vllm-bench-1000.csv"


class _Lengths(pickle.Unpickler):
    """Only lists and tuples of integers: the file holds nothing else, and nothing else is loaded."""

    def find_class(self, module: str, name: str) -> object:
        raise pickle.UnpicklingError(f"{module}.{name} is not a length")


def main() -> None:
    with open(sys.argv[1], "rb") as f:
        pairs = [(int(p), int(o)) for p, o in _Lengths(f).load()]
    random.seed(0)
    random.shuffle(pairs)
    kept = [(p, o) for p, o in pairs if p >= 4 and o >= 4 and p <= 1024 and p + o <= 2048][:1000]
    OUT.write_text("arrival_s,input_tokens,output_tokens\n" + "".join(f"0,{p},{o}\n" for p, o in kept))
    print(
        f"{OUT}: {len(kept)} rows, mean prompt {sum(p for p, _ in kept) / len(kept):.1f}, "
        f"mean output {sum(o for _, o in kept) / len(kept):.1f} tokens"
    )


if __name__ == "__main__":
    main()
