"""simulate_round: a whole round in-process gives the centralised computation."""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.exceptions import NotDifferentiallyPrivateWarning
from ppdp.federated import simulate_round
from ppdp.ledger import verify
from ppdp.publish.fisher import fisher_directions, noisy_scatter


def _data(n=600, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) + np.where(rng.random(n) < 0.5, 1.0, -1.0)[:, None] * 0.5
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = (X[:, 0] > 0).astype(int)
    return X, y


def _parts(X, y, m):
    return [(X[j::m], y[j::m]) for j in range(m)]


def test_round_releases_the_fisher_direction_of_its_noisy_statistics():
    X, y = _data()
    res = simulate_round(_parts(X, y, 3), epsilon=1.0, delta=1e-5, random_state=3)
    assert res.state == "done" and res.abort_reason is None
    counts = [int(np.sum(y == 0)), int(np.sum(y == 1))]
    S = noisy_scatter(res.noisy_second_moment, res.noisy_means, counts)
    ridge = res.plan and __import__("ppdp.publish.fisher", fromlist=["x"]).default_ridge(
        res.plan.plan
    )
    W = fisher_directions(res.noisy_means, counts, S, ridge=ridge)
    np.testing.assert_array_equal(res.direction, W)
    assert res.guarantee.is_private
    assert res.guarantee.budget.epsilon == 1.0


def test_dealer_none_gives_the_same_release_as_the_trusted_dealer():
    # Masks cancel exactly (grid arithmetic), so with the same seeds for the owners' own
    # noise the two mask schemes give bit-identical statistics.
    X, y = _data()
    a = simulate_round(_parts(X, y, 4), epsilon=1.0, delta=1e-5, random_state=7)
    b = simulate_round(_parts(X, y, 4), epsilon=1.0, delta=1e-5, dealer="none", random_state=7)
    assert a.noisy_means.tobytes() == b.noisy_means.tobytes()
    assert a.noisy_second_moment.tobytes() == b.noisy_second_moment.tobytes()


def test_workdir_keeps_a_verifiable_ledger_and_replicas(tmp_path):
    X, y = _data(n=200)
    res = simulate_round(_parts(X, y, 2), epsilon=1.0, delta=1e-5, workdir=tmp_path, random_state=1)
    assert res.ledger_path == tmp_path / "publisher-ledger.db"
    report = verify(res.ledger_path)
    for path in res.replica_paths.values():
        rep = verify(path)
        assert rep.head_hash == report.head_hash and rep.length == report.length


def test_paper_split_warns():
    X, y = _data(n=200)
    with pytest.warns(NotDifferentiallyPrivateWarning, match="joint view"):
        res = simulate_round(
            _parts(X, y, 2), epsilon=1.0, delta=1e-5, joint_view=False, random_state=1
        )
    assert not res.guarantee.is_private


@pytest.mark.parametrize("release", ["noisy-projections", "raw-projections"])
def test_projections_released_in_owner_order(release):
    X, y = _data(n=300)
    parts = _parts(X, y, 3)
    ctx = (
        pytest.warns(NotDifferentiallyPrivateWarning)
        if release == "raw-projections"
        else __import__("contextlib").nullcontext()
    )
    with ctx:
        res = simulate_round(parts, epsilon=1.0, delta=1e-5, release=release, random_state=2)
    assert res.projections.shape == (300, 1)
    if release == "raw-projections":
        expect = np.concatenate([p[0] for p in parts]) @ res.direction
        np.testing.assert_allclose(res.projections, expect)
        assert not res.guarantee.is_private
    else:
        assert res.guarantee.is_private


def test_constant_blocks_give_directions_orthogonal_to_the_block_indicators():
    X, y = _data(n=300, d=4)
    res = simulate_round(
        _parts(X, y, 2), epsilon=1.0, delta=1e-5, constant_blocks=[[2, 3]], random_state=4
    )
    assert abs(float(res.direction[2, 0] + res.direction[3, 0])) < 1e-9


def test_bad_parameters_fail_before_anything_is_spent():
    from ppdp.exceptions import DataValidationError, ParameterError

    X, y = _data(n=100)
    parts = _parts(X, y, 2)
    with pytest.raises(ParameterError, match="n_components"):
        simulate_round(parts, epsilon=1.0, delta=1e-5, n_components=2)
    with pytest.raises(ParameterError, match="dealer"):
        simulate_round(parts, epsilon=1.0, delta=1e-5, dealer="maybe")
    with pytest.raises(ParameterError, match="epsilon"):
        simulate_round(parts, epsilon=-1.0, delta=1e-5)
    big = [(X[:50] * 2.0, y[:50]), parts[1]]
    with pytest.raises(DataValidationError, match="norm"):
        simulate_round(big, epsilon=1.0, delta=1e-5)
    nan = [(np.where(np.arange(50)[:, None] == 3, np.nan, X[:50]), y[:50]), parts[1]]
    with pytest.raises(DataValidationError, match="NaN"):
        simulate_round(nan, epsilon=1.0, delta=1e-5)
    with pytest.raises(ParameterError, match="at least 2"):
        simulate_round(parts[:1], epsilon=1.0, delta=1e-5)


def test_three_classes_give_two_directions_and_noisy_projections():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, size=450)
    X = rng.normal(size=(450, 5)) * 0.3 + np.eye(5)[y] * 0.6
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    labels = np.array(["a", "b", "c"])[y]
    res = simulate_round(
        _parts(X, labels, 3),
        epsilon=2.0,
        delta=1e-5,
        release="noisy-projections",
        dealer="none",
        random_state=6,
    )
    assert res.state == "done"
    assert res.direction.shape == (5, 2) and res.projections.shape == (450, 2)
    np.testing.assert_allclose(np.linalg.norm(res.direction, axis=0), 1.0)


def test_declared_class_counts_must_be_the_parts_class_sizes(tmp_path):
    from ppdp.exceptions import DataValidationError

    X, y = _data(n=300)
    true = [int(np.sum(y == 0)), int(np.sum(y == 1))]
    with pytest.raises(DataValidationError, match="declared class counts") as info:
        simulate_round(
            _parts(X, y, 3), epsilon=1.0, delta=1e-5, class_counts=[1, 2], workdir=tmp_path
        )
    assert "\n" not in str(info.value)
    assert not list(tmp_path.iterdir())  # refused before any ledger was created or charged
    res = simulate_round(_parts(X, y, 3), epsilon=1.0, delta=1e-5, class_counts=true)
    assert res.state == "done"
