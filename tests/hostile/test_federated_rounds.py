"""Hostile input against Mul-LDA-DP rounds (issue 12, item 2; RELIABILITY (d) and (f)).

An *outsider* holds no pinned key of the round. It may send anything to any party, copy and
replay every message it sees, redirect it to another party or another session, forge or
strip signatures, and forge ``abort`` messages. None of it may change how a round ends
(``docs/federated.md``, "Outsiders and the charge point"): each case below runs a round with
the outsider active and checks that it released the same direction, with the same ledger and
one spend, as the clean round. The charge point (the last owner's commitment) is checked on
its own: a round that stops before it spends nothing. And two smaller items: the dealer's
exit status reports an aborted round, and an owner's label error names the column, never
the label.

In-process rounds (``ppdp.federated.simulate``) take milliseconds; the two HTTP rounds run
every party in threads of this process (the dealer, in one case, as the ``ppdp federate``
command in a subprocess) and take a few seconds.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
import pytest

from ppdp import PrivacyBudget
from ppdp.exceptions import DataValidationError, ParameterError
from ppdp.federated import (
    DataOwner,
    FederatedPublisher,
    Kind,
    Message,
    MessageFields,
    NoiseDealer,
    RoundConfig,
    create_publishing_accountant,
    sign,
)
from ppdp.federated.simulate import Network, Round, build_round, run_round
from ppdp.ledger import Ledger, Signer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "federated" / "http"))

SECRET_LABEL = 424242  # a label value of the private data: never in an error


def _data(n: int = 180, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)  # test data
    X = rng.normal(size=(n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    return X, (X[:, 0] > 0).astype(int)


def _round(m: int = 3, **kw) -> Round:
    X, y = _data()
    parts = [(X[j::m], y[j::m]) for j in range(m)]
    return build_round(parts, epsilon=1.0, delta=1e-5, random_state=11, **kw)


def _kinds(rnd: Round) -> list[str]:
    return [e.kind for e in rnd.publisher.ledger.entries(refresh=False)]


# ------------------------------------------------------------------------ the outsider


MALLORY = Signer.generate("mallory")


def _forged(m: Message) -> list[Message]:
    """The genuine fields, signed by a key that is not the sender's pinned one."""
    return [sign(m.fields, Signer(m.sender, Signer.generate("x").private_key))]


def _unsigned(m: Message) -> list[Message]:
    return [dataclasses.replace(m, signature=bytes(64))]


def _tampered(m: Message) -> list[Message]:
    """The genuine signature over other content (a payload the sender never signed)."""
    return [dataclasses.replace(m, payload={**m.payload, "salt": "00" * 32})]


def _unknown_sender(m: Message) -> list[Message]:
    fields = MessageFields(m.session_id, "mallory", m.recipient, m.seq, m.kind, m.payload)
    return [sign(fields, MALLORY)]


def _redirected(m: Message) -> list[Message]:
    """The genuine message, signature and all, delivered to other parties."""
    others = {"publisher", "owner-1", "owner-2", "dealer"} - {m.sender, m.recipient}
    return [dataclasses.replace(m, recipient=r) for r in sorted(others)]


def _foreign_session(m: Message) -> list[Message]:
    return [dataclasses.replace(m, session_id="an-earlier-round")]


def _forged_abort(m: Message) -> list[Message]:
    """An ``abort`` that claims to come from the sender: it would end the round if taken."""
    fields = MessageFields(m.session_id, m.sender, m.recipient, m.seq, Kind.ABORT, {"reason": "x"})
    return [sign(fields, Signer(m.sender, Signer.generate("x").private_key))]


ATTACKS: dict[str, Callable[[Message], list[Message]]] = {
    "forged": _forged,
    "unsigned": _unsigned,
    "tampered": _tampered,
    "unknown-sender": _unknown_sender,
    "redirected": _redirected,
    "foreign-session": _foreign_session,
    "forged-abort": _forged_abort,
}


class Outsider:
    """A network hook: before (and after) every genuine message, the outsider's injections;
    copies of every message seen so far are replayed too."""

    def __init__(self, attacks, kinds=None):
        self.attacks = attacks
        self.kinds = kinds
        self.seen: list[Message] = []
        self.injected = 0

    def __call__(self, m: Message) -> list[Message]:
        if self.kinds is not None and m.kind not in self.kinds:
            return [m]
        before = [x for a in self.attacks for x in a(m)]
        replays = [s for s in self.seen if s.recipient == m.recipient]  # seq already used
        self.seen.append(m)
        self.injected += len(before) + len(replays) + 1
        return [*before, *replays, m, m]  # ... and the genuine message twice


def _assert_same_release(ref: Round, rnd: Round) -> None:
    pub = rnd.publisher
    assert pub.state == "done", pub.abort_reason
    assert pub.directions.tobytes() == ref.publisher.directions.tobytes()
    assert pub.noisy_means.tobytes() == ref.publisher.noisy_means.tobytes()
    assert _kinds(rnd) == _kinds(ref)
    assert _kinds(rnd).count("spend") == 1 and _kinds(rnd)[-1] == "release"
    assert pub.accountant.spent == PrivacyBudget(1.0, 1e-5)
    assert all(o.state == "done" for o in rnd.owners.values())
    if rnd.dealer is not None:
        assert rnd.dealer.state == "done"


# Every kind a round sends, each the target of every attack at once.
KINDS = [
    ("trusted", Kind.ROUND_START),
    ("trusted", Kind.LEDGER_ENTRIES),
    ("trusted", Kind.DEALER_SHARE),
    ("none", Kind.KEY_SHARE),
    ("trusted", Kind.COMMITMENT),
    ("trusted", Kind.MEAN_SHARE),
    ("trusted", Kind.NOISY_MEANS),
    ("trusted", Kind.SCATTER_SHARE),
    ("trusted", Kind.RESULT),
    ("trusted", Kind.PROJECTIONS),
    ("trusted", Kind.RELEASE),
]


@pytest.mark.parametrize(("dealer", "kind"), KINDS)
def test_every_injection_at_each_phase_leaves_the_round_completing(dealer, kind):
    ref = _round(dealer=dealer, release="noisy-projections")
    run_round(ref)
    rnd = _round(dealer=dealer, release="noisy-projections")
    outsider = Outsider(list(ATTACKS.values()), kinds={kind})
    net = run_round(rnd, hook=outsider)
    assert outsider.injected > 0
    _assert_same_release(ref, rnd)
    assert rnd.publisher.projections.tobytes() == ref.publisher.projections.tobytes()
    assert net.refusals  # every injection was refused (and logged), none aborted anything


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_each_injection_throughout_the_round_leaves_it_completing(attack, caplog):
    ref = _round()
    run_round(ref)
    rnd = _round()
    with caplog.at_level("WARNING", logger="ppdp.federated.simulate"):
        net = run_round(rnd, hook=Outsider([ATTACKS[attack]]))
    _assert_same_release(ref, rnd)
    assert len(net.refusals) > 20
    assert "drops a message" in caplog.text  # the operator's log says what was dropped


def test_an_outsider_cannot_burn_round_after_round():
    """The issue's reproduction: rounds on one ledger, each under attack from start to end.
    Every round completes, so every ε spent bought a release (before: 1 of 1 spent, nothing
    released, round after round)."""
    ids = ["publisher", "owner-1", "owner-2", "dealer"]
    signers = {i: Signer.generate(i) for i in ids}
    keys = {i: s.public_key for i, s in signers.items()}
    acct = create_publishing_accountant(
        None,
        publisher=signers["publisher"],
        parties={k: v for k, v in keys.items() if k != "publisher"},
        dataset_id="shared",
        total=PrivacyBudget(3.0, 1e-4),
    )
    X, y = _data(n=120)
    outsider = Outsider(list(ATTACKS.values()))  # it also replays the earlier rounds' messages
    for r in range(3):
        cfg = RoundConfig(
            session_id=f"round-{r}",
            publisher="publisher",
            owners=("owner-1", "owner-2"),
            dealer="dealer",
            epsilon=1.0,
            delta=1e-5,
            n_features=3,
            classes=(0, 1),
            class_counts=(int(np.sum(y == 0)), int(np.sum(y == 1))),
        )
        pub = FederatedPublisher(  # a seeded dealer: an experiment
            cfg, signer=signers["publisher"], keys=keys, accountant=acct, allow_seeded=True
        )
        parties = {
            "publisher": pub,
            "dealer": NoiseDealer(cfg, signer=signers["dealer"], keys=keys, random_state=r),
            **{
                o: DataOwner(cfg, signer=signers[o], keys=keys, X=X[j::2], y=y[j::2])
                for j, o in enumerate(("owner-1", "owner-2"))
            },
        }
        net = Network(parties, hook=outsider, session_id=cfg.session_id)
        net.run(pub.start())
        assert all(p.state == "done" for p in parties.values()), pub.abort_reason
    kinds = [e.kind for e in acct.ledger.entries()]
    assert kinds.count("spend") == 3 and kinds.count("release") == 3
    assert "fed-abort" not in kinds
    assert acct.spent == PrivacyBudget(3.0, 3e-5)


# ------------------------------------------------------------------------ the charge point


def test_nothing_is_spent_until_every_owner_has_committed():
    """The spend happens when the last commitment arrives, not before."""
    rnd = _round()
    spent_at: list[tuple[int, bool]] = []
    handle = rnd.publisher.handle

    def observed(message):
        out = handle(message)
        if message.kind == Kind.COMMITMENT:
            n = len(rnd.publisher._commitments)
            spent_at.append((n, not rnd.publisher.accountant.spent.is_zero))
        return out

    rnd.publisher.handle = observed
    run_round(rnd)
    assert spent_at == [(1, False), (2, False), (3, True)]
    kinds = _kinds(rnd)
    assert kinds.index("spend") < kinds.index("fed-message")  # before any share arrived


@pytest.mark.parametrize("lost", [Kind.ROUND_START, Kind.DEALER_SHARE, Kind.COMMITMENT])
def test_a_round_stopped_before_the_charge_point_spends_nothing(lost):
    # An on-path outsider can drop a message (here owner-3's copy of it): before the last
    # commitment the round aborts with nothing spent and nothing written to the ledger.
    rnd = _round()
    net = run_round(
        rnd, hook=lambda m: [] if m.kind == lost and "owner-3" in (m.sender, m.recipient) else [m]
    )
    assert net.delivered > 0
    assert rnd.publisher.state == "aborted"
    assert _kinds(rnd) == ["genesis", "fed-start", "fed-abort"]  # no spend
    assert rnd.publisher.accountant.spent.is_zero
    assert all(o.noisy_means is None for o in rnd.owners.values())


def test_a_session_stopped_before_the_charge_point_never_runs_again():
    """Its messages are validly signed for that session with seq 0, 1, ...: run again, the
    session would take an outsider's replays of them (an old commitment, an old dealer share)
    as genuine and abort after the charge. So the publisher refuses to start it again."""
    rnd = _round()
    old: list[Message] = []

    def record_and_lose(m):
        old.append(m)
        return [] if (m.kind, m.sender) == (Kind.COMMITMENT, "owner-3") else [m]

    run_round(rnd, hook=record_and_lose)
    assert rnd.publisher.state == "aborted" and rnd.publisher.accountant.spent.is_zero
    again = FederatedPublisher(
        rnd.config,
        signer=rnd.signers["publisher"],
        keys={k: s.public_key for k, s in rnd.signers.items()},
        accountant=rnd.publisher.accountant,
    )
    with pytest.raises(ParameterError, match=r"session_id \(.*\) was already started"):
        again.start()
    assert {m.kind for m in again.abort(again.abort_reason)} == {Kind.ABORT}
    assert _kinds(rnd) == ["genesis", "fed-start", "fed-abort"]
    assert any(m.kind == Kind.COMMITMENT for m in old)  # what a replay would have used


# ------------------------------------------------------------------------ the dealer


def test_the_dealer_ends_with_the_round():
    # done only when the publisher released; aborted when the round aborted after dealing
    rnd = _round()
    run_round(rnd)
    assert rnd.dealer.state == "done"
    rnd = _round()
    run_round(rnd, hook=lambda m: [] if m.kind == Kind.SCATTER_SHARE else [m])
    assert rnd.publisher.state == "aborted"
    assert rnd.dealer.state == "aborted"  # its process exits 3, not 0 "done"


# ------------------------------------------------------------------------ label errors


def test_owner_label_error_names_the_column_not_the_value(tmp_path):
    X, y = _data(n=60)
    y = y.copy()
    y[4] = SECRET_LABEL
    parts = [(X[0::2], y[0::2]), (X[1::2], y[1::2])]
    from ppdp.federated import simulate_round

    with pytest.raises(DataValidationError) as info:
        simulate_round(parts, epsilon=1.0, delta=1e-5, classes=[0, 1], workdir=tmp_path)
    msg = str(info.value)
    assert "y (the labels)" in msg and "[0, 1]" in msg and "\n" not in msg
    assert str(SECRET_LABEL) not in msg
    ledger = tmp_path / "publisher-ledger.db"
    if ledger.exists():
        with Ledger.open(ledger) as led:
            assert "spend" not in [e.kind for e in led.entries()]


# ------------------------------------------------------------------------ over HTTP


def _http_outsider(urls: dict[str, str], wire: list, stop: threading.Event) -> dict:
    """Post forgeries, garbage, and verbatim or redirected copies of every request seen on
    the wire, until ``stop``."""
    sent = {"posts": 0, "accepted": 0}
    key = Signer.generate("x").private_key
    by_url = {u: p for p, u in urls.items()}
    with httpx.Client(timeout=5.0) as http:
        while not stop.is_set():
            posts: list[tuple[str, bytes, dict]] = []
            for target in urls:
                for claimed in urls:
                    if claimed == target:
                        continue
                    for seq in range(3):
                        abort = {"reason": "x"}
                        fields = MessageFields("s-1", claimed, target, seq, Kind.ABORT, abort)
                        forged = sign(fields, Signer(claimed, key))
                        fake = {"X-PPDP-Sender": claimed, "X-PPDP-Body-Signature": "A" * 88}
                        posts.append((target, forged.to_json().encode(), fake))
                        posts.append((target, forged.to_json().encode(), {}))
                        stripped = dataclasses.replace(forged, signature=bytes(64))
                        posts.append((target, stripped.to_json().encode(), {}))
                mallory = MessageFields("s-1", "mallory", target, 0, Kind.ABORT, {"reason": "x"})
                posts.append((target, sign(mallory, MALLORY).to_json().encode(), {}))
                posts.append((target, b'{"not": "a message"}', {}))
            for url, body, headers in list(wire):  # what an eavesdropper copied
                recipient = by_url[url.removesuffix("/messages")]
                posts.append((recipient, body, headers))
                other = next(p for p in urls if p != recipient)
                posts.append((other, body, headers))
            for target, body, headers in posts:
                if stop.is_set():
                    break
                try:
                    r = http.post(f"{urls[target]}/messages", content=body, headers=headers)
                except httpx.HTTPError:
                    continue
                sent["posts"] += 1
                sent["accepted"] += r.status_code == 200
    return sent


def test_http_round_completes_while_an_outsider_injects(tmp_path, monkeypatch):
    from fed_helpers import deploy, join, run_in_threads

    from ppdp.federated.http import Timeouts
    from ppdp.federated.http._client import PeerClient

    timeouts = Timeouts(request=5.0, retries=2, startup=30.0, phase=10.0, round=40.0, linger=0.3)
    dep = deploy(
        tmp_path, owners=3, dealer="trusted", release="noisy-projections", timeouts=timeouts
    )
    wire: list[tuple[str, bytes, dict]] = []
    post = PeerClient.post

    async def tapped(self, url, body, **kw):  # the eavesdropper's copy of every request
        headers = {"content-type": kw.get("content_type", "application/json")}
        headers.update(kw.get("headers") or {})
        wire.append((url, body, headers))
        return await post(self, url, body, **kw)

    monkeypatch.setattr(PeerClient, "post", tapped)
    stop = threading.Event()
    report: dict = {}
    attacker = threading.Thread(
        target=lambda: report.update(_http_outsider(dict(dep.urls), wire, stop))
    )
    attacker.start()
    try:
        threads, out = run_in_threads(dep, list(dep.roles))
        join(threads, timeout=90)
    finally:
        stop.set()
        attacker.join(30)
    assert {p: o.state for p, o in out.items()} == dict.fromkeys(dep.roles, "done"), {
        p: o.reason for p, o in out.items()
    }
    assert report["posts"] > 50 and wire
    assert sum(o.stats["rejected"] for o in out.values()) > 20  # refused and logged
    with Ledger.open(dep.ledger) as led:
        kinds = [e.kind for e in led.entries()]
    assert kinds.count("spend") == 1 and kinds[-1] == "release" and "fed-abort" not in kinds


def test_http_dealer_exit_status_after_an_aborted_round_is_not_zero(tmp_path):
    """An owner gives up after the charge: the round aborts, and the dealer — which had
    dealt its shares long before — exits 3 with one line, not 0 "done"."""
    from fed_helpers import deploy, join, run_in_threads, spawn

    from ppdp.federated.http import Timeouts
    from ppdp.federated.http._parties import build_parts

    timeouts = Timeouts(request=2.0, retries=2, startup=30.0, phase=5.0, round=20.0, linger=0.0)
    dep = deploy(tmp_path, owners=2, dealer="trusted", timeouts=timeouts)

    def build(cfg):
        parts = build_parts(cfg)
        if cfg.party == "owner-2":
            role = parts.node.role
            handle = role.handle

            def gives_up(m):
                if m.kind == Kind.NOISY_MEANS:
                    return role.abort("owner-2 gives up after the charge (test)")
                return handle(m)

            role.handle = gives_up
        return parts

    dealer = spawn(dep, "dealer", cli=True)
    try:
        threads, out = run_in_threads(dep, [p for p in dep.roles if p != "dealer"], build=build)
        join(threads)
        code = dealer.wait(60)
    finally:
        if dealer.poll() is None:
            dealer.kill()
            dealer.wait()
    assert out["publisher"].state == "aborted"
    assert code == 3
    err = (tmp_path / "dealer.proc.log").read_text().strip().splitlines()
    assert len(err) == 1 and "aborted" in err[0] and "gives up" in err[0], err
    with Ledger.open(dep.ledger) as led:
        kinds = [e.kind for e in led.entries()]
    assert kinds.count("spend") == 1 and "fed-abort" in kinds and "release" not in kinds


def test_http_owner_label_error_names_the_column_not_the_value(tmp_path, capsys):
    import pandas as pd
    from fed_helpers import deploy

    from ppdp.cli import main as cli_main

    dep = deploy(tmp_path, owners=2)
    from ppdp.federated.http import load_config

    csv = load_config(dep.configs["owner-1"]).data.file
    df = pd.read_csv(csv)
    df.loc[3, "cls"] = "secret-diagnosis"
    df.to_csv(csv, index=False)
    capsys.readouterr()
    assert cli_main(["federate", "owner", "--config", str(dep.configs["owner-1"])]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'cls'" in err[0], err
    assert "secret-diagnosis" not in err[0]
