"""Issue 18: the method-specific flags of ``ppdp publish`` and ``ppdp train`` come from
:mod:`ppdp.registry`: each method is a sub-command whose ``--help`` lists its own flags with
their help, and a flag given to a method that does not take it is refused in one line naming
the methods that do."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdp.cli import build_parser, main
from ppdp.registry import LEARNERS, PUBLISHERS, Option, Registry, option, switch

COMMANDS = {"publish": PUBLISHERS, "train": LEARNERS}


def _method(command: str, name: str):
    """The parser of ``ppdp COMMAND NAME``."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and command in a.choices)
    methods = next(a for a in sub.choices[command]._actions if a.choices and name in a.choices)
    return methods.choices[name]


@pytest.mark.parametrize("command", COMMANDS)
def test_each_method_help_lists_its_own_flags_only(command, capsys):
    """``ppdp publish synth --help`` (new-user trial: it printed every method's flags)."""
    registry = COMMANDS[command]
    for entry in registry.entries():
        parser = _method(command, entry.name)
        text = " ".join(parser.format_help().split())
        assert entry.summary and text.startswith(f"usage: ppdp {command} {entry.name} ")
        assert "".join(entry.summary[1:].split()) in "".join(text.split())  # wrapped at "-"
        for opt in registry.options():
            if opt.flag in entry.flags:
                own = next(o for o in entry.options if o.flag == opt.flag)
                assert f"{opt.flag} " in text
                assert "".join(own.help.split()) in "".join(text.split())
            else:  # accepted (refused in the registry's words) but not listed
                assert opt.flag in parser._option_string_actions
                assert f"{opt.flag} " not in text and f"{opt.flag}]" not in text, opt.flag
    with pytest.raises(SystemExit):
        main([command, "--help"])
    listing = " ".join(capsys.readouterr().out.split())
    for entry in registry.entries():  # the method list says what each one does
        assert "".join(f"{entry.name}{entry.summary}".split()) in "".join(listing.split())


def _value(opt: Option) -> tuple[list[str], object]:
    """Command-line words giving ``opt`` and the value argparse makes of them."""
    if opt.is_switch:
        return [opt.flag], opt.spec["const"]
    if "choices" in opt.spec:
        return [opt.flag, opt.spec["choices"][0]], opt.spec["choices"][0]
    kind = opt.spec.get("type")
    if kind is int or kind is float:
        return [opt.flag, "2"], kind("2")
    text = {
        "--param-grid": '{"C": [1, 2]}',
        "--ridge": "auto",
        "--interval": "0.9",
        "--round": "auto",
        "--q": "0.5",
    }.get(opt.flag, "1,2")
    return [opt.flag, text], text


def _foreign(registry: Registry):
    """Every (flag, name) pair where the method ``name`` does not take the flag (a flag with
    a default, ``--class-sizes``, is carried by every run and ignored where not taken)."""
    return [
        (opt, name)
        for opt in registry.options()
        for name in registry.names()
        if name not in registry.owners(opt.flag) and opt.spec["default"] is None
    ]


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    root = tmp_path_factory.mktemp("registry_flags")
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=40), "y": rng.choice(["a", "b"], 40)})
    df.to_csv(root / "t.csv", index=False)
    schema = root / "s.json"
    assert main(["schema", "draft", str(root / "t.csv"), "--label", "y", "-o", str(schema)]) == 0
    return root


@pytest.mark.parametrize("command", COMMANDS)
def test_a_flag_of_another_method_is_refused_in_one_line(command, table, tmp_path, capsys):
    registry = COMMANDS[command]
    capsys.readouterr()
    pairs = _foreign(registry)
    assert len(pairs) > 10
    for opt, name in pairs:
        words, value = _value(opt)
        argv = [command, name, str(table / "t.csv"), "--schema", str(table / "s.json")]
        out = tmp_path / ("out.csv" if command == "publish" else "out.json")
        argv += ["--epsilon", "1", "-o", str(out), *words]
        assert main(argv) == 2, argv
        owners = " and ".join(registry.owners(opt.flag))
        if command == "publish":  # ppdp.publish.files.build_publisher's wording
            shown = value if opt.parse is None else opt.value(value)
            want = f"{opt.flag} ({shown}) applies to {owners} only, not {name}"
        else:
            shown = "" if opt.is_switch else f" ({value!r})"
            want = f"{opt.flag}{shown} does not apply to {name}; it applies to {owners} only"
        assert capsys.readouterr().err.splitlines() == [f"ppdp: error: {want}"], argv
        assert list(tmp_path.iterdir()) == []


def test_parameters_maps_flags_and_parses_only_what_the_method_takes():
    given = {"--tune-grid": "0.1,1", "--no-intercept": False, "--gamma": None}
    assert LEARNERS.parameters("svm", given) == {"tuning": (0.1, 1.0), "fit_intercept": False}
    assert LEARNERS.parameters("rbf-svm", {"--tuning": "private"}) == {"tuning": "private"}
    with pytest.raises(ValueError, match=r"^--tuning \('private'\) does not apply to logreg; "):
        LEARNERS.parameters("logreg", {"--tuning": "private"})
    with pytest.raises(ValueError, match=r"--tune-grid \('1,x'\) must be numbers"):
        LEARNERS.parameters("logreg", {"--tune-grid": "1,x"})


def test_one_flag_reads_one_way():
    reg = Registry("thing")
    reg.register("a", "m:A", option("--k", "k", "the k", type=int))
    reg.register("b", "m:B", option("--k", "n", "the k", type=int), switch("--off", "on", "off"))
    reg.register("c", "m:C", option("--k", "k", "another k", type=int))
    assert reg.owners("--off") == ("b",)
    assert dict(reg.entry("b").flags) == {"--k": "n", "--off": "on"}
    with pytest.raises(ValueError, match="--k of 'd' reads differently"):
        reg.register("d", "m:D", option("--k", "k", "the k", type=float))
    assert "d" not in reg
