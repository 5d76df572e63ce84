"""Fault catalogue of RELIABILITY.md (d), at the level of the roles (in-process network).

Every fault must end in one of three ways: the round completes with the same result as a
clean run (replays, reordering, a message of another session, anything that does not
authenticate: an outsider cannot stop a round); it aborts before the charge point (the last
owner's commitment) and spends nothing; or a party holding a pinned key breaks the protocol
after the charge, and the round aborts, releases nothing and keeps the spend recorded in
the publisher's ledger.
"""

from __future__ import annotations

import base64
import dataclasses
import sqlite3
from collections.abc import Callable

import numpy as np
import pytest

from ppdp import PrivacyBudget
from ppdp.exceptions import (
    BudgetExceededError,
    DataValidationError,
    LedgerIntegrityError,
    ParameterError,
)
from ppdp.federated import Kind, Message, MessageFields, sign
from ppdp.federated.messages import encode_array
from ppdp.federated.simulate import Round, build_round, run_round
from ppdp.ledger import Ledger, verify


def _data(n=240, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = (X[:, 0] > 0).astype(int)
    return X, y


def _round(m=3, *, dealer="trusted", seed=11, **kw) -> Round:
    X, y = _data()
    parts = [(X[j::m], y[j::m]) for j in range(m)]
    return build_round(parts, epsilon=1.0, delta=1e-5, dealer=dealer, random_state=seed, **kw)


def _kinds(rnd: Round) -> list[str]:
    return [e.kind for e in rnd.publisher.ledger.entries(refresh=False)]


def assert_aborted_uncharged(rnd: Round) -> None:
    """Aborted before the charge point: nothing spent, nothing released; the ledger shows
    the start and the abort (so the session id is never run again)."""
    pub = rnd.publisher
    assert pub.state == "aborted"
    assert pub.spend_record is None and pub.directions is None
    assert _kinds(rnd) == ["genesis", "fed-start", "fed-abort"]
    assert pub.ledger.entries(refresh=False)[-1].payload["charged"] is False
    assert pub.accountant.spent.is_zero
    for owner in rnd.owners.values():
        assert owner.state == "aborted"
        assert owner.noisy_means is None and owner.directions is None


def assert_aborted_and_charged(rnd: Round) -> None:
    """Nothing released, the spend stays, the abort is recorded; every replica verifies."""
    pub = rnd.publisher
    assert pub.state == "aborted"
    assert pub.directions is None or pub.release_entry is None
    kinds = _kinds(rnd)
    assert "release" not in kinds and "fed-result" not in kinds
    assert kinds.count("spend") == 1 and "fed-abort" in kinds
    assert pub.accountant.spent == PrivacyBudget(1.0, 1e-5)
    for owner in rnd.owners.values():
        assert owner.state == "aborted"
        assert owner.directions is None


def resign(rnd: Round, msg: Message, **changes) -> Message:
    """A message altered by its own sender (a malicious party): validly signed."""
    return sign(dataclasses.replace(msg.fields, **changes), rnd.signers[msg.sender])


def only(kind: str, sender: str | None = None, recipient: str | None = None):
    def match(m: Message) -> bool:
        return (
            m.kind == kind
            and (sender is None or m.sender == sender)
            and (recipient is None or m.recipient == recipient)
        )

    return match


def hook_once(match: Callable[[Message], bool], action: Callable[[Message], list[Message]]):
    state = {"done": False}

    def hook(m: Message) -> list[Message]:
        if not state["done"] and match(m):
            state["done"] = True
            return action(m)
        return [m]

    return hook


def clean_result(**kw):
    rnd = _round(**kw)
    run_round(rnd)
    assert rnd.publisher.state == "done"
    return rnd


# ----------------------------------------------------------------------------- happy path


def test_clean_round_ledger_contents():
    rnd = clean_result()
    kinds = _kinds(rnd)
    assert kinds[:4] == ["genesis", "fed-start", "spend", "fed-round"]
    # the round entry holds every owner's signed commitment (envelopes: digests only)
    round_entry = rnd.publisher.ledger.entries(refresh=False)[3]
    commitments = round_entry.payload["commitments"]
    assert [c["sender"] for c in commitments] == list(rnd.config.owners)
    assert all(c["kind"] == "commitment" and "payload" not in c for c in commitments)
    assert kinds.count("fed-message") == 6  # 3 mean + 3 scatter shares, as envelopes
    assert kinds[-1] == "release"
    # the spend precedes every share's envelope
    assert kinds.index("spend") < kinds.index("fed-message")
    # envelopes, not share values, are in the ledger
    for e in rnd.publisher.ledger.entries(refresh=False):
        if e.kind == "fed-message":
            assert set(e.payload["envelope"]) >= {"payload_sha256", "signature"}
            assert "payload" not in e.payload["envelope"]
    for owner in rnd.owners.values():
        assert owner.state == "done"
        assert [e.hash for e in owner.replica.entries()] == [
            e.hash for e in rnd.publisher.ledger.entries(refresh=False)
        ]
    assert rnd.dealer.state == "done"  # told of the release: its exit status says so


# ----------------------------------------------------------------------------- ledger faults


def _holds_spend(m: Message) -> bool:
    return any(r["kind"] == "spend" for r in m.payload.get("entries", []))


def test_tampered_ledger_entry_aborts_the_round():
    rnd = _round()

    def tamper(m: Message) -> list[Message]:
        rows = [dict(r) for r in m.payload["entries"]]
        spend = next(r for r in rows if r["kind"] == "spend")
        body = bytearray(base64.b64decode(spend["body"]))
        body[len(body) // 2] ^= 0x01
        spend["body"] = base64.b64encode(bytes(body)).decode()
        return [resign(rnd, m, payload={"entries": rows})]

    match = only(Kind.LEDGER_ENTRIES, recipient="owner-2")
    run_round(rnd, hook=hook_once(lambda m: match(m) and _holds_spend(m), tamper))
    assert "hash mismatch" in (rnd.owners["owner-2"].abort_reason or "") or "entry 1" in (
        rnd.owners["owner-2"].abort_reason or ""
    )
    assert_aborted_and_charged(rnd)
    # no owner ever sent a share: the tampered replica refused before the spend was verified
    assert _kinds(rnd).count("fed-message") <= 2


def test_dropped_ledger_entries_keep_owners_from_sending_shares():
    # Without the spend in its replica an owner never sends a share; the round stalls, aborts.
    rnd = _round()
    run_round(rnd, hook=lambda m: [] if m.kind == Kind.LEDGER_ENTRIES else [m])
    assert _kinds(rnd).count("fed-message") == 0
    assert_aborted_and_charged(rnd)


def test_truncated_entries_batch_is_a_gap():
    rnd = _round()

    def drop_one(m: Message) -> list[Message]:
        rows = list(m.payload["entries"])
        del rows[0]  # the publisher "forgot" the spend: the replica sees a gap
        return [resign(rnd, m, payload={"entries": rows})]

    match = only(Kind.LEDGER_ENTRIES, recipient="owner-1")
    run_round(rnd, hook=hook_once(lambda m: match(m) and _holds_spend(m), drop_one))
    assert "truncated or rolled back" in rnd.owners["owner-1"].abort_reason
    assert_aborted_and_charged(rnd)


def test_rolled_back_publisher_ledger_is_detected_by_the_replicas(tmp_path):
    # Round 1 on a ledger file; then the publisher "restores an old backup" (a fresh ledger
    # with the same keys) for round 2: the owners' replicas do not match and they refuse.
    rnd1 = _round(workdir=tmp_path / "r1")
    run_round(rnd1)
    assert rnd1.publisher.state == "done"
    X, y = _data()
    parts = [(X[j::3], y[j::3]) for j in range(3)]
    rnd2 = build_round(parts, epsilon=1.0, delta=1e-5, random_state=2, workdir=tmp_path / "r2")
    # reuse round 1's replicas with round 2's (different) ledger
    for o, owner in rnd2.owners.items():
        owner.replica.close()
        owner.replica._ledger = Ledger.open(rnd1.replica_paths[o])
    run_round(rnd2)
    assert all(
        "forked or rewritten" in (o.abort_reason or "") or "entry 0" in (o.abort_reason or "")
        for o in rnd2.owners.values()
    )
    assert rnd2.publisher.state == "aborted"


def test_truncated_replica_file_is_refused_on_open(tmp_path):
    rnd = _round(workdir=tmp_path)
    run_round(rnd)
    path = rnd.replica_paths["owner-1"]
    for o in rnd.owners.values():
        o.replica.close()
    con = sqlite3.connect(path)
    con.execute('DELETE FROM entries WHERE "index" >= 5')
    con.commit()
    con.close()
    with pytest.raises(LedgerIntegrityError):
        verify(path)
    with pytest.raises(LedgerIntegrityError, match=r"truncat|rolled back|checkpoint"):
        _round(workdir=tmp_path / "again").owners["owner-1"].__class__(
            rnd.config,
            signer=rnd.signers["owner-1"],
            keys={k: s.public_key for k, s in rnd.signers.items()},
            X=np.zeros((1, 3)),
            y=[0],
            replica_path=path,
        )


# ----------------------------------------------------------------------------- messages


def _same_release(a: Round, b: Round) -> None:
    assert b.publisher.state == "done"
    assert a.publisher.noisy_means.tobytes() == b.publisher.noisy_means.tobytes()
    assert a.publisher.directions.tobytes() == b.publisher.directions.tobytes()


def test_every_message_replayed_gives_the_same_result_and_budget():
    ref = clean_result()
    rnd = _round()
    net = run_round(rnd, hook=lambda m: [m, m])
    _same_release(ref, rnd)
    assert _kinds(rnd).count("spend") == 1 and _kinds(rnd) == _kinds(ref)
    assert any("replayed copy" in r for r in net.refusals)


@pytest.mark.parametrize("dealer", ["trusted", "none"])
def test_random_delivery_orders_give_identical_output(dealer):
    ref = clean_result(dealer=dealer)
    rng = np.random.default_rng(0)  # delivery order only, not privacy noise
    for _ in range(5):
        rnd = _round(dealer=dealer)
        run_round(rnd, shuffle=rng)
        _same_release(ref, rnd)


def test_forged_signature_is_dropped_and_the_round_completes():
    # An outsider cannot sign as a party: its copy of owner-2's share, signed with another
    # key, is dropped (logged) and the genuine share completes the charged round.
    ref = clean_result()
    rnd = _round()

    def forge(m: Message) -> list[Message]:
        return [sign(m.fields, rnd.signers["owner-3"]), m]

    net = run_round(rnd, hook=hook_once(only(Kind.MEAN_SHARE, sender="owner-2"), forge))
    _same_release(ref, rnd)
    assert any("invalid signature" in r for r in net.refusals)
    assert _kinds(rnd) == _kinds(ref)


def test_unknown_sender_is_dropped_and_the_round_completes():
    ref = clean_result()
    rnd = _round()
    from ppdp.ledger import Signer

    mallory = Signer.generate("mallory")

    def inject(m: Message) -> list[Message]:
        bad = sign(
            MessageFields(m.session_id, "mallory", "publisher", 0, m.kind, m.payload), mallory
        )
        return [bad, m]

    net = run_round(rnd, hook=hook_once(only(Kind.MEAN_SHARE, sender="owner-1"), inject))
    _same_release(ref, rnd)
    assert any("unknown sender" in r for r in net.refusals)


def test_a_forged_share_replacing_the_genuine_one_stalls_after_the_charge():
    # What an outsider *can* do: drop a message in flight (here, replace it by a forgery).
    # That is a network that loses a message: the round stalls and aborts, charged. TLS
    # and a network that delivers are the defence (docs/federated.md, "Outsiders").
    rnd = _round()

    def forge(m: Message) -> list[Message]:
        return [sign(m.fields, rnd.signers["owner-3"])]

    run_round(rnd, hook=hook_once(only(Kind.MEAN_SHARE, sender="owner-2"), forge))
    assert "stalled" in rnd.publisher.abort_reason
    assert_aborted_and_charged(rnd)


def test_nan_share_aborts():
    rnd = _round()

    def nan(m: Message) -> list[Message]:
        arr = np.zeros((2, 3))
        arr[0, 1] = np.nan
        data = base64.b64encode(arr.astype("<f8").tobytes()).decode()
        payload = {**m.payload, "sums": {"shape": [2, 3], "data": data}}
        return [resign(rnd, m, payload=payload)]

    run_round(rnd, hook=hook_once(only(Kind.MEAN_SHARE, sender="owner-1"), nan))
    assert "NaN" in rnd.publisher.abort_reason
    assert_aborted_and_charged(rnd)


def test_wrong_shape_share_aborts():
    rnd = _round()

    def wrong(m: Message) -> list[Message]:
        payload = {**m.payload, "sums": encode_array(np.zeros((2, 4)))}
        return [resign(rnd, m, payload=payload)]

    run_round(rnd, hook=hook_once(only(Kind.MEAN_SHARE, sender="owner-3"), wrong))
    assert "shape" in rnd.publisher.abort_reason
    assert_aborted_and_charged(rnd)


def test_off_grid_share_aborts():
    # owner-3 commits to an off-grid share and sends it: the grid check refuses it
    rnd = _round()
    off = {"sums": encode_array(np.full((2, 3), 0.1234567)), "salt": "00" * 32}

    def commit(m: Message) -> list[Message]:
        from ppdp.federated.messages import payload_digest

        return [resign(rnd, m, payload={**m.payload, "mean_share_sha256": payload_digest(off)})]

    hooks = [
        hook_once(only(Kind.COMMITMENT, sender="owner-3"), commit),
        hook_once(only(Kind.MEAN_SHARE, sender="owner-3"), lambda m: [resign(rnd, m, payload=off)]),
    ]

    def hook(m: Message) -> list[Message]:
        out = [m]
        for h in hooks:
            out = [x for y in out for x in h(y)]
        return out

    run_round(rnd, hook=hook)
    assert "grid" in rnd.publisher.abort_reason
    assert_aborted_and_charged(rnd)


def test_share_unlike_its_commitment_aborts():
    # an owner that changes its share after the charge (validly signed): refused, aborted
    rnd = _round()

    def other(m: Message) -> list[Message]:
        return [resign(rnd, m, payload={**m.payload, "salt": "11" * 32})]

    run_round(rnd, hook=hook_once(only(Kind.SCATTER_SHARE, sender="owner-2"), other))
    assert "differs from its owner's commitment" in rnd.publisher.abort_reason
    assert_aborted_and_charged(rnd)
    assert rnd.publisher.noisy_means is not None  # the first phase was released


def test_second_share_from_the_same_owner_aborts():
    rnd = _round()

    def twice(m: Message) -> list[Message]:
        return [m, resign(rnd, m, seq=m.seq + 1)]

    run_round(rnd, hook=hook_once(only(Kind.MEAN_SHARE, sender="owner-1"), twice))
    assert "not expecting a mean share" in rnd.publisher.abort_reason
    assert_aborted_and_charged(rnd)


def test_message_of_another_session_is_refused_without_aborting():
    ref = clean_result()
    rnd = _round()

    def stale(m: Message) -> list[Message]:
        old = resign(rnd, m, session_id="old-session")
        return [old, m]

    net = run_round(rnd, hook=hook_once(only(Kind.MEAN_SHARE, sender="owner-1"), stale))
    _same_release(ref, rnd)
    assert any("old-session" in r for r in net.refusals)


def test_publisher_cannot_lower_the_noise_by_changing_the_config():
    rnd = _round()

    def lower(m: Message) -> list[Message]:
        cfg = dict(m.payload["config"], epsilon=5.0)
        return [resign(rnd, m, payload={**m.payload, "config": cfg})]

    run_round(rnd, hook=hook_once(only(Kind.ROUND_START, recipient="owner-2"), lower))
    assert "config differs" in rnd.owners["owner-2"].abort_reason
    assert_aborted_uncharged(rnd)  # refused before the charge point: nothing spent


def test_result_not_in_the_ledger_is_refused():
    """A publisher that tells an owner another direction than the one it recorded: the owner
    refuses it and keeps the evidence (the signed message and the signed ledger entry)."""
    rnd = _round()

    def fake(m: Message) -> list[Message]:
        payload = {**m.payload, "directions": encode_array(np.ones((3, 1)) / np.sqrt(3))}
        return [resign(rnd, m, payload=payload)]

    run_round(rnd, hook=hook_once(only(Kind.RESULT, recipient="owner-1"), fake))
    assert "differ from those recorded" in rnd.owners["owner-1"].abort_reason
    assert rnd.owners["owner-1"].state == "aborted"


# ----------------------------------------------------------------------------- drop-outs


@pytest.mark.parametrize(
    ("dealer", "phase"),
    [
        ("trusted", Kind.DEALER_SHARE),
        ("none", Kind.KEY_SHARE),
        ("trusted", Kind.MEAN_SHARE),
        ("trusted", Kind.SCATTER_SHARE),
        ("trusted", Kind.ROUND_START),
    ],
)
def test_a_party_dropping_out_in_each_phase_aborts_and_releases_nothing(dealer, phase):
    rnd = _round(dealer=dealer)
    sender = {
        Kind.DEALER_SHARE: "dealer",
        Kind.KEY_SHARE: "owner-2",
        Kind.MEAN_SHARE: "owner-2",
        Kind.SCATTER_SHARE: "owner-3",
        Kind.ROUND_START: "publisher",
    }[phase]
    dead = {"on": False}

    def hook(m: Message) -> list[Message]:
        if m.sender == sender and m.kind == phase:
            dead["on"] = True
        if dead["on"] and m.sender == sender:
            return []  # the party is gone: nothing more from it
        return [m]

    run_round(rnd, hook=hook)
    assert rnd.publisher.state == "aborted"
    assert "release" not in _kinds(rnd)
    if phase in (Kind.DEALER_SHARE, Kind.KEY_SHARE, Kind.ROUND_START):
        # before every owner committed: the charge point was never reached
        assert_aborted_uncharged(rnd)
        return
    assert _kinds(rnd).count("spend") == 1
    if phase == Kind.SCATTER_SHARE:
        # the means were computed (all masks cancelled) and recorded; no direction
        assert rnd.publisher.noisy_means is not None and rnd.publisher.directions is None


def test_drop_during_projections_releases_nothing():
    rnd = _round(release="noisy-projections")
    run_round(
        rnd, hook=lambda m: [] if (m.kind == Kind.PROJECTIONS and m.sender == "owner-1") else [m]
    )
    assert rnd.publisher.state == "aborted"
    assert "release" not in _kinds(rnd) and rnd.publisher.projections is None


def test_budget_exceeded_sends_nothing():
    rnd = _round(budget_total=PrivacyBudget(0.5, 1e-5))
    with pytest.raises(BudgetExceededError):
        rnd.publisher.start()
    assert _kinds(rnd) == ["genesis"]
    # The caller's abort() tells every other party at once (no wait for a phase timeout).
    sent = rnd.publisher.abort(rnd.publisher.abort_reason)
    assert rnd.publisher.state == "aborted"
    assert {m.kind for m in sent} == {Kind.ABORT}
    assert set(rnd.config.owners) <= {m.recipient for m in sent}
    assert _kinds(rnd) == ["genesis"]


def test_a_session_id_is_charged_once(tmp_path):
    # Re-running a charged session would release fresh noise under one recorded charge.
    rnd = _round(workdir=tmp_path, budget_total=PrivacyBudget(3.0, 1e-4))
    run_round(rnd)
    assert rnd.publisher.state == "done"
    from ppdp.federated import FederatedPublisher

    again = FederatedPublisher(
        rnd.config,
        signer=rnd.signers["publisher"],
        keys={k: s.public_key for k, s in rnd.signers.items()},
        accountant=rnd.publisher.accountant,
    )
    with pytest.raises(ParameterError, match="already charged"):
        again.start()
    assert {m.kind for m in again.abort(again.abort_reason)} == {Kind.ABORT}
    assert again.state == "aborted"
    assert _kinds(rnd).count("spend") == 1


def test_dealer_refusing_the_config_aborts_the_round():
    rnd = _round()

    def lower(m: Message) -> list[Message]:
        cfg = dict(m.payload["config"], mask_scale=1.0)
        return [resign(rnd, m, payload={**m.payload, "config": cfg})]

    run_round(rnd, hook=hook_once(only(Kind.ROUND_START, recipient="dealer"), lower))
    assert "config differs" in rnd.dealer.abort_reason
    assert_aborted_uncharged(rnd)
    assert "dealer aborted" in rnd.publisher.abort_reason


def test_rounds_share_one_publishing_ledger_and_the_replicas_extend(tmp_path):
    """Two sessions on one budget ledger: the owners' replicas from round 1 are reopened
    (verified against their checkpoints) and extended by round 2; a third round that does not
    fit the ledger's total is refused before anything is sent."""
    from ppdp.federated import (
        DataOwner,
        FederatedPublisher,
        NoiseDealer,
        RoundConfig,
        create_publishing_accountant,
    )
    from ppdp.federated.simulate import Network
    from ppdp.ledger import Signer

    ids = ["publisher", "owner-1", "owner-2", "dealer"]
    signers = {i: Signer.generate(i) for i in ids}
    keys = {i: s.public_key for i, s in signers.items()}
    acct = create_publishing_accountant(
        tmp_path / "pub.db",
        publisher=signers["publisher"],
        parties={k: v for k, v in keys.items() if k != "publisher"},
        dataset_id="shared",
        total=PrivacyBudget(2.0, 1e-4),
    )
    X, y = _data(n=120)
    heads = []
    for session in ("s-1", "s-2", "s-3"):
        cfg = RoundConfig(
            session_id=session,
            publisher="publisher",
            owners=("owner-1", "owner-2"),
            dealer="dealer",
            epsilon=1.0,
            delta=1e-5,
            n_features=3,
            classes=(0, 1),
            class_counts=(int(np.sum(y == 0)), int(np.sum(y == 1))),
        )
        pub = FederatedPublisher(  # seeded owners and dealer: an experiment
            cfg, signer=signers["publisher"], keys=keys, accountant=acct, allow_seeded=True
        )
        owners = {
            o: DataOwner(
                cfg,
                signer=signers[o],
                keys=keys,
                X=X[j::2],
                y=y[j::2],
                replica_path=tmp_path / f"{o}.db",
                random_state=j,
            )
            for j, o in enumerate(("owner-1", "owner-2"))
        }
        dealer = NoiseDealer(cfg, signer=signers["dealer"], keys=keys, random_state=9)
        if session == "s-3":
            with pytest.raises(BudgetExceededError):
                pub.start()
            break
        net = Network({"publisher": pub, **owners, "dealer": dealer}, session_id=session)
        net.run(pub.start())
        assert pub.state == "done" and all(o.state == "done" for o in owners.values())
        heads.append(acct.ledger.head)
        for o in owners.values():
            assert o.replica_ledger.head == acct.ledger.head
            o.replica.close()
    assert len(heads) == 2 and heads[0] != heads[1]
    assert acct.spent == PrivacyBudget(2.0, 2e-5)
    for o in ("owner-1", "owner-2"):
        assert verify(tmp_path / f"{o}.db").head_hash == acct.ledger.head.hex()


def test_publisher_output_is_identical_for_many_arrival_orders():
    """RELIABILITY (d) 'reordered messages': the shares of one round, recorded once, are fed
    to fresh publishers in random orders (within and across senders; early ones are held)."""
    from ppdp.accounting import Accountant
    from ppdp.federated import FederatedPublisher

    rnd = _round(m=4)
    seen: list[Message] = []
    run_round(rnd, hook=lambda m: (seen.append(m) if m.recipient == "publisher" else None) or [m])
    ref = rnd.publisher.directions
    kinds = (Kind.COMMITMENT, Kind.MEAN_SHARE, Kind.SCATTER_SHARE)
    shares = [m for m in seen if m.kind in kinds]
    assert len(shares) == 12  # shares that arrive before the charge wait for it
    keys = {k: s.public_key for k, s in rnd.signers.items()}
    rng = np.random.default_rng(1)  # arrival orders only
    for _ in range(60):
        acct = Accountant(
            rnd.publisher.ledger.__class__.in_memory(
                signer=rnd.signers["publisher"],
                signers=keys,
                metadata=rnd.publisher.ledger.metadata,
            )
        )
        pub = FederatedPublisher(
            rnd.config,
            signer=rnd.signers["publisher"],
            keys=keys,
            accountant=acct,
            allow_seeded=rnd.publisher.allow_seeded,
        )
        pub.start()
        for i in rng.permutation(len(shares)):
            pub.handle(shares[i])
        assert pub.state == "done"
        assert pub.directions.tobytes() == ref.tobytes()


def test_ledger_io_error_before_the_noisy_means_aborts_and_releases_nothing(monkeypatch):
    """RELIABILITY (d) 'disk full / I/O error': no result leaves without a durable record."""
    from ppdp.exceptions import LedgerIOError
    from ppdp.federated import FederatedPublisher

    original = FederatedPublisher._append

    def failing(self, kind, payload=None):
        if kind == "fed-noisy-means":
            raise LedgerIOError("disk full (injected)")
        return original(self, kind, payload)

    monkeypatch.setattr(FederatedPublisher, "_append", failing)
    rnd = _round()
    run_round(rnd)
    assert "disk full" in rnd.publisher.abort_reason
    assert all(o.noisy_means is None for o in rnd.owners.values())
    assert_aborted_and_charged(rnd)


def test_owner_data_above_the_unit_ball_is_refused_by_count_not_value():
    from ppdp.federated.roles import _check_data

    rnd = _round()
    d = rnd.config.n_features
    X = np.full((4, d), 0.01)
    X[1, 0] = 123.456  # a private value: it must not appear in the message
    y = np.array([0, 1, 0, 1])
    with pytest.raises(DataValidationError, match=r"1 record\(s\) of L2 norm > 1") as info:
        _check_data(X, y, rnd.config)
    assert "123" not in str(info.value)


def test_publisher_is_a_deprecated_alias_of_federated_publisher() -> None:
    import ppdp.federated as federated
    from ppdp.federated import FederatedPublisher, roles

    with pytest.warns(DeprecationWarning, match="FederatedPublisher"):
        assert federated.Publisher is FederatedPublisher
    with pytest.warns(DeprecationWarning, match="FederatedPublisher"):
        assert roles.Publisher is FederatedPublisher
    assert "Publisher" not in federated.__all__
    with pytest.raises(AttributeError):
        federated.NoSuchName  # noqa: B018
