"""The collector service end to end, in process: signed batches in, running totals out;
a bad batch is rejected whole and leaves the totals unchanged."""

from __future__ import annotations

import sqlite3
import struct
import warnings

import numpy as np
import pytest
from collector_helpers import (  # noqa: F401 (the `keys` fixture)
    keys_fixture,
    last_seq,
    totals,
    write_config,
)

from ppdp.exceptions import DataValidationError, ParameterError, ProtocolError
from ppdp.local import AdditiveRandomizer, CharacteristicVectorRandomizer
from ppdp.local.collector import CollectorConfig, CollectorStore
from ppdp.local.collector._aggregate import Aggregator
from ppdp.local.collector._app import create_app
from ppdp.local.collector._client import CollectorClient, fetch_totals
from ppdp.local.collector._estimate import estimate_totals
from ppdp.local.collector._wire import CLIENT_HEADER, SIGNATURE_HEADER, encode_batch, sign_body

with warnings.catch_warnings():  # this starlette asks for httpx2; httpx still works
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

CV = CharacteristicVectorRandomizer(regions=5, noise="discrete-normal", gamma=0.5, sigma=1.0)


@pytest.fixture
def service(tmp_path, keys):
    path = write_config(tmp_path, keys, CV, max_batch=500)
    config = CollectorConfig.from_file(path)
    app = create_app(config)
    with TestClient(app) as http:
        yield config, http, path


def _post(http, key, *, client="app-1", seq=1, reports, survey="test-survey", sig=None):
    body = encode_batch(survey=survey, client=client, seq=seq, reports=reports)
    headers = {CLIENT_HEADER: client, SIGNATURE_HEADER: sig or sign_body(body, key)}
    return http.post("/v1/batches", content=body, headers=headers)


def test_reports_in_totals_out(service, keys):
    config, http, _ = service
    values = np.repeat(np.arange(5), [10, 20, 30, 25, 15])
    reports = CV.randomise(values, random_state=1)
    with CollectorClient(config, "http://testserver", http=http) as client:
        count = client.send(reports, batch_size=40)
    assert count == 100
    got = totals(http, keys["app-1"])
    assert got["count"] == 100 and got["batches"] == 3
    assert got["totals"]["sum"] == CV.totals(reports, estimator="mean").tolist()
    assert got["totals"]["threshold"] == CV.totals(reports, estimator="threshold").tolist()
    assert last_seq(http, keys["app-1"]) == 3
    info = http.get("/v1/info").json()
    assert info["spec"]["randomizer"] == CV.to_dict() and info["max_batch"] == 500
    # discrete normal: no pure ε, so the (ε, δ) at δ = 1e-6, as `estimate` states it
    assert info["guarantee"]["kind"] == "local" and info["guarantee"]["delta"] == 1e-6


def test_estimate_equals_the_one_step_estimate(service):
    config, http, _ = service
    reports = CV.randomise(np.arange(200) % 5, random_state=2)
    with CollectorClient(config, "http://testserver", http=http) as client:
        client.send(reports, batch_size=64)
    agg, totals = fetch_totals(config, "http://testserver", transport=http._transport)
    est = estimate_totals(agg, totals)
    direct = CV.estimate(reports)
    np.testing.assert_allclose(est.table.probability, direct.probabilities)
    assert est.count == 200 and est.method.endswith("mean")
    assert est.guarantee.kind.value == "local" and est.guarantee.delta == 1e-6
    thr = estimate_totals(agg, totals, method="threshold")
    np.testing.assert_allclose(
        thr.table.probability, CV.estimate(reports, estimator="threshold").probabilities
    )
    with pytest.raises(ParameterError, match="method"):
        estimate_totals(agg, totals, method="em")


@pytest.mark.parametrize(
    ("bad", "status", "match"),
    [
        ("off-lattice", 422, "lattice"),
        ("short", 422, "(n, k)"),
        ("wide", 422, "coordinates"),
        ("ragged", 422, ""),
        ("text", 422, ""),
    ],
)
def test_bad_batch_rejected_whole(service, keys, bad, status, match):
    _, http, _ = service
    good = CV.randomise([0, 1, 2], random_state=3).tolist()
    assert _post(http, keys["app-1"], seq=1, reports=good).status_code == 200
    before = totals(http, keys["app-2"], "app-2")
    reports = CV.randomise([0, 1, 2, 3], random_state=4).tolist()
    if bad == "off-lattice":
        reports[-1][2] = reports[-1][2] + 0.5
    elif bad == "short":
        reports[-1] = reports[-1][:-1]
    elif bad == "wide":
        reports = [[*row, 0] for row in reports]
    elif bad == "ragged":
        reports[1] = [reports[1]]
    else:
        reports[0][0] = "x"
    r = _post(http, keys["app-1"], seq=2, reports=reports)
    assert r.status_code == status and match in r.json()["error"]
    assert totals(http, keys["app-2"], "app-2") == before
    assert last_seq(http, keys["app-1"]) == 1


def test_authentication_replay_and_limits(service, keys):
    _, http, _ = service
    reports = CV.randomise([0, 1], random_state=5).tolist()
    # unknown client, a registered id signed with another key, no signature
    assert _post(http, keys["intruder"], client="intruder", reports=reports).status_code == 401
    assert _post(http, keys["intruder"], client="app-2", reports=reports).status_code == 401
    body = encode_batch(survey="test-survey", client="app-1", seq=1, reports=reports)
    assert http.post("/v1/batches", content=body).status_code == 401
    assert (
        http.post("/v1/batches", content=body, headers={CLIENT_HEADER: "app-1"}).status_code == 401
    )
    assert totals(http, keys["app-1"])["count"] == 0
    # accepted, identical retry acknowledged once, replay of an old seq refused
    assert _post(http, keys["app-1"], seq=7, reports=reports).json()["accepted"] == 2
    again = _post(http, keys["app-1"], seq=7, reports=reports).json()
    assert again == {"accepted": 0, "count": 2, "duplicate": True}
    other = CV.randomise([3, 4], random_state=6).tolist()
    assert _post(http, keys["app-1"], seq=7, reports=other).status_code == 409
    assert _post(http, keys["app-1"], seq=3, reports=other).status_code == 409
    # another survey, too many reports, malformed JSON
    assert _post(http, keys["app-1"], seq=8, reports=other, survey="x").status_code == 409
    many = CV.randomise(np.zeros(501, dtype=int), random_state=7).tolist()
    assert _post(http, keys["app-1"], seq=9, reports=many).status_code == 413
    bad = b"{oops"
    sig = sign_body(bad, keys["app-1"])
    r = http.post(
        "/v1/batches", content=bad, headers={CLIENT_HEADER: "app-1", SIGNATURE_HEADER: sig}
    )
    assert r.status_code == 400
    assert totals(http, keys["app-1"])["count"] == 2


def test_client_refuses_a_different_randomizer(service, tmp_path, keys):
    _, http, _ = service
    other = CharacteristicVectorRandomizer(regions=5, noise="discrete-normal", sigma=2.0)
    path = write_config(tmp_path, keys, other, name="other.json")
    with pytest.raises(ParameterError, match="differs"):
        CollectorClient(CollectorConfig.from_file(path), "http://testserver", http=http)


def test_client_errors_carry_the_reason(service):
    config, http, _ = service
    with CollectorClient(config, "http://testserver", http=http) as client:
        with pytest.raises(DataValidationError, match="coordinates"):
            client.post([[1, 2]])
        client._seq = 0  # reuse an accepted seq with another body
        client.post(CV.randomise([1], random_state=8))
        client._seq = 0
        with pytest.raises(ProtocolError, match="stale"):
            client.post(CV.randomise([2], random_state=9))


def test_additive_store_keeps_no_report(tmp_path, keys):
    """Grep the database (and its WAL) for the reports: neither their IEEE-754 bytes nor
    their decimal text is there, and no table has a row per report."""
    r = AdditiveRandomizer(noise="gaussian", scale=0.5, domain=(0.0, 1.0))
    path = write_config(tmp_path, keys, r, histogram={"bins_per_domain": 20})
    config = CollectorConfig.from_file(path)
    reports = r.randomise(np.linspace(0, 1, 300), random_state=10)
    with TestClient(create_app(config)) as http:
        with CollectorClient(config, "http://testserver", http=http) as client:
            client.send(reports, batch_size=100)
        raw = b"".join(p.read_bytes() for p in tmp_path.glob("store.sqlite*"))
    for z in reports[:50]:
        assert struct.pack("<d", z) not in raw and struct.pack(">d", z) not in raw
        assert repr(float(z)).encode() not in raw
    conn = sqlite3.connect(tmp_path / "store.sqlite")
    n_totals = conn.execute("SELECT count(*) FROM totals").fetchone()[0]
    conn.close()
    assert n_totals == 20 + 2 * 100 + 2  # domain bins, 10σ each side, under/overflow
    with CollectorStore.open(tmp_path / "store.sqlite", create=False) as store:
        snap = store.snapshot()
    agg = Aggregator.from_config(config)
    assert snap.count == 300 and snap.totals["hist"].sum() == 300
    expected = np.histogram(reports, bins=agg.edges)[0]
    np.testing.assert_array_equal(snap.totals["hist"][1:-1], expected)


def test_additive_uniform_reports_outside_the_support_are_refused(tmp_path, keys):
    r = AdditiveRandomizer(noise="uniform", scale=0.5, domain=(0.0, 1.0))
    path = write_config(tmp_path, keys, r)
    config = CollectorConfig.from_file(path)
    with TestClient(create_app(config)) as http:
        ok = _post(http, keys["app-1"], seq=1, reports=[-0.25, 1.25, 0.5])
        assert ok.status_code == 200
        bad = _post(http, keys["app-1"], seq=2, reports=[0.5, 1.3])
        assert bad.status_code == 422 and "outside" in bad.json()["error"]
        assert _post(http, keys["app-1"], seq=3, reports=[[0.5]]).status_code == 422
        assert totals(http, keys["app-1"])["count"] == 3
    agg = Aggregator.from_config(config)
    assert agg.spec["histogram"] == {"bins_per_domain": 1000, "below": 250, "above": 250}
    assert agg.edges[0] == pytest.approx(-0.25) and agg.edges[-1] == pytest.approx(1.25)


@pytest.mark.parametrize("noise", ["gaussian", "uniform"])
def test_additive_estimates_from_the_histogram_match_the_reports(tmp_path, keys, noise):
    """Binned EM and Bayes from the collector's histogram equal those from the reports
    (the report bins nest in the fine grid); Fourier agrees to the binning error."""
    from ppdp.local.reconstruction import (
        reconstruct_bayes,
        reconstruct_em,
        reconstruct_fourier,
    )

    scale = 0.1 if noise == "gaussian" else 0.37
    r = AdditiveRandomizer(noise=noise, scale=scale, domain=(0.0, 2.0))
    path = write_config(tmp_path, keys, r, histogram={"bins_per_domain": 500})
    config = CollectorConfig.from_file(path)
    x = 2.0 * np.random.default_rng(0).beta(2, 5, 20_000)
    reports = r.randomise(x, random_state=11)
    with TestClient(create_app(config)) as http:
        with CollectorClient(config, "http://testserver", http=http) as client:
            client.send(reports, batch_size=5000)
        agg, totals = fetch_totals(config, "http://testserver", transport=http._transport)
    for method, direct in (
        ("em", reconstruct_em(reports, r, 25)),
        ("bayes", reconstruct_bayes(reports, r, 25)),
    ):
        est = estimate_totals(agg, totals, method=method, bins=25)
        np.testing.assert_allclose(est.table.probability, direct.probabilities, atol=1e-12)
        assert est.iterations == direct.iterations
    est = estimate_totals(agg, totals, method="fourier", bins=25, harmonics=6)
    direct = reconstruct_fourier(reports, r, 6, bins=25)
    np.testing.assert_allclose(est.table.probability, direct.probabilities, atol=2e-3)
    assert list(est.table.columns) == ["bin_low", "bin_high", "probability", "density"]
    assert est.table.bin_high.iloc[-1] == 2.0
    with pytest.raises(ParameterError, match="method"):
        estimate_totals(agg, totals, method="mean")


def test_histogram_settings_are_checked():
    r = AdditiveRandomizer(noise="laplace", scale=1.0, domain=(0.0, 1.0))
    with pytest.raises(ParameterError, match="bins_per_domain"):
        Aggregator.create(r, histogram={"bins_per_domain": 1})
    with pytest.raises(ParameterError, match="at most"):
        Aggregator.create(r, histogram={"bins_per_domain": 100_000})
    with pytest.raises(ParameterError, match="unknown"):
        Aggregator.create(r, histogram={"low": 0})
    with pytest.raises(ParameterError, match="only for additive"):
        Aggregator.create(CV, histogram={"bins_per_domain": 10})
    for bad in ({"type": "rr"}, {}):
        config = CollectorConfig.from_dict({"survey": "s", "randomizer": bad})
        with pytest.raises(ParameterError, match="neither"):
            Aggregator.from_config(config)


def test_public_api():
    import ppdp.local.collector as pkg

    assert pkg.create_app is create_app
    assert set(pkg.__all__) >= {"CollectorStore", "CollectorClient", "estimate", "report", "serve"}
    with pytest.raises(AttributeError):
        pkg.nothing  # noqa: B018


def test_report_categorical_labels_from_a_csv(tmp_path, keys):
    """The respondent path of ``ppdp local report`` with category labels read from a CSV."""
    from ppdp.local.collector import read_values, report

    r = CharacteristicVectorRandomizer(categories=["no", "yes", "maybe"], noise="inverse-square")
    path = write_config(tmp_path, keys, r)
    (tmp_path / "answers.csv").write_text("answer\nyes\nno\nyes\nmaybe\n")
    values = read_values(tmp_path / "answers.csv")
    config = CollectorConfig.from_file(path)
    with TestClient(create_app(config)) as http:
        with pytest.raises(ParameterError, match="batch_size"):
            report(config=config, server="http://testserver", values=values, batch_size=0,
                   http=http)  # fmt: skip
        result = report(config=config, server="http://testserver", values=values,
                        batch_size=3, http=http)  # fmt: skip
        assert (result.sent, result.count, result.batches) == (4, 4, 2)
        with pytest.raises(DataValidationError):
            report(config=config, server="http://testserver", values=["perhaps"], http=http)
        agg, totals = fetch_totals(config, "http://testserver", transport=http._transport)
    assert "sum" not in totals.totals  # inverse square: no mean, threshold counts only
    est = estimate_totals(agg, totals)
    assert list(est.table.region) == ["no", "yes", "maybe"]
    assert est.guarantee.epsilon == pytest.approx(4 * np.log(2))
    with pytest.raises(ParameterError, match="finite mean"):
        estimate_totals(agg, totals, method="mean")


def test_a_batch_that_overflows_the_totals_is_rolled_back(service, keys):
    """Reports of 2**53 − 1 are possible under unbounded noise; two batches of 500 fit the
    64-bit totals, the third would overflow inside the transaction and is rolled back."""
    _, http, _ = service
    big = (1 << 53) - 1
    reports = [[big, 1, 0, 0, 0]] * 500
    for seq in (1, 2):
        assert _post(http, keys["app-1"], seq=seq, reports=reports).status_code == 200
    before = totals(http, keys["app-1"])
    r = _post(http, keys["app-1"], seq=3, reports=reports)
    assert r.status_code == 422 and "overflow" in r.json()["error"]
    assert totals(http, keys["app-1"]) == before
    assert before["totals"]["sum"][0] == 1000 * big and before["count"] == 1000
