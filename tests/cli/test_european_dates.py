"""A European export (``--output-sep ';' --output-decimal ,``) writes the dates of a column
that declares ``date_format`` in that format, as the data were, not ISO; the release reads
back with the same schema; without those flags the release keeps ISO dates."""

from __future__ import annotations

import datetime as dt
import re

import numpy as np
import pytest

from ppdp.cli import main
from ppdp.data import Schema
from ppdp.data.draft import decimal_mark, read_table

EU = ["--output-sep", ";", "--output-decimal", ","]
FORMATS = {"%d.%m.%Y": r"\d{2}\.\d{2}\.\d{4}", "%d/%m/%Y": r"\d{2}/\d{2}/\d{4}"}


def _table(root, fmt: str) -> Schema:
    """A ``;`` file with decimal commas and dates written ``fmt``, and its public schema."""
    rng = np.random.default_rng(7)
    lines = ["admitted;income;ward"]
    for _ in range(400):
        day = dt.date(2016, 1, 1) + dt.timedelta(days=int(rng.integers(0, 2000)))
        income = f"{rng.uniform(100, 900):.2f}".replace(".", ",")
        lines.append(f"{day.strftime(fmt)};{income};{rng.choice(['a', 'b'])}")
    (root / "d.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = {
        "columns": [
            {"name": "admitted", "type": "numeric", "date": True, "date_format": fmt,
             "lower": "2016-01-01", "upper": "2021-12-31", "cuts": ["2018-01-01"]},
            {"name": "income", "type": "numeric", "lower": 0, "upper": 1000, "decimals": 2},
            {"name": "ward", "type": "categorical", "categories": ["a", "b"]},
        ]
    }  # fmt: skip
    Schema.from_dict(spec).to_file(root / "s.json")
    return Schema.from_file(root / "s.json")


def _publish(root, method, out, *extra) -> None:
    argv = ["publish", method, str(root / "d.csv"), "--schema", str(root / "s.json")]
    assert main([*argv, "--epsilon", "1", "--seed", "3", "-q", "-o", str(out), *extra]) == 0


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_european_synthetic_table_writes_the_declared_dates_and_reads_back(tmp_path, fmt):
    schema = _table(tmp_path, fmt)
    _publish(tmp_path, "synth", tmp_path / "eu.csv", *EU)
    _publish(tmp_path, "synth", tmp_path / "plain.csv")
    rows = (tmp_path / "eu.csv").read_text(encoding="utf-8").splitlines()
    assert rows[0] == "admitted;income;ward"
    dates = [r.split(";")[0] for r in rows[1:]]
    assert all(re.fullmatch(FORMATS[fmt], d) for d in dates), dates[:5]
    assert all(re.fullmatch(r"\d+,\d+|\d+", r.split(";")[1]) for r in rows[1:])
    with decimal_mark(None):
        eu = read_table(tmp_path / "eu.csv", say_decimal=False)
        plain = read_table(tmp_path / "plain.csv", say_decimal=False)
    assert plain["admitted"].str.fullmatch(r"\d{4}-\d{2}-\d{2}").all()  # default: ISO
    x_eu, _, report = schema.encode(eu, return_report=True)
    assert not report.has_corrections  # every value read as what it is: nothing clipped
    np.testing.assert_array_equal(x_eu, schema.encode(plain)[0])  # same seed, same release


def test_a_european_group_table_writes_its_date_intervals_in_the_declared_format(tmp_path):
    _table(tmp_path, "%d.%m.%Y")
    _publish(tmp_path, "groupby", tmp_path / "g.csv", "--by", "admitted", *EU)
    levels = [r.split(";")[0] for r in (tmp_path / "g.csv").read_text().splitlines()[1:]]
    assert levels == ["[01.01.2016, 01.01.2018)", "[01.01.2018, 31.12.2021]"]
