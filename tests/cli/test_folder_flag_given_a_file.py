"""A file given where a folder is expected (demo, federate demo) is named in one line with
the flag, before anything runs (found in the fifth new-user trial)."""

from __future__ import annotations

import pytest

from ppdp.cli import main


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["demo", "--output-dir"], "--output-dir ({}) is a file, not a folder"),
        (["federate", "demo", "--workdir"], "--workdir ({}) is a file, not a folder"),
    ],
)
def test_a_file_for_a_folder_is_one_line_naming_the_flag(tmp_path, capsys, argv, said):
    path = tmp_path / "people.csv"
    path.write_text("id;age\n1;30\n")
    assert main([*argv, str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"ppdp: error: {said.format(path)}"]
    assert path.read_text() == "id;age\n1;30\n" and sorted(tmp_path.iterdir()) == [path]
