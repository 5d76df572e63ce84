"""atomic_path never leaves a half-written file behind."""

from __future__ import annotations

import os
import stat

import pytest

from ppdp._io import atomic_path


def test_success_moves_file_into_place(tmp_path):
    dest = tmp_path / "sub" / "out.csv"
    with atomic_path(dest) as tmp:
        tmp.write_text("a,b\n1,2\n")
        assert not dest.exists()
    assert dest.read_text() == "a,b\n1,2\n"
    assert list(dest.parent.iterdir()) == [dest]


def test_failure_leaves_previous_content_and_no_temp(tmp_path):
    dest = tmp_path / "out.csv"
    dest.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(dest) as tmp:
        tmp.write_text("half")
        raise RuntimeError("boom")
    assert dest.read_text() == "old"
    assert list(tmp_path.iterdir()) == [dest]


def test_failure_with_no_previous_file_leaves_nothing(tmp_path):
    dest = tmp_path / "out.csv"
    with pytest.raises(RuntimeError), atomic_path(dest) as tmp:
        tmp.write_text("half")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_mode_follows_the_umask_unless_given(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_path(tmp_path / "a.csv") as tmp:
            tmp.write_text("x")
        with atomic_path(tmp_path / "b.key", mode=0o600) as tmp:
            tmp.write_text("secret")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.csv").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "b.key").stat().st_mode) == 0o600


def test_atomic_paths_moves_a_release_and_its_sidecar_together(tmp_path):
    from ppdp._io import atomic_paths

    side, out = tmp_path / "o.csv.guarantee.json", tmp_path / "o.csv"
    with pytest.raises(OSError), atomic_paths(side, out) as (t_side, t_out):
        t_side.write_text("{}")
        t_out.write_text("half")
        raise OSError(28, "No space left on device")
    assert list(tmp_path.iterdir()) == []  # neither file, no .part left
    with atomic_paths(side, out) as (t_side, t_out):
        assert t_out.name.startswith(".o.csv.") and t_out.name.endswith(".part")
        t_side.write_text("{}")
        t_out.write_text("a\n1\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.csv", "o.csv.guarantee.json"]


def test_write_error_advises_free_space_only_for_a_full_device(tmp_path):
    import errno

    from ppdp._io import write_error

    out = tmp_path / "out.csv"
    full = str(write_error(OSError(errno.ENOSPC, "full", str(out)), out, charged="ε=1 in l.db"))
    assert "free space" in full and "The spend stands (ε=1 in l.db)" in full
    gone = tmp_path.parent / "data" / "part-3.parquet"  # an input, not the output
    vanished = str(
        write_error(
            FileNotFoundError(errno.ENOENT, "No such file or directory", str(gone)),
            out,
            charged="ε=1 in l.db",
        )
    )
    assert "free space" not in vanished and str(gone) in vanished
    assert "ε was charged and nothing was released" in vanished
    assert "\n" not in vanished
