"""The README's example runs as written, and its first lines are the two fresh-machine commands."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def test_first_block_holds_the_two_commands():
    first = _blocks("bash")[0].strip().splitlines()
    assert len(first) == 2
    assert "ppdp demo" in first[0]
    assert "pytest" in first[1]
    assert README.read_text().index("```bash") < 80  # right under the title


def test_python_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (code,) = _blocks("python")
    namespace: dict[str, object] = {"print": lambda *a, **k: None}
    exec(compile(code, str(README), "exec"), namespace)
    assert (tmp_path / "adult-budget.db").exists()
