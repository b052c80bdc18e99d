"""Regenerate the README's console examples: each ```console block whose first line is
``$ llm-cost ...`` gets that command's real output (at 120 columns, no colour). A block that
ends in a line ``...`` keeps as many output lines as it had, then ``...``.

Usage: python scripts/readme_examples.py [--check]   (--check: exit 1 if the README is stale)
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: The pictures the README shows, drawn by the tool itself.
PICTURES = [
    "llm-cost roofline llama3-8b --gpu h100 --batch 64 --context 2K --plot docs/roofline.png --force",
    "llm-cost spec llama3-8b --gpu h100 --alpha 0.8 --gamma 4 --c 0.1 --context 2K --batch 1..512 --plot docs/spec.png --force",
    "llm-cost serve llama3-70b --gpu h100 --gpus 8 --input 2K --output 256 --ttft 2s --tpot 50ms --usd-per-gpu-hour 2.5 "
    "--mode disaggregated --plot docs/serve.png --force",
    "llm-cost serve llama3-8b --gpu h100 --tp 1 --qps 12 --input lognormal:mean=800,sd=400 --output 128 --prefix 256 "
    "--prefix-groups 4 --ttft p99:150ms --tpot p90:12ms --plot docs/serve-cdf.png --force",
]
BLOCK = re.compile(r"```console\n\$ (llm-cost [^\n]*)\n(.*?)```", re.S)


def _run(command: str) -> str:
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}
    out = subprocess.run(shlex.split(command), capture_output=True, text=True, env=env)
    text = out.stdout if out.returncode in (0, 1) else out.stderr
    return "\n".join(line.rstrip() for line in text.rstrip("\n").splitlines())


def render(text: str) -> str:
    """The README text with every example block's output replaced by the command's output."""

    def block(m: re.Match) -> str:
        output = _run(m.group(1))
        old = m.group(2).rstrip("\n").splitlines()
        if old and old[-1] == "...":
            output = "\n".join(output.splitlines()[: len(old) - 1] + ["..."])
        return f"```console\n$ {m.group(1)}\n{output}\n```"

    return BLOCK.sub(block, text)


def draw_pictures() -> None:
    """Redraw the README's pictures (needs the plot extra)."""
    for command in PICTURES:
        subprocess.run(shlex.split(command), cwd=ROOT, check=True, capture_output=True)


def main() -> None:
    text = README.read_text(encoding="utf-8")
    new = render(text)
    if "--check" in sys.argv[1:]:
        sys.exit(0 if new == text else 1)
    README.write_text(new, encoding="utf-8")
    draw_pictures()


if __name__ == "__main__":
    main()
