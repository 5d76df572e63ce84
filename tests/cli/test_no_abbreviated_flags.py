"""No command of the CLI takes an abbreviated flag: ``--eps`` is not ``--epsilon``, nor ``--rel``
``--relation``; nothing is written when one is refused."""

from __future__ import annotations

import argparse

import pytest

from ppdp.cli import build_parser, main


def test_an_abbreviated_flag_is_refused(tmp_path, one_error_line):
    ledger = tmp_path / "L.db"
    argv = ["budget", "init", str(ledger), "--dataset-id", "d"]
    with pytest.raises(SystemExit) as info:
        main([*argv, "--eps", "1"])
    assert info.value.code == 2
    assert one_error_line().startswith("ppdp: error: ")
    assert not ledger.exists()
    with pytest.raises(SystemExit) as info:  # an optional flag's prefix is not taken either
        main([*argv, "--epsilon", "1", "--rel", "add/remove"])
    assert info.value.code == 2
    assert "unrecognized arguments: --rel add/remove" in one_error_line()
    assert not ledger.exists()
    assert main([*argv, "--epsilon", "1", "--relation", "add/remove"]) == 0  # full names work


def test_no_parser_of_the_cli_takes_abbreviations():
    def walk(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from walk(sub)

    parsers = list(walk(build_parser()))
    assert len(parsers) > 20  # the walk reached the (sub-)sub-commands
    assert all(p.allow_abbrev is False for p in parsers)
