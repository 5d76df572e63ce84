"""Issue 13's peers (MST, AIM, PrivBayes) on the issue's two tasks, many fits in parallel.

One command runs every peer fit of ``benchmarks/synth_vs_peers.py``'s tasks on a machine
with many cores and no network, each fit in its own process (``--workers`` at a time),
and writes one results CSV. It needs only the peers' packages (a wheelhouse, see
``--wheelhouse``) and the prepared task inputs; nothing from ppdp.

Inputs (``--prepare DIR``, run here with ppdp's venv, writes them): the binned integer codes
of Adult train / test (16 equal-width bins of each numeric column over its declared bounds,
category indices, the label) and of NLTCS train / test (the 0/1 items;
``train_test_split(random_state=0)``, 20 % test), and ``domain.json`` (each column's declared
number of codes, the label, the targets). Every peer is given the declared domain, never one
read from the rows.

Peers, at ε ∈ {0.5, 1, 2} (Adult) and {0.4, 0.8, 1.6} (NLTCS), δ = 1e-9, ``--seeds`` seeds
(5; AIM, by far the slowest, up to ``--aim-seeds``, 3). Start order: AIM's first seed, then
MST and PrivBayes seed by seed, then AIM's other seeds while time is left:

* **MST** (smartnoise-synth 1.0.8, mbi 1.1.0): its ``TableTransformer`` is fitted on the
  public domain only (every code of every column, ``preprocessor_eps=0``). The fitted model
  is sampled twice: as shipped (``MST``) and with :mod:`peer_sampler`'s junction-tree
  sampler (``MST (fixed sampler)``); sampling is post-processing.
* **AIM** (smartnoise-synth 1.0.8): the same transformer; a per-fit time limit
  (``--aim-time``, shortened so that the fit ends ``--aim-margin`` seconds before the
  deadline): once it has passed, the next round's model estimation is not run, the model
  is estimated from the measurements taken so far (what AIM does after its last round), and
  the row says where it stopped (rounds measured, share of ρ spent: the release is DP at
  the full (ε, δ) and spent less). Sampled both ways.
* **PrivBayes** (DataSynthesizer 0.1.13, correlated mode, k = 2): data types, categorical
  flags, candidate keys and each column's domain are given (a domain file), not read from
  the rows. Under numpy 2, its generator ``eval``s dictionary keys that numpy 2 prints as
  ``np.int64(…)``, in a module without the name ``np``: the name is injected.
  Its network search runs serially in the worker (one core), with
  mutual information computed on integer codes (the same partition, the same score).

Privacy is not the same at the same ε: MST and AIM are (ε, δ)-DP under add/remove
neighbours; DataSynthesizer's synthetic table is ε-DP under add/remove (about 1.5ε under
replace-one); ppdp's publishers are pure ε (TableSynthesizer: (ε, δ)) under replace-one.

Metrics, computed in the worker on the synthetic codes: misclassification of
``LinearSVC(C=1)`` trained on the one-hot synthetic codes and tested on the real test codes
(Adult: income; NLTCS: each of outside / money / traveling / bathing from the other 15 items
as 0/1 values), and the mean total-variation distance over every 1-way and every 2-way
marginal against the real training codes (as ``synth_vs_peers.mean_tvd``).

Output under ``--out`` (five files): ``peers_results.csv`` (task, method, epsilon, seed,
target, error, tvd1, tvd2, seconds, status, note; rewritten after every fit),
``peers_log.txt``, ``peers_worker_logs.tar.gz`` and, if under 15 MB each,
``peers_synth_<task>.npz`` (the synthetic codes, uint8, keyed ``method|ε|seed``). A fit
still running at the global ``--deadline`` is killed and recorded ``killed (deadline)``; one
never started is ``not run (deadline)``; one over ``--fit-wall`` seconds is ``timed out``.

Device run (repo root, Python 3.12 with numpy 2, scipy, scikit-learn, jax, networkx; the
git-ignored ``.whl`` wheelhouse and ``benchmarks/synth/device-inputs`` carried; about
8.5 minutes: the wheels unpack in seconds, then 480 s to the deadline)::

    python3 benchmarks/synth/peers_device.py --wheelhouse .whl --out "$OUT" --workers 14

The wheelhouse (``/.whl/`` in ``.git/info/exclude``, 40 MB) holds, for CPython 3.12
manylinux x86_64, what the peers need beyond those packages: smartnoise-synth 1.0.8,
smartnoise-sql 1.0.10, mbi 1.1.0, opendp 0.14.2 (debug symbols stripped, LZMA-compressed),
pandas 2.3.3 (smartnoise-sql wants pandas < 3), chex, optax, absl-py, toolz, attrs,
antlr4-python3-runtime 4.9.3 (built from its sdist), Faker, SQLAlchemy, PyYAML, Deprecated,
wrapt, disjoint-set, graphviz, typing_extensions, python-dateutil, pytz, tzdata, six and
DataSynthesizer 0.1.13. ``--wheelhouse`` unzips them into ``--site`` and puts it first on
the path (no pip needed); ``pip install --no-index --no-deps .whl/*`` works as well.
opacus and pac-synth (declared by smartnoise-synth) are not imported by MST or AIM.

Tiny local check (the smartnoise peer venv, with DataSynthesizer and scikit-learn on a path)::

    PYTHONPATH=/tmp/ptest-site benchmarks/.peer-venv-smartnoise/bin/python \
        benchmarks/synth/peers_device.py --out /tmp/peers --seeds 1 --eps-index 1 \
        --rows 2000 --workers 2 --aim-time 40
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
INPUTS = HERE / "device-inputs"
EPS = {"adult": (0.5, 1.0, 2.0), "nltcs": (0.4, 0.8, 1.6)}
DELTA = 1e-9
NLTCS_TARGETS = {
    "outside": "getting about outside",
    "money": "managing money",
    "traveling": "traveling",
    "bathing": "bathing",
}
#: One thread per worker: the workers are the parallelism.
WORKER_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "JAX_PLATFORMS": "cpu",
    "CUDA_VISIBLE_DEVICES": "",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "PYTHONWARNINGS": "ignore",
}


# -- preparation (here, with ppdp) ---------------------------------------------------------


def prepare(out: Path) -> None:
    """Write the binned codes of both tasks and ``domain.json`` (needs ppdp)."""
    sys.path.insert(0, str(HERE.parent))
    from sklearn.model_selection import train_test_split

    from ppdp.datasets import load_adult, load_nltcs
    from synth_vs_peers import binned, sizes_of

    out.mkdir(parents=True, exist_ok=True)
    train, schema = load_adult("train")
    test, _ = load_adult("test")
    binned(train, schema).to_csv(out / "adult_train.csv", index=False)
    binned(test, schema).to_csv(out / "adult_test.csv", index=False)
    meta = {
        "adult": {
            "sizes": sizes_of(schema),
            "label": schema.label.name,
            "features": list(schema.column_names[:-1]),
        }
    }
    df, nschema = load_nltcs()
    ntrain, ntest = train_test_split(df, test_size=0.2, random_state=0)
    cols = list(nschema.column_names)
    for frame, name in ((ntrain, "nltcs_train.csv"), (ntest, "nltcs_test.csv")):
        frame[cols].astype(int).to_csv(out / name, index=False)
    meta["nltcs"] = {"sizes": {c: 2 for c in cols}, "targets": NLTCS_TARGETS}
    (out / "domain.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    total = sum(p.stat().st_size for p in out.iterdir())
    print(f"wrote {out} ({total / 1e6:.2f} MB)")


# -- wheelhouse ----------------------------------------------------------------------------


def unpack_wheels(wheelhouse: Path, site: Path) -> None:
    """Unzip every wheel of ``wheelhouse`` into ``site`` and put it first on the path."""
    site.mkdir(parents=True, exist_ok=True)
    marker = site / ".unpacked"
    wheels = sorted(wheelhouse.glob("*.whl"))
    if not wheels:
        raise SystemExit(f"--wheelhouse {wheelhouse}: no .whl files there")
    names = "\n".join(w.name for w in wheels)
    if not (marker.exists() and marker.read_text() == names):
        for w in wheels:  # a wheel is a zip of the files as installed (purelib/platlib)
            with zipfile.ZipFile(w) as z:
                for info in z.infolist():
                    path = z.extract(info, site)
                    mode = info.external_attr >> 16
                    if mode & 0o777:
                        os.chmod(path, mode & 0o777)
        marker.write_text(names)
    sys.path.insert(0, str(site))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]
    )


# -- metrics (worker side) -----------------------------------------------------------------


def mean_tvd(real, synth, sizes: list[int]) -> tuple[float, float]:
    """Mean TVD over all 1-way and all 2-way marginals of two integer-code arrays."""
    import numpy as np

    n_r, n_s = len(real), len(synth)
    one, two = [], []
    d = real.shape[1]
    for i in range(d):
        p = np.bincount(real[:, i], minlength=sizes[i]) / n_r
        q = np.bincount(synth[:, i], minlength=sizes[i]) / n_s
        one.append(0.5 * np.abs(p - q).sum())
    for i in range(d):
        for j in range(i + 1, d):
            m = sizes[i] * sizes[j]
            p = np.bincount(real[:, i] * sizes[j] + real[:, j], minlength=m) / n_r
            q = np.bincount(synth[:, i] * sizes[j] + synth[:, j], minlength=m) / n_s
            two.append(0.5 * np.abs(p - q).sum())
    return float(np.mean(one)), float(np.mean(two))


def _onehot(codes, sizes: list[int]):
    import numpy as np

    blocks = []
    for k, size in enumerate(sizes):
        block = np.zeros((len(codes), size))
        block[np.arange(len(codes)), codes[:, k]] = 1.0
        blocks.append(block)
    return np.hstack(blocks)


def svm_error(x_tr, y_tr, x_te, y_te) -> float:
    """LinearSVC(C=1) misclassification; a one-class training set predicts its class."""
    import numpy as np
    from sklearn.svm import LinearSVC

    if np.unique(y_tr).size < 2:
        return float(np.mean(y_te != y_tr[0]))
    clf = LinearSVC(C=1.0).fit(x_tr, y_tr)
    return float(np.mean(clf.predict(x_te) != y_te))


def load_task(inputs: Path, task: str, rows: int | None):
    """(train codes, test codes, meta) of one task; ``rows`` subsamples the training rows."""
    import numpy as np
    import pandas as pd

    meta = json.loads((inputs / "domain.json").read_text(encoding="utf-8"))[task]
    train = pd.read_csv(inputs / f"{task}_train.csv")
    test = pd.read_csv(inputs / f"{task}_test.csv")
    if rows is not None and rows < len(train):
        train = train.sample(rows, random_state=0).reset_index(drop=True)
    cols = list(meta["sizes"])
    return train[cols].astype(np.int64), test[cols].astype(np.int64), meta


def evaluate(task: str, syn, train, test, meta) -> list[dict]:
    """Rows of metrics for one synthetic table (integer codes in the columns of ``train``)."""
    import numpy as np

    cols = list(meta["sizes"])
    sizes = [int(meta["sizes"][c]) for c in cols]
    s = np.asarray(syn[cols], dtype=np.int64)
    s = np.clip(s, 0, np.asarray(sizes) - 1)
    r, te = train.to_numpy(), test.to_numpy()
    t1, t2 = mean_tvd(r, s, sizes)
    out = []
    if task == "adult":
        feats = [cols.index(c) for c in meta["features"]]
        lab = cols.index(meta["label"])
        fs = [sizes[k] for k in feats]
        err = svm_error(_onehot(s[:, feats], fs), s[:, lab], _onehot(te[:, feats], fs), te[:, lab])
        out.append({"target": meta["label"], "error": err})
    else:
        for short, target in meta["targets"].items():
            k = cols.index(target)
            others = [i for i in range(len(cols)) if i != k]
            err = svm_error(
                s[:, others].astype(float), s[:, k], te[:, others].astype(float), te[:, k]
            )
            out.append({"target": short, "error": err})
    for row in out:
        row.update(tvd1=t1, tvd2=t2)
    return out


# -- the peers (worker side) ---------------------------------------------------------------


def _public_transformer(sizes: dict[str, int]):
    """smartnoise's TableTransformer fitted on the declared domain only (no data, no ε)."""
    import pandas as pd
    from snsynth.transform.label import LabelTransformer
    from snsynth.transform.table import TableTransformer

    width = max(sizes.values())
    public = pd.DataFrame({c: [min(i, k - 1) for i in range(width)] for c, k in sizes.items()})
    tt = TableTransformer([LabelTransformer(nullable=False) for _ in sizes])
    tt.fit(public, epsilon=0.0)
    return tt


def _two_samples(synth, n: int, seed: int):
    """(as shipped, fixed sampler) draws of ``n`` rows from a fitted MST/AIM synthesizer."""
    import numpy as np
    from mbi import Dataset, MarkovRandomField
    from peer_sampler import sample_model

    shipped = synth.sample(n)
    rng = np.random.default_rng([seed, 1])
    original = MarkovRandomField.synthetic_data

    def fixed(self, rows=None, method="round"):
        return Dataset(sample_model(self, int(rows or self.total), rng), self.domain)

    MarkovRandomField.synthetic_data = fixed
    try:
        fixed_rows = synth.sample(n)
    finally:
        MarkovRandomField.synthetic_data = original
    return shipped, fixed_rows


def run_mst(train, meta, eps: float, seed: int, opts: dict) -> list[tuple[str, object, str]]:
    import numpy as np
    from snsynth import Synthesizer

    np.random.seed(seed)  # noqa: NPY002 - smartnoise and mbi draw from numpy's global generator
    synth = Synthesizer.create("mst", epsilon=eps, delta=DELTA)
    synth.fit(train, transformer=_public_transformer(meta["sizes"]), preprocessor_eps=0.0)
    shipped, fixed = _two_samples(synth, len(train), seed)
    return [("MST", shipped, "complete"), ("MST (fixed sampler)", fixed, "complete")]


class _TimeUpError(Exception):
    """AIM's time limit passed before a round's model estimation."""


def run_aim(train, meta, eps: float, seed: int, opts: dict) -> list[tuple[str, object, str]]:
    import numpy as np
    import snsynth.aim.aim as aim_mod
    from mbi import estimation, marginal_oracles
    from snsynth import Synthesizer

    np.random.seed(seed)  # noqa: NPY002
    clock = opts.get("clock", time.perf_counter)  # the suite passes process CPU time
    stop_at = clock() + opts["aim_time"]
    real_md = estimation.mirror_descent
    real_em = aim_mod.exponential_mechanism
    calls = {"md": 0}
    selections: list[float] = []
    taken: dict[str, list] = {}

    def mirror_descent(domain, measurements, *a, **k):
        calls["md"] += 1
        if calls["md"] > 1 and clock() > stop_at:
            taken["measurements"] = list(measurements)
            raise _TimeUpError
        return real_md(domain, measurements, *a, **k)

    def exponential_mechanism(qualities, epsilon, *a, **k):
        selections.append(float(epsilon))
        return real_em(qualities, epsilon, *a, **k)

    estimation.mirror_descent = mirror_descent
    aim_mod.exponential_mechanism = exponential_mechanism
    synth = Synthesizer.create("aim", epsilon=eps, delta=DELTA)
    try:
        synth.fit(train, transformer=_public_transformer(meta["sizes"]), preprocessor_eps=0.0)
        status = f"complete ({calls['md'] - 2} rounds)"
    except _TimeUpError:
        ms = taken["measurements"]
        synth.synthesizer = real_md(
            _domain_of(synth),
            ms,
            iters=1000,
            marginal_oracle=marginal_oracles.message_passing_stable,
        )
        used = sum(0.5 / m.stddev**2 for m in ms) + sum(e**2 / 8 for e in selections)
        status = (
            f"stopped at {opts['aim_time']:g} s: {calls['md'] - 1} rounds, "
            f"{100 * used / synth.rho:.0f} % of rho spent"
        )
    finally:
        estimation.mirror_descent = real_md
        aim_mod.exponential_mechanism = real_em
    shipped, fixed = _two_samples(synth, len(train), seed)
    return [("AIM", shipped, status), ("AIM (fixed sampler)", fixed, status)]


def _domain_of(synth):
    from mbi import Domain

    cards = synth._transformer.cardinality
    return Domain([f"col{i}" for i in range(len(cards))], cards)


def _fast_mutual_information(labels_x, labels_y):
    """DataSynthesizer's mutual information on integer codes (same partition, same score)."""
    import numpy as np
    import pandas as pd
    from sklearn.metrics import mutual_info_score

    x = pd.factorize(labels_x)[0]
    code = np.zeros(len(labels_y), dtype=np.int64)
    for col in labels_y.columns:
        f, uniques = pd.factorize(labels_y[col])
        code = code * len(uniques) + f
    return mutual_info_score(x, pd.factorize(code)[0])


class _SerialPool:
    """Stands in for ``multiprocessing.Pool`` in DataSynthesizer's network search."""

    def __init__(self, *a, **k) -> None:
        pass

    def __enter__(self) -> _SerialPool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, fn, tasks):
        return [fn(t) for t in tasks]


def run_privbayes(train, meta, eps: float, seed: int, opts: dict) -> list[tuple[str, object, str]]:
    import contextlib
    import importlib
    import io
    import tempfile

    import numpy as np
    import pandas as pd

    for mod in (
        "DataSynthesizer.DataDescriber",
        "DataSynthesizer.DataGenerator",
        "DataSynthesizer.lib.PrivBayes",
        "DataSynthesizer.lib.utils",
        "DataSynthesizer.datatypes.AbstractAttribute",
        "DataSynthesizer.datatypes.IntegerAttribute",
    ):
        m = importlib.import_module(mod)
        if not hasattr(m, "np"):
            m.np = np  # numpy 2: the module uses np without importing it
    privbayes_lib = importlib.import_module("DataSynthesizer.lib.PrivBayes")
    from DataSynthesizer.DataDescriber import DataDescriber
    from DataSynthesizer.DataGenerator import DataGenerator

    privbayes_lib.Pool = _SerialPool
    privbayes_lib.mutual_information = _fast_mutual_information
    cols = list(meta["sizes"])
    with tempfile.TemporaryDirectory() as tmp:
        src, dom = Path(tmp) / "train.csv", Path(tmp) / "domain.json"
        desc, out = Path(tmp) / "description.json", Path(tmp) / "synth.csv"
        train.to_csv(src, index=False)
        dom.write_text(json.dumps({c: list(range(int(k))) for c, k in meta["sizes"].items()}))
        with contextlib.redirect_stdout(io.StringIO()):
            d = DataDescriber(category_threshold=max(meta["sizes"].values()) + 1)
            d.describe_dataset_in_correlated_attribute_mode(
                dataset_file=str(src),
                k=2,
                epsilon=eps,
                attribute_to_datatype={c: "Integer" for c in cols},
                attribute_to_is_categorical={c: True for c in cols},
                attribute_to_is_candidate_key={c: False for c in cols},
                categorical_attribute_domain_file=str(dom),
                seed=seed,
            )
            d.save_dataset_description_to_file(str(desc))
            g = DataGenerator()
            g.generate_dataset_in_correlated_attribute_mode(len(train), str(desc), seed=seed)
            g.save_synthetic_data(str(out))
        syn = pd.read_csv(out)[cols]
    return [("PrivBayes k=2", syn, "complete")]


def _codes_path(job: dict, i: int) -> Path:
    """Where a fit's ``i``-th synthetic table (uint8 codes) is saved."""
    return Path(job["result"]).parent / f"{job['name']}.{i}.npy"


RUNNERS = {"mst": run_mst, "aim": run_aim, "privbayes": run_privbayes}


def worker(job: dict) -> None:
    """Run one fit and write its result rows (JSON) and synthetic codes (.npy)."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    train, test, meta = load_task(Path(job["inputs"]), job["task"], job["rows"])
    t0 = time.perf_counter()
    results = RUNNERS[job["peer"]](train, meta, job["epsilon"], job["seed"], job["opts"])
    secs = time.perf_counter() - t0
    rows = []
    cols = list(meta["sizes"])
    for i, (method, syn, status) in enumerate(results):
        syn = syn[cols].astype(np.int64)
        np.save(_codes_path(job, i), syn.to_numpy(np.uint8))
        for r in evaluate(job["task"], syn, train, test, meta):
            rows.append(
                {
                    "task": job["task"],
                    "method": method,
                    "epsilon": job["epsilon"],
                    "seed": job["seed"],
                    **r,
                    "seconds": round(secs, 2),
                    "status": status,
                    "note": "",
                }
            )
    Path(job["result"]).write_text(json.dumps(rows), encoding="utf-8")


# -- the scheduler -------------------------------------------------------------------------

FIELDS = ("task", "method", "epsilon", "seed", "target", "error", "tvd1", "tvd2", "seconds")
METHODS = {
    "mst": ("MST", "MST (fixed sampler)"),
    "aim": ("AIM", "AIM (fixed sampler)"),
    "privbayes": ("PrivBayes k=2",),
}


def _placeholder(job: dict, status: str, meta_targets: dict[str, list[str]]) -> list[dict]:
    return [
        {
            "task": job["task"],
            "method": m,
            "epsilon": job["epsilon"],
            "seed": job["seed"],
            "target": t,
            "status": status,
            "note": job.get("note", ""),
        }
        for m in METHODS[job["peer"]]
        for t in meta_targets[job["task"]]
    ]


def schedule(args: argparse.Namespace) -> int:
    import csv

    start = time.monotonic()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.workdir)
    if work.exists():
        shutil.rmtree(work)  # no stale results from an earlier run
    work.mkdir(parents=True)
    log = open(out / "peers_log.txt", "a", encoding="utf-8")  # noqa: SIM115

    def say(msg: str) -> None:
        line = f"[{time.monotonic() - start:6.1f} s] {msg}"
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    meta = json.loads((Path(args.inputs) / "domain.json").read_text(encoding="utf-8"))
    targets = {"adult": [meta["adult"]["label"]], "nltcs": list(NLTCS_TARGETS)}
    tasks = args.tasks.split(",")
    peers = args.peers.split(",")
    jobs = []
    # Start order: AIM's first seed (the longest fits), then MST and PrivBayes seed by seed
    # (the peers that set the bar), then AIM's other seeds while time is left.
    order = [("aim", 0)] * ("aim" in peers and args.aim_seeds > 0)
    order += [(p, seed) for seed in range(args.seeds) for p in ("mst", "privbayes") if p in peers]
    order += [("aim", seed) for seed in range(1, args.aim_seeds) if "aim" in peers]
    for peer, seed in order:
        for task in tasks:
            eps_list = EPS[task] if args.eps_index is None else (EPS[task][args.eps_index],)
            for eps in sorted(eps_list, reverse=True):
                name = f"{peer}-{task}-{eps:g}-{seed}"
                jobs.append(
                    {
                        "name": name,
                        "peer": peer,
                        "task": task,
                        "epsilon": eps,
                        "seed": seed,
                        "rows": args.rows,
                        "inputs": str(Path(args.inputs).resolve()),
                        "result": str((work / f"{name}.json").resolve()),
                        "opts": {"aim_time": args.aim_time},
                    }
                )
    say(
        f"{len(jobs)} fits, {args.workers} workers, deadline {args.deadline:g} s, "
        f"fit wall {args.fit_wall:g} s, AIM time limit {args.aim_time:g} s; "
        f"python {sys.version.split()[0]}"
    )
    env = dict(os.environ, **WORKER_ENV)
    broken = preflight(env, say)
    pending = [j for j in jobs if j["peer"] not in broken]
    running: dict[str, tuple[subprocess.Popen, float, dict]] = {}
    done: list[dict] = []
    all_rows: list[dict] = []

    def write_csv() -> None:
        with open(out / "peers_results.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=[*FIELDS, "status", "note"])
            w.writeheader()
            for row in all_rows:
                w.writerow({k: row.get(k, "") for k in w.fieldnames})

    def finish(job: dict, rows: list[dict]) -> None:
        done.append(job)
        all_rows.extend(rows)
        write_csv()

    for job in jobs:
        if job["peer"] in broken:
            job["note"] = broken[job["peer"]]
            finish(job, _placeholder(job, "failed (import)", targets))
    while pending or running:
        now = time.monotonic() - start
        for name, (proc, t0, job) in list(running.items()):
            rc = proc.poll()
            if rc is None:
                if now > args.deadline:
                    proc.kill()
                    proc.wait()
                    del running[name]
                    say(f"{name}: killed at the deadline after {now - t0:.0f} s")
                    finish(job, _placeholder(job, "killed (deadline)", targets))
                elif now - t0 > args.fit_wall:
                    proc.kill()
                    proc.wait()
                    del running[name]
                    say(f"{name}: timed out after {now - t0:.0f} s")
                    finish(job, _placeholder(job, f"timed out ({args.fit_wall:g} s)", targets))
                continue
            del running[name]
            res = Path(job["result"])
            if rc == 0 and res.exists():
                rows = json.loads(res.read_text(encoding="utf-8"))
                say(
                    f"{name}: done in {now - t0:.0f} s: "
                    + "; ".join(
                        f"{r['method']} {r['target']} {r['error']:.3f} tvd2 {r['tvd2']:.4f}"
                        for r in rows
                        if r["target"] in ("income", "outside")
                    )
                    + f" [{rows[0]['status']}]"
                )
                finish(job, rows)
            else:
                tail = (work / f"{name}.log").read_text(errors="replace")[-600:]
                say(f"{name}: FAILED rc={rc}: {tail}")
                job["note"] = tail.strip().splitlines()[-1][:200] if tail.strip() else ""
                finish(job, _placeholder(job, f"failed (rc={rc})", targets))
        if now > args.deadline:
            for job in pending:
                finish(job, _placeholder(job, "not run (deadline)", targets))
            if pending:
                say(f"deadline: {len(pending)} fits not run")
            pending = []
        while pending and len(running) < args.workers and now <= args.deadline:
            job = pending.pop(0)
            if job["peer"] == "aim":
                # AIM stops early enough to estimate, sample and score before the deadline.
                left = args.deadline - now - args.aim_margin
                job["opts"]["aim_time"] = min(args.aim_time, left)
                if left < 30:
                    finish(job, _placeholder(job, "not run (deadline)", targets))
                    continue
            logf = open(work / f"{job['name']}.log", "w", encoding="utf-8")  # noqa: SIM115
            cmd = [sys.executable, str(Path(__file__).resolve()), "--job", json.dumps(job)]
            proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env)
            running[job["name"]] = (proc, now, job)
        time.sleep(0.5)
    write_csv()
    _pack(work, jobs, out, say)
    with tarfile.open(out / "peers_worker_logs.tar.gz", "w:gz") as tar:
        for f in sorted(work.glob("*.log")):
            tar.add(f, arcname=f.name)
    n_ok = sum(1 for r in all_rows if r.get("error", "") != "")
    say(f"finished: {n_ok} result rows with metrics, {len(all_rows)} rows in all")
    log.close()
    return 0


SMOKE = {
    "smartnoise": (
        "import importlib.metadata as md\n"
        "import jax, mbi, opendp, sklearn\n"
        "from snsynth import Synthesizer\n"
        "Synthesizer.create('mst', epsilon=1.0); Synthesizer.create('aim', epsilon=1.0)\n"
        "from snsynth.utils import cdp_rho; cdp_rho(1.0, 1e-9)\n"
        "import jax.numpy as jnp; jnp.ones(3).sum().block_until_ready()\n"
        "names = ('jax', 'jaxlib', 'numpy', 'pandas', 'scipy', 'scikit-learn', 'networkx',"
        " 'opendp', 'mbi', 'chex', 'optax', 'smartnoise-synth')\n"
        "def v(n):\n"
        "    try:\n"
        "        return md.version(n)\n"
        "    except Exception:\n"
        "        return '?'\n"
        "print(jax.devices(), ', '.join(f'{n} {v(n)}' for n in names))\n"
    ),
    "datasynthesizer": (
        "import DataSynthesizer.DataDescriber, DataSynthesizer.DataGenerator, sklearn.svm\n"
        "print('DataSynthesizer ok')\n"
    ),
}


def _smoke(code: str, env: dict) -> tuple[int | None, list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        text, _ = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        proc.kill()
        text, _ = proc.communicate()
    return proc.returncode, [ln for ln in (text or "").strip().splitlines() if ln.strip()]


def preflight(env: dict, say) -> dict[str, str]:
    """Import each peer's stack in a fresh process; ``{peer: reason}`` for those that fail.

    If jax rejects the single-thread ``XLA_FLAGS``, they are dropped from ``env`` (in place)
    and the import is tried again.
    """
    broken = {}
    for k, code in SMOKE.items():
        rc, lines = _smoke(code, env)
        if rc != 0 and k == "smartnoise" and any("XLA_FLAGS" in ln for ln in lines):
            say("preflight: jax rejects XLA_FLAGS; running without them")
            env.pop("XLA_FLAGS", None)
            rc, lines = _smoke(code, env)
        if rc == 0:
            say(f"preflight {k}: {lines[-1] if lines else 'ok'}")
        else:
            reason = lines[-1][:200] if lines else f"rc={rc}"
            say(f"preflight {k} FAILED: " + " | ".join(lines[-8:]))
            peers = ("mst", "aim") if k == "smartnoise" else ("privbayes",)
            broken.update({p: reason for p in peers})
    return broken


def _pack(work: Path, jobs: list[dict], out: Path, say) -> None:
    """Synthetic codes of each task into one compressed .npz (dropped if over 15 MB)."""
    import numpy as np

    for task in {j["task"] for j in jobs}:
        arrays = {}
        for job in jobs:
            if job["task"] != task:
                continue
            for i, method in enumerate(METHODS[job["peer"]]):
                f = _codes_path(job, i)
                if f.exists():
                    key = f"{method}|{job['epsilon']:g}|{job['seed']}"
                    arrays[key] = np.load(f)
        if not arrays:
            continue
        path = out / f"peers_synth_{task}.npz"
        np.savez_compressed(path, **arrays)
        size = path.stat().st_size
        if size > 15e6:
            path.unlink()
            say(f"{path.name}: {size / 1e6:.1f} MB, over 15 MB, not kept")
        else:
            say(f"{path.name}: {len(arrays)} tables, {size / 1e6:.1f} MB")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--job", help=argparse.SUPPRESS)
    p.add_argument("--prepare", metavar="DIR", help="write the task inputs (needs ppdp) and exit")
    p.add_argument("--inputs", default=str(INPUTS))
    p.add_argument("--out", default=os.environ.get("OUT", "peers-out"))
    p.add_argument(
        "--workdir",
        default="/tmp/peers-work",
        help="per-fit files, emptied first (outside --out: only a few files come back)",
    )
    p.add_argument("--wheelhouse", default=None, help="unzip these wheels first on the path")
    p.add_argument("--site", default="/tmp/peer-site", help="where --wheelhouse unpacks")
    p.add_argument("--workers", type=int, default=14)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--tasks", default="adult,nltcs")
    p.add_argument("--peers", default="aim,mst,privbayes")
    p.add_argument("--eps-index", type=int, default=None, help="only the i-th ε of each task")
    p.add_argument("--rows", type=int, default=None, help="subsample the training rows")
    p.add_argument("--deadline", type=float, default=480.0, help="global limit (s)")
    p.add_argument("--fit-wall", type=float, default=420.0, help="per-fit kill limit (s)")
    p.add_argument("--aim-time", type=float, default=150.0, help="AIM stops new rounds after (s)")
    p.add_argument("--aim-seeds", type=int, default=3, help="seeds for AIM (the slowest peer)")
    p.add_argument(
        "--aim-margin",
        type=float,
        default=100.0,
        help="an AIM fit's time limit ends at least this long before the deadline (s)",
    )
    args = p.parse_args(argv)
    if args.wheelhouse:
        unpack_wheels(Path(args.wheelhouse), Path(args.site))
    if args.job:
        worker(json.loads(args.job))
        return 0
    if args.prepare:
        prepare(Path(args.prepare))
        return 0
    return schedule(args)


if __name__ == "__main__":
    sys.exit(main())
