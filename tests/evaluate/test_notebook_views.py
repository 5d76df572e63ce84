"""Notebook views (``_repr_html_``) of a release, its guarantee and a quality report, and
``Release.save``: the table and its guarantee file together, read back by ``ppdp note`` and
``ppdp report`` like a command's release."""

from __future__ import annotations

import json

import pytest

from ppdp.budget import Guarantee
from ppdp.datasets import load_adult
from ppdp.evaluate import quality_report, release_note
from ppdp.exceptions import ParameterError
from ppdp.publish import LaplacePublisher


@pytest.fixture(scope="module")
def release():
    df, schema = load_adult()
    df = df.sample(400, random_state=0).reset_index(drop=True)
    return df, schema, LaplacePublisher(1.0, schema, random_state=1).fit(df).release_


def test_release_save_writes_the_table_and_its_guarantee(release, tmp_path):
    rel = release[2]
    out = rel.save(tmp_path / "lap.csv", method="laplace")
    side = json.loads((tmp_path / "lap.csv.guarantee.json").read_text())
    assert side["method"] == "laplace" and side["seeded"] is True
    assert Guarantee.from_dict(side["guarantee"]) == rel.guarantee
    assert "ppdp publish laplace" in release_note(out).to_markdown()
    with pytest.raises(ParameterError, match="exists"):
        rel.save(out, method="laplace")
    rel.save(out, method="laplace", force=True)
    with pytest.raises(ParameterError):
        rel.save(tmp_path / "lap.txt")
    assert not (tmp_path / "lap.txt").exists()
    assert not (tmp_path / "lap.txt.guarantee.json").exists()


def test_the_notebook_views(release):
    df, schema, rel = release
    g = rel.guarantee._repr_html_()
    assert "ε = 1" in g and "replace-one" in g
    r = rel._repr_html_()
    assert "400 rows" in r and "seeded" in r and "<table" in r
    report = quality_report(df, rel.data, schema, guarantee=rel.guarantee)
    q = report._repr_html_()
    assert f"Verdict: {report.verdict}" in q and "marginals" in q and "custodian" in q
