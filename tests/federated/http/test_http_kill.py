"""A party SIGKILLed in each phase: the round aborts and nothing is released; a round that
dies before every owner committed spends nothing, a later one keeps its spend recorded.

The victim is a real subprocess that kills itself (SIGKILL: no goodbye, nothing flushed)
when its role is handed a message of the given kind; the other parties run in threads of
the test process (one of them, in two cases, as the real ``ppdp federate`` CLI: an owner,
and the dealer, whose exit status reports the aborted round).
"""

from __future__ import annotations

import pytest
from fed_helpers import deploy, join, run_in_threads, spawn

from ppdp.cli import main as cli_main
from ppdp.federated.http import Timeouts
from ppdp.ledger import Ledger

SCENARIOS = [
    # victim, kind that kills it, release, whether the round was charged
    ("dealer", "round-start", "direction", False),  # before any dealer share
    ("owner-2", "dealer-share", "direction", False),  # before its commitment
    ("owner-2", "noisy-means", "direction", True),  # after its mean share, before the scatter
    ("owner-2", "result", "noisy-projections", True),  # before its projections
    ("publisher", "scatter-share", "direction", True),  # the publisher itself, mid-collection
]
CLI = {("owner-2", "noisy-means"): "owner-1", ("owner-2", "result"): "dealer"}
# the dealer waits for the outcome up to the round timeout (the publisher-killed case)
QUICK = Timeouts(request=2.0, retries=2, startup=30.0, phase=1.5, round=10.0, linger=0.0)


def _kinds(path):
    with Ledger.open(path) as led:
        return [e.kind for e in led.entries()]


@pytest.mark.parametrize(("victim", "kind", "release", "charged"), SCENARIOS)
def test_party_killed_mid_round(tmp_path, victim, kind, release, charged):
    dep = deploy(tmp_path, owners=3, dealer="trusted", release=release, timeouts=QUICK)
    proc = spawn(dep, victim, "--crash-on", kind)
    cli_party = CLI.get((victim, kind))
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
    # every survivor ended its round aborted, with a reason (the dealer too: it waits for
    # the outcome after dealing)
    for p in others:
        assert out[p].state == "aborted", (p, out[p])
        assert out[p].reason
    if cli_proc is not None:
        assert cli_code == 3
        err = (tmp_path / f"{cli_party}.proc.log").read_text().strip().splitlines()
        assert len(err) == 1 and "aborted" in err[0], err
        log = (tmp_path / f"{cli_party}.log").read_text()  # the reasons go to the party's log
        assert "round s-1 aborted" in log
    # nothing released; the spend made before any share was requested stays recorded, and
    # a round that died before the charge point (the last commitment) spent nothing
    kinds = _kinds(dep.ledger)
    assert "release" not in kinds
    assert kinds.count("spend") == int(charged)
    if victim != "publisher":
        assert "fed-abort" in kinds
        assert "aborted" in (tmp_path / "result.json").read_text()
    assert cli_main(["ledger", "verify", str(dep.ledger)]) == 0
    for owner, path in dep.replicas.items():
        if owner == victim or not path.exists():
            continue
        assert cli_main(["ledger", "verify", str(path)]) == 0
        rep = _kinds(path)
        assert ("spend" in rep) == charged and "release" not in rep
