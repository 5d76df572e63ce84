"""Issue 12 items 3, 7, 8 (CLI part) and "seeds and ledgers": files and exit statuses.

Each test reproduces a case of the hardening issue on the command line and shows it fixed:

* ``-o`` equal to any input (the data, the schema, the ledger or a file beside it, the
  theta file, the model, through a hard link or a symlink) is refused before the spend: the
  input is intact and nothing is charged;
* every output check (format support, a folder given for a file, an unwritable folder, a
  blocked sidecar, a full disk, an existing file without ``--force``) runs before the spend;
  a disk that fills up *after* the spend is one line, exit 2, saying the spend stands;
* partial files (``.OUT.<host>.<pid>-<random>.part``) left by a SIGKILL are removed on the next
  run, or named in a warning when their writer may still be alive;
* user errors are one line with exit 2 (a deeply nested schema, a schema path that is a
  folder, ENOSPC); exit 1 only for a ledger that fails verification; a closed stdout pipe
  exits quietly;
* a table with 10⁶ columns has its header read alone: missing columns are reported before
  any row is read;
* ``--seed`` with ``--ledger`` is refused unless ``--allow-seeded`` (recorded in the ledger).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ppdp import PrivacyBudget
from ppdp.accounting import Accountant, budget_report
from ppdp.cli import main
from ppdp.data import Schema
from ppdp.exceptions import ParameterError

SCHEMA = {
    "columns": [
        {"name": "x1", "type": "numeric", "lower": 0, "upper": 10},
        {"name": "x2", "type": "numeric", "lower": 0, "upper": 10},
    ],
    "label": {"name": "cls", "classes": ["no", "yes"]},
}
THETA = {"states": ["a", "b"], "transitions": [[[0.9, 0.1], [0.2, 0.8]]], "initials": None}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def files(tmp_path):
    """A tiny private table, its schema, a ledger, a trace and Θ, in a fresh folder."""
    n = 60
    df = pd.DataFrame(
        {
            "x1": [(i * 7) % 10 + 0.5 for i in range(n)],
            "x2": [(i * 3) % 10 + 0.25 for i in range(n)],
            "cls": ["no" if i % 3 else "yes" for i in range(n)],
        }
    )
    df.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "theta.json").write_text(json.dumps(THETA))
    (tmp_path / "trace.csv").write_text("state\n" + "a\nb\n" * 30)
    argv = ["budget", "init", str(tmp_path / "budget.db"), "--dataset-id", "t", "--epsilon", "9"]
    assert main(argv) == 0
    return tmp_path


def _snapshot(root: Path) -> dict[str, str]:
    """Digest of every input (SQLite's -wal/-shm come and go with connections)."""
    return {
        p.name: _digest(p)
        for p in sorted(root.iterdir())
        if p.is_file() and not p.name.endswith(("-wal", "-shm", ".checkpoint"))
    }


def _parts(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.part"))


def _one_line_exit_2(capsys, argv: list[str], fragment: str) -> str:
    status = main(argv)
    err = capsys.readouterr().err.splitlines()
    # progress and warning lines of the command ("ppdp publish: reading ...") are not errors
    errors = [line for line in err if not re.match(r"ppdp [a-z]+: ", line)]
    assert status == 2, err
    assert len(errors) == 1 and errors[0].startswith("ppdp: error: "), err
    assert fragment in errors[0], errors[0]
    assert "Traceback" not in "\n".join(err)
    return errors[0]


def _publish(root: Path, out: str | Path, *extra: str) -> list[str]:
    return [
        "publish",
        "laplace",
        str(root / "data.csv"),
        "--schema",
        str(root / "schema.json"),
        "--epsilon",
        "1",
        "--ledger",
        str(root / "budget.db"),
        "-o",
        str(out),
        *extra,
    ]


def _nothing_charged(root: Path) -> None:
    assert budget_report(root / "budget.db").spent.is_zero


# --- item 3: -o equal to an input -------------------------------------------------------


def test_output_equal_to_the_data_is_refused_before_the_spend(files, capsys):
    """Reproduces `ppdp publish laplace v.csv ... -o v.csv`: it charged and replaced v.csv."""
    before = _snapshot(files)
    line = _one_line_exit_2(capsys, _publish(files, files / "data.csv"), "is the data")
    assert "destroy the input" in line
    _one_line_exit_2(capsys, _publish(files, files / "data.csv", "--force"), "is the data")
    assert _snapshot(files) == before and _parts(files) == []
    _nothing_charged(files)


def test_output_equal_to_the_data_by_another_name_is_refused(files, capsys, monkeypatch):
    before = _snapshot(files)
    os.link(files / "data.csv", files / "hard.csv")
    os.symlink(files / "data.csv", files / "soft.csv")
    monkeypatch.chdir(files)
    for out in ("hard.csv", "soft.csv", "./data.csv", f"../{files.name}/data.csv"):
        _one_line_exit_2(capsys, _publish(files, out, "--force"), "is the data")
    data = before["data.csv"]
    assert _snapshot(files) == {**before, "hard.csv": data, "soft.csv": data}
    assert (files / "soft.csv").is_symlink()
    _nothing_charged(files)


def test_output_equal_to_the_ledger_or_its_key_is_refused(files, capsys):
    ledger = files / "budget.csv"  # a ledger may have any name, even one that looks like a table
    assert main(["budget", "init", str(ledger), "--dataset-id", "t", "--epsilon", "9"]) == 0
    argv = _publish(files, ledger)
    argv[argv.index("--ledger") + 1] = str(ledger)
    before = _digest(ledger)
    _one_line_exit_2(capsys, [*argv, "--force"], "is the ledger")
    assert _digest(ledger) == before and budget_report(ledger).spent.is_zero
    key = files / "budget.db.key.csv"
    os.symlink(files / "budget.db.key", key)
    _one_line_exit_2(capsys, [*_publish(files, key), "--force"], "is the ledger's key")
    _nothing_charged(files)


def test_train_output_equal_to_the_schema_is_refused(files, capsys):
    before = _snapshot(files)
    argv = ["train", "logreg", str(files / "data.csv"), "--schema", str(files / "schema.json")]
    argv += ["--epsilon", "1", "--ledger", str(files / "budget.db"), "-o"]
    _one_line_exit_2(capsys, [*argv, str(files / "schema.json"), "--force"], "is the schema")
    assert _snapshot(files) == before and _parts(files) == []
    _nothing_charged(files)


def test_correlated_output_equal_to_theta_is_refused(files, capsys):
    before = _snapshot(files)
    argv = ["correlated", "release", str(files / "trace.csv"), "--theta"]
    argv += [str(files / "theta.json"), "--epsilon", "1", "--ledger", str(files / "budget.db")]
    _one_line_exit_2(capsys, [*argv, "-o", str(files / "theta.json")], "is the theta file")
    assert _snapshot(files) == before
    _nothing_charged(files)


def test_predict_output_equal_to_its_input_is_refused(files, capsys):
    argv = ["train", "logreg", str(files / "data.csv"), "--schema", str(files / "schema.json")]
    assert main([*argv, "--epsilon", "1", "-o", str(files / "model.json")]) == 0
    capsys.readouterr()
    before = _snapshot(files)
    predict = ["predict", str(files / "model.json"), str(files / "data.csv"), "-o"]
    _one_line_exit_2(capsys, [*predict, str(files / "data.csv"), "--force"], "is the data")
    assert _snapshot(files) == before


# --- item 7: every output check before the spend ----------------------------------------


def test_parquet_output_without_pyarrow_is_refused_before_the_spend(files, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    _one_line_exit_2(capsys, _publish(files, files / "out.parquet"), "needs pyarrow")
    assert not (files / "out.parquet").exists() and _parts(files) == []
    _nothing_charged(files)


def test_output_that_is_a_folder_is_refused_before_the_spend(files, capsys):
    (files / "out.csv").mkdir()
    _one_line_exit_2(capsys, _publish(files, files / "out.csv", "--force"), "is a folder")
    (files / "side.csv.guarantee.json").mkdir()  # the sidecar path is blocked
    _one_line_exit_2(capsys, _publish(files, files / "side.csv"), "guarantee file")
    assert not (files / "side.csv").exists()
    _one_line_exit_2(capsys, _publish(files, files / "nope" / "out.csv"), "does not exist")
    _nothing_charged(files)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_unwritable_output_folder_is_refused_before_the_spend(files, capsys):
    # /proc refuses new files even to root (a chmod'ed folder would not stop root).
    _one_line_exit_2(capsys, _publish(files, "/proc/ppdp-release.csv"), "cannot write in")
    _nothing_charged(files)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes anywhere")
def test_read_only_output_folder_is_refused_before_the_spend(files, capsys):
    ro = files / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        _one_line_exit_2(capsys, _publish(files, ro / "out.csv"), "cannot write in")
    finally:
        ro.chmod(0o700)
    _nothing_charged(files)


def test_full_disk_is_refused_before_the_spend(files, capsys, monkeypatch):
    import shutil

    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda p: real(p)._replace(free=4096))
    _one_line_exit_2(capsys, _publish(files, files / "out.csv"), "4,096 bytes free")
    _nothing_charged(files)


def test_disk_full_after_the_spend_is_one_line_and_says_the_spend_stands(
    files, capsys, monkeypatch
):
    """The one case no check can rule out beforehand: the write after the spend hits ENOSPC."""

    def full(self, path, *args, **kwargs):
        Path(path).write_bytes(b"x" * 10)  # half a file ...
        raise OSError(errno.ENOSPC, "No space left on device")  # ... then the disk is full

    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    line = _one_line_exit_2(capsys, _publish(files, files / "out.csv"), "no space left")
    assert "The spend stands" in line and "budget.db" in line
    assert not (files / "out.csv").exists() and not (files / "out.csv.guarantee.json").exists()
    assert _parts(files) == []
    # honest: the ledger keeps the charge (fail closed); nothing was released
    assert budget_report(files / "budget.db").spent == PrivacyBudget(1.0)


def test_existing_output_needs_force(files, capsys):
    (files / "out.csv").write_text("keep me\n")
    _one_line_exit_2(capsys, _publish(files, files / "out.csv"), "pass --force")
    assert (files / "out.csv").read_text() == "keep me\n"
    (files / "other.csv.guarantee.json").write_text("{}")  # a stale sidecar counts too
    _one_line_exit_2(capsys, _publish(files, files / "other.csv"), "pass --force")
    _nothing_charged(files)
    assert main(_publish(files, files / "out.csv", "--force")) == 0
    assert len(pd.read_csv(files / "out.csv")) == 60
    assert json.loads((files / "out.csv.guarantee.json").read_text())["ledger_indices"] == [1]


def test_every_release_command_refuses_an_existing_output_before_the_spend(files, capsys):
    (files / "m.json").write_text("{}")
    (files / "h.json").write_text("{}")
    train = ["train", "logreg", str(files / "data.csv"), "--schema", str(files / "schema.json")]
    train += ["--epsilon", "1", "--ledger", str(files / "budget.db"), "-o", str(files / "m.json")]
    _one_line_exit_2(capsys, train, "pass --force")
    corr = ["correlated", "release", str(files / "trace.csv"), "--theta", str(files / "theta.json")]
    corr += ["--epsilon", "1", "--ledger", str(files / "budget.db"), "-o", str(files / "h.json")]
    _one_line_exit_2(capsys, corr, "pass --force")
    _nothing_charged(files)
    assert main([*train, "--force"]) == 0 and main([*corr, "--force"]) == 0
    assert budget_report(files / "budget.db").spent == PrivacyBudget(2.0)


def test_part_file_left_by_a_sigkill_is_removed_on_the_next_run(files, capsys):
    out = files / "out.csv"
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, signal, sys\n"
            "from ppdp._io import atomic_path\n"
            "with atomic_path(sys.argv[1]) as tmp:\n"
            "    tmp.write_text('half a rel')\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n",
            str(out),
        ],
        check=False,
    )
    assert killed.returncode == -9
    [orphan] = _parts(files)
    assert orphan.startswith(".out.csv.") and orphan.endswith(".part")
    assert main(_publish(files, out)) == 0
    assert _parts(files) == [] and len(pd.read_csv(out)) == 60


def test_part_file_of_a_live_or_unknown_writer_is_named_not_removed(files, caplog):
    from ppdp._io import check_output, host_tag

    host = host_tag()
    live = files / f".out.csv.{host}.{os.getpid()}-abc123.part"  # this process is alive
    remote = files / ".out.csv.elsewhere.999999999-abc123.part"  # another machine's writer
    unknown = files / ".out.csv.x1y2z3.part"  # the old naming, without host and pid
    dead = files / f".out.csv.{host}.999999999-abc123.part"  # no such process here
    for p in (live, remote, unknown, dead):
        p.write_text("")
    with caplog.at_level("WARNING", logger="ppdp._io"):
        check_output(files / "out.csv")
    assert live.exists() and remote.exists() and unknown.exists() and not dead.exists()
    assert sum("partial file" in r.getMessage() for r in caplog.records) == 3


# --- item 8: exit statuses ------------------------------------------------------------------


def test_deeply_nested_schema_is_one_line_exit_2(files, capsys):
    deep = files / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    argv = _publish(files, files / "out.csv")
    argv[argv.index("--schema") + 1] = str(deep)
    _one_line_exit_2(capsys, argv, "nested too deeply")
    _one_line_exit_2(capsys, ["schema", "check", str(deep)], "nested too deeply")
    _nothing_charged(files)


def test_schema_path_that_is_a_folder_is_one_line_exit_2(files, capsys):
    (files / "folder.json").mkdir()
    argv = _publish(files, files / "out.csv")
    argv[argv.index("--schema") + 1] = str(files / "folder.json")
    _one_line_exit_2(capsys, argv, "is a folder")
    _one_line_exit_2(capsys, ["schema", "check", str(files / "folder.json")], "is a folder")
    _nothing_charged(files)


def test_any_os_error_is_one_line_exit_2_naming_the_path(files, capsys):
    (files / "theta-dir.json").mkdir()
    argv = ["correlated", "release", "--epsilon", "1", "-o", str(files / "h.json")]
    theta = ["--theta", str(files / "theta.json")]
    _one_line_exit_2(
        capsys,
        [*argv, str(files / "trace.csv"), "--theta", str(files / "theta-dir.json")],
        "is a folder",
    )
    (files / "trace-dir.csv").mkdir()  # pandas raises IsADirectoryError: an OSError
    _one_line_exit_2(
        capsys, [*argv, *theta, str(files / "trace-dir.csv")], "trace-dir.csv': Is a directory"
    )


def test_only_an_integrity_failure_exits_1(files, capsys):
    import sqlite3

    ledger = files / "budget.db"
    with Accountant.open_existing(ledger) as acct:
        acct.spend(PrivacyBudget(0.5), mechanism="laplace")
    conn = sqlite3.connect(ledger)
    conn.execute('UPDATE entries SET signature = zeroblob(64) WHERE "index" = 1')
    conn.commit()
    conn.close()
    assert main(["budget", "show", str(ledger)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "integrity" in err and "Traceback" not in err


def test_broken_pipe_on_stdout_exits_quietly(files):
    """`ppdp budget show L | head -1` printed a traceback; the reader closing early is normal."""
    with Accountant.open_existing(files / "budget.db") as acct:
        for _ in range(40):
            acct.spend(PrivacyBudget(0.01), mechanism="laplace")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ppdp", "budget", "show", str(files / "budget.db")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before the first line
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 141  # as a process killed by SIGPIPE, without the noise
    assert err == b""


def test_broken_pipe_through_head_prints_no_traceback(files):
    with Accountant.open_existing(files / "budget.db") as acct:
        for _ in range(40):
            acct.spend(PrivacyBudget(0.01), mechanism="laplace")
    cmd = f"{sys.executable} -m ppdp budget show {files / 'budget.db'} | head -1"
    done = subprocess.run(["bash", "-c", cmd], capture_output=True, timeout=120, check=False)
    assert done.stdout.decode().startswith("ledger:") and done.stdout.count(b"\n") == 1
    assert done.stderr == b""


# --- item 8: a 10⁶-column table -------------------------------------------------------------


def test_a_million_columns_header_is_read_alone_and_missing_columns_reported_first(
    tmp_path, capsys, monkeypatch
):
    n = 1_000_000
    wide = tmp_path / "wide.csv"
    with wide.open("w") as fh:
        fh.write(",".join(f"c{i}" for i in range(n)) + "\n")
        for _ in range(2):
            fh.write(",".join(["1"] * n) + "\n")
    schema = {"columns": [{"name": "c5", "type": "numeric", "lower": 0, "upper": 2}]}
    schema["columns"].append({"name": "x1", "type": "numeric", "lower": 0, "upper": 2})
    (tmp_path / "s.json").write_text(json.dumps(schema))

    def never(*args, **kwargs):
        raise AssertionError("the body was read before the missing column was reported")

    with monkeypatch.context() as m:
        m.setattr(pd, "read_csv", never)
        argv = ["publish", "laplace", str(wide), "--schema", str(tmp_path / "s.json")]
        argv += ["--epsilon", "1", "-o", str(tmp_path / "out.csv")]
        line = _one_line_exit_2(capsys, argv, "missing column(s) 'x1'")
        assert "no row was read" in line
    # present columns: only they are parsed (usecols), in the file's order
    from ppdp.data.draft import read_table

    got = read_table(wide, columns=["c7", "c5"])
    assert list(got.columns) == ["c5", "c7"] and len(got) == 2


# --- seeds and ledgers ----------------------------------------------------------------------


def test_seed_with_a_ledger_is_refused_unless_allowed_and_then_recorded(files, capsys):
    before = _snapshot(files)
    line = _one_line_exit_2(capsys, _publish(files, files / "out.csv", "--seed", "3"), "--seed (3)")
    assert "--allow-seeded" in line
    assert _snapshot(files) == before and not (files / "out.csv").exists()
    _nothing_charged(files)
    assert main(_publish(files, files / "out.csv", "--seed", "3", "--allow-seeded")) == 0
    assert "recorded in the ledger" in capsys.readouterr().out
    [spend] = budget_report(files / "budget.db").spends
    assert spend.seeded and spend.details["allow_seeded"] is True
    for cmd in (
        ["train", "logreg", str(files / "data.csv"), "--schema", str(files / "schema.json")],
        ["correlated", "release", str(files / "trace.csv"), "--theta", str(files / "theta.json")],
    ):
        argv = [*cmd, "--epsilon", "1", "--ledger", str(files / "budget.db"), "--seed", "1"]
        _one_line_exit_2(capsys, [*argv, "-o", str(files / "x.json")], "--allow-seeded")
    assert len(budget_report(files / "budget.db").spends) == 1


def test_seeded_library_release_through_an_accountant_is_refused_before_the_data(monkeypatch):
    from ppdp.publish import LaplacePublisher

    schema = Schema.from_dict(SCHEMA)
    monkeypatch.setattr(Schema, "encode", lambda *a, **k: pytest.fail("the data were read"))
    with Accountant.in_memory(total=PrivacyBudget(1.0)) as acct:
        with pytest.raises(ParameterError, match=r"random_state \(5\) with a ledger is refused"):
            LaplacePublisher(0.5, schema, random_state=5).fit(pd.DataFrame(), accountant=acct)
        assert acct.spent.is_zero


def test_local_estimate_and_reproduce_check_their_outputs_first(files, capsys):
    store = files / "store.sqlite"
    store.write_bytes(b"the collector's running totals")
    (files / "collector.json").write_text("{}")
    est = ["local", "estimate", "--config", str(files / "collector.json"), "--store", str(store)]
    _one_line_exit_2(capsys, [*est, "-o", str(store), "--force"], "is the collector's store")
    _one_line_exit_2(capsys, [*est, "-o", str(files / "collector.json")], "sidecar")
    (files / "est.json").write_text("{}")  # the estimate's guarantee file already exists
    _one_line_exit_2(capsys, [*est, "-o", str(files / "est.csv")], "pass --force")
    assert store.read_bytes() == b"the collector's running totals"
    argv = ["reproduce", "wu-fig1", "--quick", "-o", str(files / "data.csv")]
    _one_line_exit_2(capsys, argv, "is a file, not a folder")
