"""Releases print their guarantee as one line; ``-v`` (anywhere) adds the full statement."""

from __future__ import annotations

import argparse
import json
from types import SimpleNamespace

import pytest

from ppdp.budget import Guarantee
from ppdp.cli import build_parser
from ppdp.cli._common import print_guarantee
from ppdp.cli._federate import _print_release_guarantee
from ppdp.federated.files import demo_summary

PCA = Guarantee.pure(
    1.0,
    relation="replace-one",
    mechanism="DP-PCA (Jiang et al. 2013)",
    assumptions=("n (the number of rows) is public", "k = 5 fixed in advance"),
)
RAW = Guarantee.none(
    "raw projections: the exact projection of every record is released, so the rows are NOT "
    "protected",
    mechanism="LDA-DP (Gu, Zhang & Zhang 2022)",
)


def test_summary_only_without_verbose(capsys):
    print_guarantee(PCA, verbose=0, full_in="out.csv.guarantee.json")
    assert capsys.readouterr().out == (
        "guarantee: ε-DP, ε = 1, replace-one — DP-PCA (Jiang et al. 2013)\n"
        "  in full in out.csv.guarantee.json (or add -v)\n"
    )


def test_full_statement_with_verbose(capsys):
    print_guarantee(PCA, verbose=1, label="guarantee of each report")
    assert capsys.readouterr().out == (
        "guarantee of each report: ε-DP, ε = 1, replace-one — DP-PCA (Jiang et al. 2013)\n"
        f"  in full: {PCA}\n"
    )


def test_no_guarantee_is_always_stated_in_full(capsys):
    print_guarantee(RAW, verbose=0)
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "guarantee: no privacy guarantee: raw projections — LDA-DP (Gu, Zhang & Zhang 2022)",
        f"  in full: {RAW}",
    ]
    assert "NOT protected" in out[1]


def _leaves(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield prefix, parser
    for action in subs:
        for name, child in action.choices.items():
            yield from _leaves(child, (*prefix, name))


def test_every_command_takes_verbose_after_its_name():
    leaves = list(_leaves(build_parser()))
    assert len(leaves) > 20
    for path, parser in leaves:
        action = parser._option_string_actions.get("-v")
        assert action is not None and action.dest == "verbose", path
        assert action.default is argparse.SUPPRESS, path  # a -v before the command stands


@pytest.mark.parametrize(
    ("argv", "verbose"),
    [
        (["budget", "show", "L"], 0),
        (["-v", "budget", "show", "L"], 1),
        (["budget", "show", "L", "-v"], 1),
        (["budget", "show", "-vv", "L"], 2),
    ],
)
def test_verbose_before_or_after_the_command(argv, verbose):
    assert build_parser().parse_args(argv).verbose == verbose


def test_federate_demo_prints_the_summary(capsys):
    full = str(PCA)
    result = SimpleNamespace(
        summary=lambda: (
            f"Mul-LDA-DP round r1 with 3 owners (completed)\n  guarantee: {full}\n"
            "  direction norm: 1"
        ),
        result={"guarantee": full, "guarantee_dict": PCA.to_dict()},
    )
    assert demo_summary(result, verbose=0).splitlines() == [  # type: ignore[arg-type]
        "Mul-LDA-DP round r1 with 3 owners (completed)",
        f"  guarantee: {PCA.summary()}",
        "  direction norm: 1",
    ]
    lines = demo_summary(result, verbose=1).splitlines()  # type: ignore[arg-type]
    assert lines[1:3] == [f"  guarantee: {PCA.summary()}", f"    in full: {full}"]


def test_federate_publisher_prints_the_summary(tmp_path, capsys):
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"guarantee": str(PCA), "guarantee_dict": PCA.to_dict()}))
    _print_release_guarantee(path, verbose=0)
    assert capsys.readouterr().out.splitlines() == [
        f"guarantee: {PCA.summary()}",
        f"  in full in {path} (or add -v)",
    ]
