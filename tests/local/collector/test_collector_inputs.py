"""A respondent's values file and the collector's store, read from the command line's inputs
(new-user trial: blank answers vanished without a word; a wrong store path gave a traceback)."""

from __future__ import annotations

import pytest

from ppdp.exceptions import DataValidationError, ParameterError
from ppdp.local.collector import CollectorStore, read_values


def test_blank_lines_of_a_one_column_file_are_empty_values_not_skipped(tmp_path):
    path = tmp_path / "ages.csv"
    path.write_text("age\n30\n\n41\n\n52\n")
    with pytest.raises(DataValidationError) as info:
        read_values(path)
    assert str(info.value) == f"column 'age' of {path} has 2 empty value(s) (lines 3, 5)"


def test_text_among_numbers_names_its_lines_not_its_values(tmp_path):
    path = tmp_path / "ages.csv"
    path.write_text("age\n30\nabc\n41\nn/a?\n")
    with pytest.raises(DataValidationError) as info:
        read_values(path)
    message = str(info.value)
    assert message.endswith("has 2 value(s) that are not numbers among numbers (lines 3, 5)")
    assert "abc" not in message
    labels = tmp_path / "labels.csv"  # all text: categories, read as they are
    labels.write_text("city\nOslo\nBergen\n")
    assert read_values(labels).tolist() == ["Oslo", "Bergen"]


def test_a_file_that_is_not_a_store_is_one_line_and_left_unchanged(tmp_path):
    path = tmp_path / "people.csv"
    path.write_text("id;age\n1;30\n" * 50)
    before = path.read_bytes()
    with pytest.raises(ParameterError, match=r"^store \(.*people.csv\) is not a collector store"):
        CollectorStore.open(path, create=False)
    assert path.read_bytes() == before


def test_a_journal_of_another_survey_names_both_and_the_way_out(tmp_path):
    # New-user trial: "was made for another survey than this run's" while the docs say
    # another survey is not refused; it needs a journal of its own.
    import numpy as np

    from ppdp.local.collector._journal import FORMAT, ReportJournal

    meta = {"survey": "income-2026", "client": "app-1", "format": FORMAT}
    path = tmp_path / "ages.csv.report-journal"
    journal = ReportJournal.create(path, meta=meta, batches=[(0, np.zeros(3))])
    try:
        with pytest.raises(ParameterError) as info:
            journal.check_matches({"survey": "age-2026", "client": "app-1"})
        message = str(info.value)
        assert "made for survey 'income-2026', not this run's 'age-2026'" in message
        assert "--journal PATH" in message
        journal.check_matches({"survey": "income-2026", "client": "app-1"})  # its own: fine
    finally:
        journal.close()


def test_a_semicolon_separated_file_is_read_by_its_header(tmp_path):
    from ppdp.local.collector import value_column

    path = tmp_path / "people.csv"
    path.write_text("id;age;city\nP1;30;Oslo\nP2;41;Bergen\n")
    assert read_values(path, column="age").tolist() == [30, 41]
    assert value_column(path) == "id"
    commas = tmp_path / "c.csv"  # a comma header wins, whatever the values hold
    commas.write_text("age,note\n30,a;b\n")
    assert read_values(commas).tolist() == [30]
