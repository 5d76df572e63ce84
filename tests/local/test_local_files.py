"""``ppdp.local.files``: the library side of ``ppdp local report`` and ``estimate``."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ppdp.exceptions import ParameterError
from ppdp.local.files import LocalReportRun, estimate_file, report_lines


def _run(**result):
    base = {"again": False, "batches": 2, "already": 0, "duplicates": 0, "total": 10}
    base |= {"sent": 10, "delivered": 10, "count": 10, "reports_of_column": 1}
    return LocalReportRun(SimpleNamespace(**(base | result)), "j.journal", "s.json", "v", "S")


def test_report_lines() -> None:
    assert report_lines(_run()) == [
        "sent 10 perturbed reports in 2 batch(es); delivered 10 of 10; the collector now holds 10"
    ]
    resumed = report_lines(_run(already=4, duplicates=1, sent=6))
    assert resumed[0] == "resumed the journal j.journal: 4 of 10 reports had been delivered before"
    assert "(1 already counted by the collector)" in resumed[1]
    again = report_lines(_run(again=True, reports_of_column=2, batches=0))
    assert again[0].startswith("report 2 of column 'v' of survey 'S' by this client (--again)")
    assert again[1].startswith("all 10 reports of the journal j.journal were already delivered")
    assert len(again) == 2


def test_estimate_file_refuses_a_json_output_and_an_existing_sidecar(tmp_path) -> None:
    with pytest.raises(ParameterError, match=r"must not end in \.json"):
        estimate_file(config=tmp_path / "c.yaml", output=tmp_path / "out.json", store="x.db")
    (tmp_path / "out.json").write_text("{}")
    with pytest.raises(ParameterError, match="guarantee file"):
        estimate_file(config=tmp_path / "c.yaml", output=tmp_path / "out.csv", store="x.db")
