"""Every ```python block of docs/*.md runs as written, in order, in a fresh folder.

A reader copies a page's blocks one after the other, so each page's blocks run in one
namespace, in order, in an empty working directory, with ``print`` silenced. A block whose
first line starts with ``# not run in tests:`` (it needs a server or a deployment) is
skipped; a block that needs an optional extra skips the rest of its page when the extra is
missing; the ``ppdp`` command lines a page shows before a block that reads their output run
first, through the CLI. A failure names the page and the block (0-based).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from ppdp.cli import main as cli_main

DOCS = Path(__file__).resolve().parents[1] / "docs"
NOT_RUN = "# not run in tests:"
# Optional extras: (page, block) -> the modules that block needs. A missing one skips the
# page's test from that block on (the blocks after it build on it).
EXTRAS: dict[tuple[str, int], tuple[str, ...]] = {
    ("experiments.md", 0): ("matplotlib",),
    ("guide.md", 3): ("dask", "distributed", "pyarrow"),
    ("guide.md", 7): ("sklearn",),
    ("learn.md", 0): ("sklearn",),
    ("report.md", 1): ("sklearn",),
}
# Console steps a page shows between two python blocks, whose files the next block reads:
# (page, block) -> the page's own `$ ppdp ...` lines, run through the CLI before that block.
CONSOLE: dict[tuple[str, int], tuple[str, ...]] = {
    ("report.md", 1): (
        "ppdp budget init adult.db --dataset-id adult --epsilon 10",
        "ppdp publish lda-synth adult-train.csv --schema adult.json --epsilon 2 -o synth.csv "
        "--ledger adult.db",
    ),
}


def _blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), flags=re.S | re.M)


PAGES = sorted(p.name for p in DOCS.glob("*.md") if _blocks(p))


def test_pages_are_found() -> None:
    assert {"guide.md", "learn.md", "local.md"} <= set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_doc_blocks_run_in_order(page: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"print": lambda *a, **k: None}
    text = (DOCS / page).read_text()
    for i, code in enumerate(_blocks(DOCS / page)):
        if code.startswith(NOT_RUN):
            continue
        for module in EXTRAS.get((page, i), ()):
            pytest.importorskip(module, reason=f"docs/{page} block {i} needs {module}")
        for line in CONSOLE.get((page, i), ()):
            assert f"$ {line}" in text, f"docs/{page} no longer shows `{line}`"
            assert cli_main(shlex.split(line)[1:]) == 0, f"`{line}` failed before block {i}"
        try:
            exec(compile(code, f"docs/{page} block {i}", "exec"), namespace)
        except Exception as exc:  # name the page and block, keep the traceback
            pytest.fail(f"docs/{page} block {i} raised {type(exc).__name__}: {exc}")
