"""A federated round through the release run (issue 31) releases and records what it did before.

The digests below were taken from the round's own code before it went through
:mod:`ppdp.release` (commit 7289e58): for a seed, the released statistics and direction(s)
are bit-for-bit the same, and so is every ledger entry that does not carry a signature or a
fresh key (the start, the spend, the noisy means, the result, the release). A refusal spends
nothing and writes what it wrote before; an accountant that is not one is refused in one
line (checked once, by the run's options).
"""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pytest

from ppdp.budget import PrivacyBudget
from ppdp.exceptions import ParameterTypeError
from ppdp.federated import FederatedPublisher, build_round
from ppdp.federated.simulate import run_round
from ppdp.ledger import canonical_dumps

#: Entries whose payload is fixed by the seed (the others hold signatures or fresh keys).
_FIXED = ("fed-start", "spend", "fed-noisy-means", "fed-result", "release")


def _round(dealer: str, release: str, **kw):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) + np.where(rng.random(300) < 0.5, 1.0, -1.0)[:, None] * 0.5
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = (X[:, 0] > 0).astype(int)
    parts = [(X[j::3], y[j::3]) for j in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seeded parties' InsecureRandomnessWarning
        return build_round(
            parts,
            epsilon=1.0,
            delta=1e-5,
            dealer=dealer,
            release=release,
            random_state=5,
            session_id="golden",
            **kw,
        )


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _observed(rnd) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_round(rnd)
    pub = rnd.publisher
    out: dict = {"state": pub.state}
    for name in ("noisy_means", "noisy_second_moment", "directions", "projections"):
        value = getattr(pub, name)
        out[name] = None if value is None else _digest(np.ascontiguousarray(value).tobytes())
    entries = pub.accountant.ledger.entries()
    out["kinds"] = [e.kind for e in entries]
    out.update({e.kind: _digest(canonical_dumps(e.payload)) for e in entries if e.kind in _FIXED})
    return out


_ROUND = ["genesis", "fed-start", "spend", "fed-round", *["fed-message"] * 3, "fed-noisy-means"]
_ROUND += [*["fed-message"] * 3, "fed-result"]

GOLDEN = {
    ("trusted", "direction"): {
        "state": "done",
        "noisy_means": "2aae8859238223bb",
        "noisy_second_moment": "d4a58bab1bc71862",
        "directions": "5d9759bf64ef8c3c",
        "projections": None,
        "kinds": [*_ROUND, "release"],
        "fed-start": "063d15a1f0132d1c",
        "spend": "ebd6e44a1a2d20cf",
        "fed-noisy-means": "cd3d66805e7c099c",
        "fed-result": "8cd254e08e168f83",
        "release": "ff15e4e1845fc0d1",
    },
    ("none", "noisy-projections"): {
        "state": "done",
        "noisy_means": "6bc2e29f9d851592",
        "noisy_second_moment": "51a40bbba767a982",
        "directions": "6539598393d6aeb8",
        "projections": "25e087d10d7c1a37",
        "kinds": [*_ROUND, *["fed-message"] * 3, "release"],
        "fed-start": "eb9b753cff3ba5e8",
        "spend": "226a9fb5e3b91d5a",
        "fed-noisy-means": "02f09828756a0f5b",
        "fed-result": "08be9b44a19a3cf5",
        "release": "a8f8cec9955f9514",
    },
}


@pytest.mark.parametrize(("dealer", "release"), list(GOLDEN))
def test_a_seeded_round_releases_and_records_what_it_did_before(dealer, release) -> None:
    assert _observed(_round(dealer, release)) == GOLDEN[dealer, release]


def test_a_round_over_budget_spends_nothing_and_records_nothing() -> None:
    rnd = _round("trusted", "direction", budget_total=PrivacyBudget(0.5, 1e-5))
    obs = _observed(rnd)
    assert obs["state"] == "aborted" and obs["directions"] is None
    assert obs["kinds"] == ["genesis"]
    assert rnd.publisher.accountant.spent.epsilon == 0.0


def test_a_seeded_round_without_allow_seeded_aborts_at_the_charge_point_spending_nothing() -> None:
    rnd = _round("trusted", "direction")
    rnd.publisher.allow_seeded = False
    obs = _observed(rnd)
    assert obs["state"] == "aborted" and obs["directions"] is None
    assert obs["kinds"] == ["genesis", "fed-start", "fed-abort"]
    assert "allow_seeded=True: nothing spent" in rnd.publisher.abort_reason
    assert rnd.publisher.accountant.spent.epsilon == 0.0


def test_a_publisher_without_an_accountant_is_refused_in_one_line() -> None:
    rnd = _round("trusted", "direction")
    keys = {k: s.public_key for k, s in rnd.signers.items()}
    with pytest.raises(ParameterTypeError, match=r"^accountant \(str\) must be a ppdp\.accounting"):
        FederatedPublisher(rnd.config, signer=rnd.signers["publisher"], keys=keys, accountant="x")
