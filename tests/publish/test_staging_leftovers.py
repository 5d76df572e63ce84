"""Hidden folders a killed Parquet-dataset release leaves are removed (or named) next time.

A run killed while writing leaves ``.OUT.staging.<host>.<pid>-<random>`` (and the temporary
folder inside its write). The next run writing OUT removes those whose process is gone, and
names in a warning those of a live process or of an unknown naming; before, they stayed,
unnamed, for ever.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from ppdp.data.distributed import clean_staging, hidden_name
from ppdp.publish.parquet_files import check_folder_output, staging_folder

pytest.importorskip("dask.dataframe")

_KILLED = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from ppdp.data.distributed import hidden_name
    from ppdp.publish.parquet_files import staging_folder

    out = Path(sys.argv[1])
    staged = staging_folder(out)
    staged.mkdir()
    (staged / "part-00000.parquet").write_bytes(b"half a file")
    inner = hidden_name(staged, "tmp")  # the write's own folder beside the staging one
    inner.mkdir()
    print(staged.name, inner.name, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _left_by_a_killed_run(out) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", _KILLED, str(out)], env=env, capture_output=True, text=True
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    names = done.stdout.split()
    assert all((out.parent / n).is_dir() for n in names)
    return names


def test_a_dead_runs_staging_folders_are_removed_by_the_next_run(tmp_path, caplog):
    out = tmp_path / "release"
    names = _left_by_a_killed_run(out)
    assert names[0].startswith(".release.staging.") and names[1].startswith("..release.staging.")
    with caplog.at_level(logging.INFO, logger="ppdp.data.distributed"):
        check_folder_output(out, sidecars=[("--output's guarantee file", tmp_path / "g.json")])
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    removed = [r.getMessage() for r in caplog.records if "interrupted run" in r.getMessage()]
    assert len(removed) == 2 and all("removed" in m for m in removed)


def test_a_live_runs_and_an_unknown_folder_are_named_not_removed(tmp_path, caplog):
    out = tmp_path / "release"
    live = staging_folder(out)  # this process: alive
    live.mkdir()
    legacy = tmp_path / ".release.staging-4242-0badcafe"  # the earlier naming: no host
    legacy.mkdir()
    other = tmp_path / ".release.staging.otherhost.1-0badcafe"  # another machine's
    other.mkdir()
    with caplog.at_level(logging.WARNING, logger="ppdp.data.distributed"):
        removed, kept = clean_staging(out)
    assert removed == [] and sorted(kept) == sorted([live, legacy, other])
    assert live.is_dir() and legacy.is_dir() and other.is_dir()
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 3 and all("remove it if no ppdp is writing" in m for m in warned)


def test_a_dead_runs_replaced_copy_is_kept_while_the_release_is_missing(tmp_path):
    """Killed between moving the old release aside and the new one in: the old copy may be
    the only one, so it is named, not removed; once OUT exists again it goes."""
    out = tmp_path / "release"
    name = hidden_name(out, "old").name
    dead_pid = _a_dead_pid()
    trash = tmp_path / name.replace(f".{os.getpid()}-", f".{dead_pid}-")
    trash.mkdir()
    assert clean_staging(out) == ([], [trash])
    out.mkdir()
    assert clean_staging(out) == ([trash], []) and not trash.exists()


def test_other_outputs_hidden_folders_are_left_alone(tmp_path):
    other = hidden_name(tmp_path / "release2", "staging")
    other.mkdir()
    assert clean_staging(tmp_path / "release") == ([], []) and other.is_dir()


def _a_dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                          capture_output=True, text=True)  # fmt: skip
    return int(done.stdout)
