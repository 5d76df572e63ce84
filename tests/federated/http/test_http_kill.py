"""A party SIGKILLed in each phase: the round aborts, nothing is released, spends stay recorded.

The victim is a real subprocess that kills itself (SIGKILL: no goodbye, nothing flushed)
when its role is handed a message of the given kind; the other parties run in threads of
the test process (one of them, in one case, as the real ``ppdp federate`` CLI).
"""

from __future__ import annotations

import pytest
from fed_helpers import deploy, join, run_in_threads, spawn

from ppdp.cli import main as cli_main
from ppdp.ledger import Ledger

SCENARIOS = [
    # victim, kind that kills it, release
    ("dealer", "round-start", "direction"),  # before any dealer share
    ("owner-2", "dealer-share", "direction"),  # before its mean share
    ("owner-2", "noisy-means", "direction"),  # after its mean share, before the scatter
    ("owner-2", "result", "noisy-projections"),  # before its projections
    ("publisher", "scatter-share", "direction"),  # the publisher itself, mid-collection
]


def _kinds(path):
    with Ledger.open(path) as led:
        return [e.kind for e in led.entries()]


@pytest.mark.parametrize(("victim", "kind", "release"), SCENARIOS)
def test_party_killed_mid_round(tmp_path, victim, kind, release):
    dep = deploy(tmp_path, owners=3, dealer="trusted", release=release)
    proc = spawn(dep, victim, "--crash-on", kind)
    cli_party = "owner-1" if (victim, kind) == ("owner-2", "noisy-means") else None
    cli_proc = spawn(dep, cli_party, cli=True) if cli_party else None
    others = [p for p in dep.roles if p not in (victim, cli_party)]
    try:
        threads, out = run_in_threads(dep, others)
        join(threads)
        code = proc.wait(60)
        cli_code = cli_proc.wait(60) if cli_proc is not None else None
    finally:
        for pr in (proc, cli_proc):
            if pr is not None and pr.poll() is None:
                pr.kill()
                pr.wait()
    assert code == -9, (tmp_path / f"{victim}.proc.log").read_text()
    # every survivor ended its round aborted, with a reason (the dealer is done once its
    # shares are out: it has nothing to abort)
    for p in others:
        if p == "dealer" and out[p].state == "done":
            continue
        assert out[p].state == "aborted", (p, out[p])
        assert out[p].reason
    if cli_proc is not None:
        assert cli_code == 3
        err = (tmp_path / f"{cli_party}.proc.log").read_text().strip().splitlines()
        assert len(err) == 1 and "aborted" in err[0], err
        log = (tmp_path / f"{cli_party}.log").read_text()  # the reasons go to the party's log
        assert "round s-1 aborted" in log
    # nothing released; the spend made before any share was requested stays recorded
    kinds = _kinds(dep.ledger)
    assert "release" not in kinds
    assert kinds.count("spend") == 1
    if victim != "publisher":
        assert "fed-abort" in kinds
        assert "aborted" in (tmp_path / "result.json").read_text()
    assert cli_main(["ledger", "verify", str(dep.ledger)]) == 0
    for owner, path in dep.replicas.items():
        if owner == victim or not path.exists():
            continue
        assert cli_main(["ledger", "verify", str(path)]) == 0
        rep = _kinds(path)
        assert "spend" in rep and "release" not in rep
