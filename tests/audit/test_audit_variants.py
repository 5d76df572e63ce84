"""Audit variants live outside the release path (issues 18 and 31).

No release class has a noise factor: the samplers of :mod:`ppdp.noise` multiply each noise
scale by the source's factor, 1 for every source but :class:`ppdp.audit.ScaledNoise`; only
:func:`ppdp.audit.noise_variant` builds a class that draws from one, and its ``fit``
refuses an accountant, as the release run refuses a rescaled source with a ledger.
"""

from __future__ import annotations

import ast
import inspect
import pickle
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ppdp.learn
import ppdp.publish
from ppdp import noise
from ppdp.accounting import Accountant
from ppdp.audit import (
    CONTROL_NOISE_MULTIPLIER,
    ScaledNoise,
    half_noise,
    is_noise_variant,
    noise_variant,
)
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import InsecureRandomnessWarning, ParameterError, ParameterTypeError
from ppdp.learn import PrivateClassifierBase, PrivateLogisticRegression, PrivateRBFSVM
from ppdp.publish import (
    DPPCAPublisher,
    ExponentialPublisher,
    LaplacePublisher,
    Publisher,
)
from ppdp.random import PartitionStreams, SecureRandom, SeededRandom, noise_factor
from ppdp.release import ReleaseOptions

SRC = Path(__file__).resolve().parents[2] / "src" / "ppdp"

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "x", "type": "numeric", "lower": 10, "upper": 20},
            {"name": "z", "type": "numeric", "lower": 0, "upper": 1},
            {"name": "c", "type": "categorical", "categories": ["a", "b", "c", "d"]},
        ],
        "label": {"name": "y", "classes": [0, 1]},
    }
)


def _table(n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "x": rng.uniform(10, 20, n),
            "z": rng.uniform(0, 1, n),
            "c": rng.choice(list("abcd"), n),
            "y": rng.integers(0, 2, n),
        }
    )


def _release_classes() -> list[type]:
    """Every public publisher and private learner that ppdp.publish / ppdp.learn export."""
    out = []
    for module in (ppdp.publish, ppdp.learn):
        for name in module.__all__:
            obj = getattr(module, name)
            if (
                isinstance(obj, type)
                and issubclass(obj, (Publisher, PrivateClassifierBase))
                and obj not in (Publisher, PrivateClassifierBase)
            ):
                out.append(obj)
    return out


RELEASE_CLASSES = _release_classes()


def test_the_scan_finds_the_release_classes() -> None:
    names = {c.__name__ for c in RELEASE_CLASSES}
    assert {"DPPCAPublisher", "LaplacePublisher", "PrivateLogisticRegression"} <= names
    assert "PrivateRBFSVM" in names and "TableSynthesizer" in names


@pytest.mark.parametrize("cls", RELEASE_CLASSES, ids=lambda c: c.__name__)
def test_release_classes_have_no_noise_hook(cls: type) -> None:
    assert not is_noise_variant(cls)
    hooks = [n for n in dir(cls) if "noise_factor" in n or "multiplier" in n]
    assert not hooks, hooks
    # nothing passed to __init__, fit or run names a noise factor or multiplier
    for method in (cls.__init__, cls.fit, cls.run):
        params = inspect.signature(method).parameters
        assert not [p for p in params if "multiplier" in p or "factor" in p], params


#: Where a noise factor may be read: the source, the samplers, the audits, and the two
#: release samplers built on uniforms or Gumbel draws (ExponentialPublisher's truncated
#: Laplace, the exponential mechanism's Gumbel noise).
_FACTOR_READERS = {
    "random.py",
    "noise.py",
    "audit/variants.py",
    "publish/baselines.py",
    "mechanisms/exponential.py",
}


def test_no_release_file_has_a_noise_hook() -> None:
    """``_noise_multiplier`` / ``_noise_factor`` appear nowhere in src/ppdp but the audits;
    ``noise_factor`` is read only by the source, the samplers and the audits; no function of
    the release files, the mechanisms, the ERM solver or the synthesizer's model and check
    takes a multiplier (the release files: nor a factor) parameter: their audits draw from a
    ScaledNoise."""
    hook = re.compile(r"(?<![A-Za-z0-9_])_noise_(multiplier|factor)\b")
    reader = re.compile(r"(?<![A-Za-z0-9_.])noise_factor\(")
    offenders, readers, params = [], [], []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        text = path.read_text(encoding="utf-8")
        if not rel.startswith("audit/") and hook.search(text):
            offenders.append(rel)
        if reader.search(text) and rel not in _FACTOR_READERS:
            readers.append(rel)
        words = ("multiplier", "factor") if rel in _RELEASE_FILES else ("multiplier", "noise_f")
        if rel in _RELEASE_FILES or rel in _LOWER_PATHS or rel.startswith("mechanisms/"):
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    args = node.args.args + node.args.kwonlyargs
                    bad = [a.arg for a in args if any(w in a.arg for w in words)]
                    if bad:
                        params.append(f"{rel}:{node.lineno} {node.name}{bad}")
    assert not offenders, offenders
    assert not readers, readers
    assert not params, params


#: The lower release paths that carried a ``noise_multiplier`` for the audits (issue 31),
#: with the mechanisms.
_LOWER_PATHS = {"learn/_erm.py", "publish/table_synth_model.py", "publish/table_synth_check.py"}

#: The files that released through the old hook (issue 31), and the two bases.
_RELEASE_FILES = {
    "publish/_base.py",
    "learn/_base.py",
    "publish/pca.py",
    "publish/lda_projection.py",
    "publish/baselines.py",
    "publish/groupby.py",
    "publish/partition_selection.py",
    "learn/linear.py",
    "learn/rbf_svm.py",
}


@pytest.mark.parametrize(
    ("draw", "kind"),
    [
        (lambda src: noise.laplace(2.0, 64, random_state=src), float),
        (lambda src: noise.gaussian(2.0, 64, random_state=src), float),
        (lambda src: noise.discrete_laplace(8.0, 64, random_state=src), int),
        (lambda src: noise.gamma_norm_vector(3, 2.0, 64, random_state=src), float),
    ],
    ids=["laplace", "gaussian", "discrete-laplace", "gamma-norm"],
)
def test_a_scaled_source_scales_the_noise_and_nothing_else(draw, kind) -> None:
    """Same words, the scale times the factor: factor 1 draws exactly the plain source's."""
    plain = np.asarray(draw(SeededRandom(5)))
    assert np.array_equal(np.asarray(draw(ScaledNoise(SeededRandom(5), 1.0))), plain)
    half = np.asarray(draw(ScaledNoise(SeededRandom(5), 0.5)))
    if kind is float:
        np.testing.assert_allclose(half, plain / 2, rtol=0, atol=2.0**-30)
    else:  # floor(b·E) with b halved: within one of half the draw
        assert np.max(np.abs(half - plain / 2)) <= 1.0
    # uniforms are not noise: unchanged
    u = noise.uniform(8, random_state=ScaledNoise(SeededRandom(5), 0.5))
    assert np.array_equal(u, noise.uniform(8, random_state=SeededRandom(5)))


def test_partition_streams_carry_the_factor_to_the_workers() -> None:
    streams = PartitionStreams(ScaledNoise(SeededRandom(2), 0.25))
    clone = pickle.loads(pickle.dumps(streams))
    assert clone.stream(3).noise_factor == 0.25
    assert PartitionStreams(SeededRandom(2)).stream(3).noise_factor == 1.0
    assert noise_factor(SeededRandom(2)) == noise_factor(SecureRandom()) == 1.0


def test_a_scaled_random_state_is_refused_with_a_ledger_and_spends_nothing() -> None:
    """The hook is unreachable from ``fit``: a rescaled source passed as ``random_state``
    is refused with an accountant (whatever ``allow_seeded`` says), before the data are read."""
    acc = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3))
    source = ScaledNoise(SeededRandom(1), 0.5)
    with pytest.raises(ParameterError, match=r"^random_state \(ScaledNoise\(SeededRandom"):
        LaplacePublisher(1.0, SCHEMA, random_state=source).fit(
            _table(), accountant=acc, allow_seeded=True
        )
    with pytest.raises(ParameterError, match=r"draws 0.5 × the noise"):
        PrivateLogisticRegression(epsilon=1.0, data_norm=3.0, random_state=source).fit(
            *_xy(), accountant=acc, allow_seeded=True
        )
    assert acc.spent.epsilon == 0.0 and acc.history() == []


# -- the variants ---------------------------------------------------------------------


def test_half_noise_is_a_cached_subclass_with_the_same_parameters() -> None:
    Half = half_noise(DPPCAPublisher)
    assert Half is half_noise(DPPCAPublisher) is noise_variant(DPPCAPublisher, 0.5)
    assert issubclass(Half, DPPCAPublisher) and is_noise_variant(Half)
    assert Half.__name__ == "HalfNoiseDPPCAPublisher"
    assert Half.audit_noise_factor == CONTROL_NOISE_MULTIPLIER == 0.5
    assert noise_variant(LaplacePublisher, 0.8).__name__ == "NoiseFactor0.8LaplacePublisher"
    pub = Half(1.0, 2, SCHEMA, random_state=3)
    assert pub.get_params() == DPPCAPublisher(1.0, 2, SCHEMA, random_state=3).get_params()
    assert inspect.signature(Half.fit) == inspect.signature(DPPCAPublisher.fit)


def test_a_unit_variant_draws_exactly_what_the_release_class_draws() -> None:
    """The factor sits where the release applies the scale: same seed, same uniforms."""
    df = _table()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        for cls, args in ((DPPCAPublisher, (5.0, 2)), (ExponentialPublisher, (5.0,))):
            ref = cls(*args, SCHEMA, random_state=4).fit(df).release_
            same = noise_variant(cls, 1.0)(*args, SCHEMA, random_state=4).fit(df).release_
            half = half_noise(cls)(*args, SCHEMA, random_state=4).fit(df).release_
            assert np.array_equal(ref.encoded, same.encoded)
            assert not np.array_equal(ref.encoded, half.encoded)
        X = np.random.default_rng(2).normal(size=(300, 3))
        y = (X[:, 0] > 0).astype(int)
        kw = dict(epsilon=1.0, data_norm=3.0, random_state=6, perturbation="output")
        ref_c = PrivateLogisticRegression(**kw).fit(X, y)
        half_c = half_noise(PrivateLogisticRegression)(**kw).fit(X, y)
        full_c = noise_variant(PrivateLogisticRegression, 1.0)(**kw).fit(X, y)
    assert np.array_equal(ref_c.coef_, full_c.coef_)
    assert not np.array_equal(ref_c.coef_, half_c.coef_)


def test_half_noise_laplace_rows_have_half_the_spread() -> None:
    df = _table(4000)
    x = df["x"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        full = LaplacePublisher(100.0, SCHEMA, random_state=1, allow_large_epsilon=True).fit(df)
        half = half_noise(LaplacePublisher)(
            100.0, SCHEMA, random_state=1, allow_large_epsilon=True
        ).fit(df)

    def mad(pub: LaplacePublisher) -> float:
        # rows far from the bounds, where clamping does not cut the noise
        inner = (x > 12) & (x < 18)
        return float(np.median(np.abs(pub.release_.data["x"].to_numpy() - x)[inner]))

    assert mad(half) / mad(full) == pytest.approx(0.5, rel=0.1)


def _xy() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((10, 2)), np.arange(10) % 2


@pytest.mark.parametrize(
    ("cls", "build", "call"),
    [
        (DPPCAPublisher, lambda c: c(1.0, 2, SCHEMA), lambda o, acc: o.fit(_table(), acc)),
        (
            LaplacePublisher,
            lambda c: c(1.0, SCHEMA),
            lambda o, acc: o.fit(_table(), accountant=acc),
        ),
        (
            PrivateLogisticRegression,
            lambda c: c(epsilon=1.0, data_norm=3.0),
            lambda o, acc: o.fit(*_xy(), accountant=acc),
        ),
        (PrivateRBFSVM, lambda c: c(epsilon=1.0), lambda o, acc: o.fit(*_xy(), acc)),
        (
            DPPCAPublisher,
            lambda c: c(1.0, 2, SCHEMA),
            lambda o, acc: o.run(_table(), ReleaseOptions(accountant=acc)),
        ),
        (
            PrivateLogisticRegression,
            lambda c: c(epsilon=1.0, data_norm=3.0),
            lambda o, acc: o.run(*_xy(), options=ReleaseOptions(accountant=acc, dry_run=True)),
        ),
    ],
    ids=[
        "pca-positional",
        "laplace-keyword",
        "logistic-keyword",
        "rbf-positional",
        "pca-run",
        "logistic-run-dry",
    ],
)
def test_a_variant_refuses_an_accountant_and_spends_nothing(cls, build, call) -> None:
    """A broken variant is never charged: refused before anything is validated or spent."""
    acc = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3))
    with pytest.raises(ParameterError, match=r"^accountant \(Accountant\) must be None: Half"):
        call(build(half_noise(cls)), acc)
    assert acc.spent.epsilon == 0.0 and acc.history() == []
    # the release class with the same call does spend (the refusal is the variant's own)
    if cls is DPPCAPublisher:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(build(cls), acc)
        assert acc.spent.epsilon == pytest.approx(1.0)


def test_noise_variant_refuses_bad_arguments() -> None:
    with pytest.raises(ParameterTypeError, match=r"^cls \(<class 'int'>\) must be a release"):
        noise_variant(int, 0.5)
    with pytest.raises(ParameterTypeError, match="already an audit variant"):
        noise_variant(half_noise(LaplacePublisher), 0.5)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ParameterError, match=r"^factor \("):
            noise_variant(LaplacePublisher, bad)
