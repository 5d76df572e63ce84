"""``ppdp.federated.files``: the library side of ``ppdp federate``."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ppdp.budget import Guarantee
from ppdp.exceptions import ParameterError
from ppdp.federated.files import demo_summary, init_round_files, release_guarantee

G = Guarantee.approx(1.0, 1e-6, relation="replace-one", mechanism="Mul-LDA-DP")


def test_release_guarantee_reads_the_publishers_result(tmp_path) -> None:
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"guarantee_dict": G.to_dict()}))
    assert release_guarantee(path).summary() == G.summary()
    path.write_text(json.dumps({}))
    assert release_guarantee(path) is None


def test_demo_summary_puts_the_guarantee_on_one_line() -> None:
    result = SimpleNamespace(
        summary=lambda: f"round done\n  guarantee: {G}\nend",
        result={"guarantee": str(G), "guarantee_dict": G.to_dict()},
    )
    assert demo_summary(result).splitlines() == ["round done", f"  guarantee: {G.summary()}", "end"]
    assert demo_summary(result, verbose=1).splitlines()[2] == f"    in full: {G}"
    bare = SimpleNamespace(summary=lambda: "aborted", result=None)
    assert demo_summary(bare) == "aborted"


def test_init_round_files_refuses_bad_class_counts(tmp_path) -> None:
    pytest.importorskip("fastapi")
    with pytest.raises(ParameterError, match=r"--class-counts \('1,x'\) must be integers"):
        init_round_files(
            tmp_path / "out",
            owners=["a=http://127.0.0.1:1"],
            dealer="none",
            class_counts="1,x",
            publisher="http://127.0.0.1:2",
            schema=tmp_path / "s.yaml",
        )
    assert not (tmp_path / "out").exists()
