"""YAML aliases are refused before anything is built (issue 29): a billion-laughs schema,
collector config or party config gets one line naming the file and the line, at once.

On the code before the fix the bombs below were expanded (a schema's ``_plain_booleans``
rebuilt the alias graph as a tree; errors quoted it with ``repr``): 9**9 leaves took
gigabytes and minutes, and these tests' smaller bombs ended in a different error.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import yaml

from ppdp import _yaml
from ppdp._validation import bounded
from ppdp.data.schema import Schema
from ppdp.exceptions import ParameterError, SchemaError


def _bomb(levels: int, key: str = "columns") -> str:
    lines = ['a0: &a0 ["lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + f"\n{key}: *a{levels}\n"


def test_the_loader_is_libyamls_when_pyyaml_has_it():
    assert issubclass(_yaml.Loader, getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (_bomb(9), 1),
        ("x: 1\na: &a {k: v}\nb: *a\n", 2),
        ("a: &a 5\nb: [*a]\n", 1),  # a scalar
        ("a: &a [1, *a]\n", 1),  # recursive
        ("base: &b {lower: 0}\ncol: {<<: *b, upper: 1}\n", 1),  # a merge key
    ],
    ids=["billion-laughs", "mapping", "scalar", "recursive", "merge"],
)
def test_any_alias_is_refused_with_the_line_of_its_anchor(text, line):
    start = time.perf_counter()
    with pytest.raises(yaml.YAMLError, match=f"repeats the node that starts at line {line};"):
        _yaml.load(text)
    assert time.perf_counter() - start < 1.0


def test_documents_without_aliases_load_as_before():
    text = "a: [1, 2.5, no, 'x']\nb: {c: null}\nd: &unused 3\n"
    assert _yaml.load(text) == {"a": [1, 2.5, False, "x"], "b": {"c": None}, "d": 3}
    assert _yaml.load("") is None


def test_a_schema_alias_bomb_is_one_line_naming_the_file(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb(9), encoding="utf-8")
    with pytest.raises(SchemaError) as info:
        Schema.from_file(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and "alias" in message


def test_schema_yaml_booleans_keep_their_spelling_with_the_new_loader(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "columns:\n  - {name: smoker, type: categorical, categories: [no, yes]}\n",
        encoding="utf-8",
    )
    with pytest.raises(SchemaError, match="'no'"):
        Schema.from_file(path)


def test_a_non_utf8_schema_is_named_in_one_line(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"columns:\n  - {name: caf\xe9, type: numeric, lower: 0, upper: 1}\n")
    with pytest.raises(SchemaError) as info:
        Schema.from_file(path)
    message = str(info.value)
    assert str(path) in message and "not UTF-8" in message and "0xe9" in message


def test_collector_and_party_configs_refuse_aliases(tmp_path):
    from ppdp.federated.http._config import load_config
    from ppdp.local.collector._config import load_config_file

    path = tmp_path / "collector.yaml"
    path.write_text(_bomb(9, key="clients"), encoding="utf-8")
    with pytest.raises(ParameterError, match=r"collector.yaml\) is not valid YAML: a YAML alias"):
        load_config_file(path)
    party = tmp_path / "party.yaml"
    party.write_text(_bomb(9, key="peers"), encoding="utf-8")
    with pytest.raises(ParameterError, match=r"party.yaml: not valid YAML \(a YAML alias"):
        load_config(party)


def test_the_cli_refuses_a_schema_bomb_in_one_line_at_once(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb(9), encoding="utf-8")
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "ppdp", "schema", "check", str(path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "alias" in proc.stderr
    assert time.perf_counter() - start < 30


def test_bounded_never_builds_the_repr_of_a_big_container():
    assert bounded(list(range(10**6))) == "<a list of 1000000 items>"
    assert bounded({"a": 1}) == "{'a': 1}"
    assert bounded("x" * 100).endswith("(100 characters)")
