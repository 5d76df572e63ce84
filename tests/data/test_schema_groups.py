"""A declared hierarchy above a categorical column's codes (``groups``, issue 30).

Each category in exactly one group; bad declarations are one line naming the column and the
category. The synthesizer measures codes that round 1 cannot tell from noise at their group's
level (``tests/publish/test_table_synth_forms.py`` checks what that buys).
"""

from __future__ import annotations

import pytest

from ppdp.data import Schema
from ppdp.data.columns import CategoricalColumn
from ppdp.exceptions import SchemaError

CODES = ["I10", "I20", "J45", "J18"]
GROUPS = {"circulatory": ["I10", "I20"], "respiratory": ["J45", "J18"]}


def _schema(**extra) -> dict:
    col = {"name": "dx", "type": "categorical", "categories": CODES, **extra}
    return {"columns": [col]}


def test_groups_round_trip_and_give_each_code_its_group() -> None:
    schema = Schema.from_dict(_schema(groups=GROUPS))
    col = schema.column("dx")
    assert col.group_codes() == (0, 0, 1, 1)
    again = Schema.from_dict(schema.to_dict())
    assert again.column("dx").groups == col.groups
    assert schema.to_dict()["columns"][0]["groups"] == GROUPS


def test_the_other_bucket_is_a_group_of_its_own_unless_listed() -> None:
    col = CategoricalColumn("dx", CODES, other="rare", groups=GROUPS)
    assert col.categories[-1] == "rare" and col.group_codes() == (0, 0, 1, 1, 2)
    listed = CategoricalColumn(
        "dx", CODES, other="rare", groups={**GROUPS, "respiratory": ["J45", "J18", "rare"]}
    )
    assert listed.group_codes() == (0, 0, 1, 1, 1)


def test_no_groups_means_no_group_codes() -> None:
    assert CategoricalColumn("dx", CODES).group_codes() is None


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        (
            {"circulatory": ["I10", "I20"], "respiratory": ["J45"]},
            r"do not cover 1 category \('J18'\)",
        ),
        ({**GROUPS, "other": ["I10"]}, r"'I10' is in groups 'circulatory' and 'other'"),
        ({**GROUPS, "x": ["Z99"]}, r"group 'x' lists 'Z99', which is not among the categories"),
        ({"": CODES}, r"group name '' must be a non-empty string"),
        ({"all": []}, r"group 'all' must be a non-empty list"),
        (["I10", "I20"], r"groups must map each group name to its categories"),
        ("circulatory", r"groups \(str\) must map each group name"),
    ],
)
def test_bad_groups_are_one_line_naming_the_column(groups, message) -> None:
    with pytest.raises(SchemaError, match=message) as info:
        Schema.from_dict(_schema(groups=groups))
    assert "column 'dx'" in str(info.value) and "\n" not in str(info.value)


def test_the_cli_refuses_bad_groups_in_one_line(tmp_path, capsys) -> None:
    import json

    from ppdp.cli import main

    path = tmp_path / "s.json"
    path.write_text(json.dumps(_schema(groups={"circulatory": ["I10"]})))
    assert main(["schema", "check", str(path)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "do not cover 3 categories" in err[0], err
