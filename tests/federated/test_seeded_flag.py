"""The seeded flag of a federated round comes from the owners' commitments (issue 29).

Before, the publisher charged every round ``seeded: False``, even ``simulate_round(random_state=…)``
whose owners all draw from seeded streams. Now each owner's commitment says whether its
shares hold reproducible randomness (its own noise, or a seeded dealer's masks); the round is
recorded seeded when any owner says so or does not say (an older owner: unknown, counted
as seeded); a round with a seeded owner runs only with ``allow_seeded``; and an owner refuses
a spend that hides its seeded noise.
"""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.exceptions import InsecureRandomnessWarning
from ppdp.federated import simulate_round
from ppdp.federated.messages import Kind, MessageFields, sign
from ppdp.federated.roles import DataOwner, NoiseDealer
from ppdp.federated.simulate import build_round, run_round
from ppdp.ledger import Ledger

pytestmark = pytest.mark.filterwarnings("ignore::ppdp.exceptions.InsecureRandomnessWarning")


def _parts(m: int = 3, n: int = 240, d: int = 3):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = (X[:, 0] > 0).astype(int)
    return [(X[j::m], y[j::m]) for j in range(m)]


def _keys(rnd):
    return {k: s.public_key for k, s in rnd.signers.items()}


def _seeded_owner(rnd, owner: str, parts, seed: int = 5) -> DataOwner:
    j = list(rnd.owners).index(owner)
    X, y = parts[j]
    return DataOwner(
        rnd.config, signer=rnd.signers[owner], keys=_keys(rnd), X=X, y=y, random_state=seed
    )


@pytest.mark.parametrize("dealer", ["trusted", "none"])
def test_a_round_with_every_owner_seeded_is_recorded_seeded(tmp_path, dealer):
    with pytest.warns(InsecureRandomnessWarning):
        res = simulate_round(
            _parts(), epsilon=1.0, delta=1e-5, dealer=dealer, workdir=tmp_path, random_state=0
        )
    assert res.state == "done" and res.seeded
    with Ledger.open(res.ledger_path) as led:
        (spend,) = [e.payload for e in led.entries() if e.kind == "spend"]
    assert spend["seeded"] is True  # False before issue 29
    assert spend["details"]["seeded_owners"] == ["owner-1", "owner-2", "owner-3"]
    assert spend["details"]["seeded_unreported"] == []


def test_a_round_with_no_owner_seeded_is_recorded_unseeded():
    rnd = build_round(_parts(), epsilon=1.0, delta=1e-5)
    run_round(rnd)
    assert rnd.publisher.state == "done"
    assert rnd.publisher.spend_record.seeded is False
    assert "seeded_owners" not in rnd.publisher.spend_record.details


def test_one_seeded_owner_makes_the_round_seeded_and_needs_allow_seeded():
    parts = _parts()
    rnd = build_round(parts, epsilon=1.0, delta=1e-5)
    rnd.owners["owner-2"] = _seeded_owner(rnd, "owner-2", parts)
    run_round(rnd)
    pub = rnd.publisher
    assert pub.state == "aborted" and pub.spend_record is None  # nothing spent
    assert "['owner-2'] report seeded noise" in pub.abort_reason
    assert "nothing spent" in pub.abort_reason

    rnd = build_round(parts, epsilon=1.0, delta=1e-5)
    rnd.owners["owner-2"] = _seeded_owner(rnd, "owner-2", parts)
    rnd.publisher.allow_seeded = True
    run_round(rnd)
    spend = rnd.publisher.spend_record
    assert rnd.publisher.state == "done" and spend.seeded is True
    assert spend.details["seeded_owners"] == ["owner-2"]
    assert spend.details["allow_seeded"] is True


def test_a_seeded_dealer_makes_the_round_seeded():
    parts = _parts()
    rnd = build_round(parts, epsilon=1.0, delta=1e-5)
    rnd.dealer = NoiseDealer(
        rnd.config, signer=rnd.signers["dealer"], keys=_keys(rnd), random_state=3
    )
    rnd.publisher.allow_seeded = True
    run_round(rnd)
    spend = rnd.publisher.spend_record
    assert rnd.publisher.state == "done" and spend.seeded is True
    assert spend.details["seeded_owners"] == ["owner-1", "owner-2", "owner-3"]


class _OlderOwner(DataOwner):
    """An owner of a ppdp before issue 29: its commitment has no ``seeded`` field."""

    def _send(self, recipient, kind, payload):
        if kind == Kind.COMMITMENT:
            payload = {k: v for k, v in payload.items() if k != "seeded"}
            seq = self._seq.get(recipient, 0)
            self._seq[recipient] = seq + 1
            fields = MessageFields(self.config.session_id, self.id, recipient, seq, kind, payload)
            return sign(fields, self.signer)
        return super()._send(recipient, kind, payload)


def test_an_owner_that_does_not_say_is_taken_in_and_counted_as_seeded():
    parts = _parts()
    rnd = build_round(parts, epsilon=1.0, delta=1e-5)
    X, y = parts[0]
    rnd.owners["owner-1"] = _OlderOwner(
        rnd.config, signer=rnd.signers["owner-1"], keys=_keys(rnd), X=X, y=y
    )
    run_round(rnd)  # the publisher does not refuse it (allow_seeded is False)
    spend = rnd.publisher.spend_record
    assert rnd.publisher.state == "done" and spend.seeded is True
    assert spend.details["seeded_unreported"] == ["owner-1"]
    assert spend.details["seeded_owners"] == []


def test_an_owner_refuses_a_spend_that_hides_its_seeded_noise():
    parts = _parts()
    rnd = build_round(parts, epsilon=1.0, delta=1e-5)
    rnd.owners["owner-3"] = _seeded_owner(rnd, "owner-3", parts)
    rnd.publisher.allow_seeded = True
    rnd.publisher._seeded_owners = lambda: ([], [])  # a publisher that records seeded: False
    run_round(rnd)
    owner = rnd.owners["owner-3"]
    assert rnd.publisher.spend_record.seeded is False
    assert owner.state == "aborted"
    assert "not recorded as seeded" in owner.abort_reason
    assert rnd.publisher.directions is None  # nothing released
