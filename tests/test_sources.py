"""Sources are cited by a location a user of the repository can open.

Shipped data, fixtures and test docstrings once cited their sources as ids of a private search index
("code-index id 70182790305", "(ids 66625149308, 66989330955)"), which nobody who clones the
repository can follow. A source is cited by its public location instead: "github.com/OWNER/REPO PATH
@ COMMIT" (or "at an unpinned revision"), a URL, or, where the file was never traced to a repository,
"untraced index reference N": the number of a stored copy in the search index the project's
maintainers use, not yet traced to its public repository, kept so that it can be. This test keeps
the bare form, which reads as if it were a citation, from coming back.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Where citations live: the package (shipped data included), the tests and their fixtures, the
#: scripts and the documents.
SCANNED = ("llm_cost", "tests", "scripts", "docs", "README.md")
SUFFIXES = {".py", ".yaml", ".yml", ".json", ".md", ".toml", ".txt", ".csv"}

#: "id 53543809441", "ids 66625149308, 66989330955", "file id 5856956924": a search-index id is a
#: number of 8 to 12 digits after the word id(s). Token ids in configs ("eos_token_id": 128001)
#: are JSON keys or shorter numbers and do not match.
OPAQUE_ID = re.compile(r"\bids?\s+\d{8,12}\b")
#: The index's own name: "code-index id N", "code-index excerpt", "index id N".
INDEX_NAME = re.compile(r"\bcode-index\b|\bindex\s+ids?\b", re.IGNORECASE)


def _files() -> list[Path]:
    here = Path(__file__).resolve()
    out: list[Path] = []
    for name in SCANNED:
        root = ROOT / name
        candidates = [root] if root.is_file() else sorted(root.rglob("*")) if root.is_dir() else []
        for path in candidates:
            if path.is_file() and path.suffix in SUFFIXES and path.resolve() != here:
                out.append(path)
    return out


def _offences(text: str) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        if OPAQUE_ID.search(line) or INDEX_NAME.search(line):
            found.append((number, line.strip()[:160]))
    return found


def test_no_file_cites_a_source_by_a_search_index_id():
    offences = []
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="replace")
        offences += [f"{path.relative_to(ROOT)}:{n}: {line}" for n, line in _offences(text)]
    assert not offences, "cite the public location (owner/repo path @ commit, or a URL):\n" + "\n".join(offences)


def test_the_patterns_catch_the_old_forms_and_spare_the_new_ones():
    """The forms the repository used, caught; the forms that replaced them and ordinary config text,
    left alone."""
    for old in (
        "(code-index id 70182790305)",
        "(code-index ids 66625149308, 70182790305)",
        "(ids 54011893124, 60545915970)",
        "(id 53543809441)",
        "file id 5856956924",
        "a code-index excerpt: 96 heads",
    ):
        assert _offences(old), old
    for new in (
        "(github.com/sathieshiah/ai docs/weight-layout-comparison.md @ e980afa7314f)",
        "(github.com/ggml-org/llama.cpp conversion/mimo.py at an unpinned revision)",
        "(untraced index reference 70182790305)",
        '"eos_token_id": 128001, "bos_token_id": 128000',
        "token ids 151643 and 151645",
        "HF API safetensors total 8190735360",
    ):
        assert not _offences(new), new
