"""Random sources: secure by default, reproducible (and warned about) when seeded."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ppdp.exceptions import InsecureRandomnessWarning, ParameterError, ParameterTypeError
from ppdp.random import RandomSource, SecureRandom, SeededRandom, resolve_random_state


def test_secure_random_differs_between_calls():
    src = SecureRandom()
    a, b = src.uint64(64), src.uint64(64)
    assert a.dtype == np.uint64 and a.shape == (64,)
    assert not np.array_equal(a, b)  # equal with probability 2**-4096
    assert src.is_secure


def test_secure_random_large_request_is_chunked_and_writable(monkeypatch):
    monkeypatch.setattr("ppdp.random._URANDOM_CHUNK", 1 << 10)
    words = SecureRandom().uint64(1000)  # 8000 bytes, read in 8 pieces
    assert words.shape == (1000,)
    assert words.flags.writeable
    # The pieces are independent: no 1 KiB block repeats another.
    blocks = words.reshape(-1, 125)[:, :16]
    assert len({b.tobytes() for b in blocks}) == len(blocks)


def test_secure_random_zero_words():
    assert SecureRandom().uint64(0).shape == (0,)


def test_seeded_random_same_seed_is_bit_identical(seed):
    a = SeededRandom(seed).uint64(1000)
    b = SeededRandom(seed).uint64(1000)
    c = SeededRandom(seed + 1).uint64(1000)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert not SeededRandom(seed).is_secure


def test_seeded_random_accepts_seed_sequence_and_generator(seed):
    ss = np.random.SeedSequence(seed)
    assert np.array_equal(
        SeededRandom(ss).uint64(8), SeededRandom(np.random.SeedSequence(seed)).uint64(8)
    )
    gen = np.random.default_rng(seed)
    expected = np.random.default_rng(seed).bit_generator.random_raw(4).astype(np.uint64)
    assert np.array_equal(SeededRandom(gen).uint64(4), expected)


def test_seeded_spawn_gives_an_independent_reproducible_child(seed):
    child_a = SeededRandom(seed).spawn().uint64(16)
    child_b = SeededRandom(seed).spawn().uint64(16)
    assert np.array_equal(child_a, child_b)
    assert not np.array_equal(child_a, SeededRandom(seed).uint64(16))


def test_resolve_none_is_secure():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        src = resolve_random_state(None)
    assert isinstance(src, SecureRandom) and src.is_secure


@pytest.mark.parametrize(
    "state",
    [7, np.int64(7), np.random.SeedSequence(7), np.random.default_rng(7)],
    ids=["int", "np.int64", "SeedSequence", "Generator"],
)
def test_resolve_seeded_warns(state):
    # pytest.warns records regardless of the global "ignore" filter in pyproject.
    with pytest.warns(InsecureRandomnessWarning, match="reproducible and predictable"):
        src = resolve_random_state(state)
    assert isinstance(src, SeededRandom) and not src.is_secure


def test_resolve_warning_points_at_the_callers_caller():
    # The default stacklevel suits a library function that resolves its own argument.
    def library_function(random_state):
        return resolve_random_state(random_state)

    with pytest.warns(InsecureRandomnessWarning) as record:
        library_function(3)
    assert record[0].filename == __file__
    with pytest.warns(InsecureRandomnessWarning) as record:
        resolve_random_state(3)
    assert record[0].filename == __file__


def test_resolved_source_is_reused_without_warning():
    with pytest.warns(InsecureRandomnessWarning):
        src = resolve_random_state(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_random_state(src) is src
        secure = SecureRandom()
        assert resolve_random_state(secure) is secure


def test_resolve_accepts_any_random_source():
    class Constant:
        is_secure = False

        def uint64(self, n):
            return np.zeros(n, dtype=np.uint64)

    custom = Constant()
    assert isinstance(custom, RandomSource)
    assert resolve_random_state(custom) is custom


def test_resolve_rejects_negative_seeds():
    for bad in (-1, np.int64(-5)):
        with pytest.raises(ParameterError, match=r"random_state \(-\d+\) must be a non-negative"):
            resolve_random_state(bad)


@pytest.mark.parametrize("bad", [True, False, 1.5, "seed", [1, 2], object()])
def test_resolve_rejects_bad_types(bad):
    with pytest.raises(ParameterTypeError, match=r"random_state \(.*\) must be None, an int"):
        resolve_random_state(bad)


def test_seeded_stream_is_domain_separated_from_numpy_default_rng(seed):
    """``default_rng(s)`` in user code neither reproduces nor overlaps ppdp's noise of seed s."""
    from ppdp.random import NOISE_DOMAIN

    ours = SeededRandom(seed).uint64(64)
    assert not np.array_equal(ours, np.random.default_rng(seed).bit_generator.random_raw(64))
    for child in np.random.SeedSequence(seed).spawn(8):  # numpy's own children of the seed
        theirs = np.random.default_rng(child).bit_generator.random_raw(64)
        assert not np.array_equal(ours, theirs)
    # what it is instead: the seed's SeedSequence under ppdp's fixed spawn key (reproducible)
    expected = np.random.Generator(
        np.random.PCG64(np.random.SeedSequence(seed, spawn_key=NOISE_DOMAIN))
    ).bit_generator.random_raw(64)
    assert np.array_equal(ours, expected)
    # a SeedSequence is separated the same way; a Generator is the caller's own stream
    ss = np.random.SeedSequence(seed)
    assert not np.array_equal(
        SeededRandom(ss).uint64(8), np.random.default_rng(ss).bit_generator.random_raw(8)
    )


def test_refuse_seeded_only_refuses_a_seed_without_permission():
    from ppdp.random import refuse_seeded

    refuse_seeded(False, allow_seeded=False)
    refuse_seeded(True, allow_seeded=True)
    with pytest.raises(ParameterError, match=r"random_state \(3\) with a ledger is refused"):
        refuse_seeded(True, allow_seeded=False, value=3)
    with pytest.raises(ParameterTypeError, match="allow_seeded"):
        refuse_seeded(True, allow_seeded=1)
