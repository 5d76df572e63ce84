"""Peer line of ``gu2022-fig1``: DataSynthesizer (PrivBayes, correlated attribute mode).

For the tasks, 2/3 : 1/3 splits and ε grid of ``ppdp reproduce gu2022-fig1`` (read from
:class:`ppdp.experiments.gu2022_fig1.Config` and :mod:`ppdp.experiments._gu2022`, so they
cannot drift), each repetition hands the *training* rows of the split (features and the
two-class ``target``) to DataSynthesizer 0.1.13 in correlated attribute mode (Bayesian
network of degree k = 2, DataSynthesizer's ε), draws a synthetic table with as many rows,
encodes it with the same ppdp schema and scale, and trains the pipeline of fig1's no-privacy
line on it: the exact Fisher direction of the synthetic rows, then scikit-learn's
``LinearSVC(C = 1)`` on the standardised 1-D projection (``_gu2022.non_private_error``). The
misclassification is measured on the real held-out rows of the same split. A second column
(``misclassification_svm_all_features``) trains the same ``LinearSVC`` on all encoded
columns instead of the projection.

Output: ``experiments-results/gu2022-fig1/peer_datasynthesizer.csv`` (task, epsilon, rep,
misclassification, misclassification_svm_all_features, seconds, n_synthetic) and a table on
stdout. ``ppdp.experiments.gu2022_fig1`` adds the line to ``summary.md`` and ``fig.png``
when that file is present (``python -m ppdp.experiments.gu2022_fig1 --summary-only``
rewrites them from the committed results without rerunning fig1).

What DataSynthesizer's ε means (read from its 0.1.13 source, ``DataDescriber.py`` and
``lib/PrivBayes.py``; our reading, not its documentation):

* the network is chosen with ε/2: d − 1 exponential-mechanism steps on mutual information with
  PrivBayes' Lemma-1 sensitivity (which takes the number of rows n as public);
* the conditional distributions get ε/2: Laplace noise of scale (d − k)/(ε/2) on the *counts*
  of d − k contingency tables, i.e. count sensitivity 1: add/remove-one neighbours. Under
  replace-one neighbours (count sensitivity 2; fig1's LDA-DP uses replace-one within a class)
  this half costs ε, not ε/2;
* correlated mode first runs independent attribute mode with the *same* ε: per-attribute
  histograms with Laplace noise (sensitivity 2/n, ε/d each) are stored in the description
  and used as the fallback distribution while sampling (a parent combination without a
  conditional distribution; the contingency tables span every combination, so in practice
  the synthetic table does not use them). So the synthetic table is ε-DP for add/remove
  and 1.5ε-DP for replace-one neighbours (n taken as public); the saved description spends
  about 2ε (add/remove) to 2.5ε (replace-one);
* not DP at all: the attribute domains are read from the input file (the set of categories
  present, the minimum and maximum of numeric columns, 20 equal-width bins between them),
  as are n, the data types, which columns are binary (it changes the sensitivity used) and
  the candidate keys. ppdp's contract forbids this (domains and bounds are declared in the
  schema, never inferred from the rows). We run it as shipped, with its defaults, because
  that is how a user meets it;
* its noise comes from numpy's global legacy generator (``np.random.seed(seed)``, default
  seed 0, so every call without a seed draws the *same* noise); we pass a distinct seed per
  (task, repetition, ε).

So the peer's numbers are at a *nominal* ε that is weaker than ppdp's ε at the same value.

Two changes to how DataSynthesizer runs, none to what it computes: its network search runs
serially instead of in a process pool (this machine is shared), and its mutual-information
helper is replaced by one on integer codes (:func:`_mutual_information`: the same partition,
the same scikit-learn score; it took one NLTCS synthesis from about 6 minutes to about 15 s).

Run (creates ``benchmarks/.peer-venv-datasynthesizer`` on first use: DataSynthesizer and
ppdp, editable, from this checkout; git-ignored, never a ppdp dependency)::

    nice python3 benchmarks/peer_datasynthesizer_gu2022.py            # 3 repetitions
    nice python3 benchmarks/peer_datasynthesizer_gu2022.py --reps 5 --tasks adult-salary

The committed CSV is the default run: 6 tasks x 5 ε x 3 repetitions (fig1 has 50) = 90
syntheses, 1,235 s on the shared 2-core machine (median 14.8 s per synthesis: about 10 s on
Adult, 15 s on NLTCS); ``--reps 2`` takes about 14 minutes. If DataSynthesizer cannot be
installed, the script says so and exits with status 3.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / "benchmarks" / ".peer-venv-datasynthesizer"
PEER = "DataSynthesizer==0.1.13"
DEFAULT_OUT = ROOT / "experiments-results" / "gu2022-fig1" / "peer_datasynthesizer.csv"
K_DEGREE = 2


def _venv_python() -> Path:
    return VENV / "bin" / "python"


def _in_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


def ensure_venv() -> Path:
    """Create the peer venv if it is missing; the path of its interpreter."""
    py = _venv_python()
    marker = VENV / ".installed"
    if marker.exists() and py.exists():
        return py
    print(f"creating {VENV} ({PEER} + ppdp editable) ...", flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    cmd = [str(py), "-m", "pip", "install", "-q", PEER, "-e", f"{ROOT}[learn]"]
    proc = subprocess.run(cmd, check=False)
    if proc.returncode != 0:
        print(f"SKIP: could not install {PEER} (pip exit {proc.returncode}); no peer line.")
        sys.exit(3)
    marker.write_text(PEER + "\n")
    return py


class _SerialPool:
    """Stands in for ``multiprocessing.Pool`` in DataSynthesizer's network search: one core."""

    def __enter__(self) -> _SerialPool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, fn, tasks):
        return [fn(t) for t in tasks]


def _mutual_information(labels_x, labels_y):
    """DataSynthesizer's ``lib.utils.mutual_information`` on integer codes.

    DataSynthesizer joins the parents' values into one string per row (a row-wise
    ``apply``) and hands strings to ``sklearn.metrics.mutual_info_score``, which sorts them:
    one synthesis of NLTCS took six minutes here. Mutual information depends only on the
    partition of the rows, so we factorise the child and the parents' value tuples to
    integers (the same partition as the joined strings: the values are bin indices or
    category names without spaces) and call the same sklearn function: the same number up
    to floating-point summation order, about a hundred times faster.
    """
    import numpy as np
    import pandas as pd
    from sklearn.metrics import mutual_info_score

    x = pd.factorize(labels_x)[0]
    code = np.zeros(len(labels_y), dtype=np.int64)
    for col in labels_y.columns:
        f, uniques = pd.factorize(labels_y[col])
        code = code * len(uniques) + f
    return mutual_info_score(x, pd.factorize(code)[0])


def synthesize(train, epsilon: float, seed: int, workdir: Path):
    """DataSynthesizer, correlated mode, k = 2, at its ε: a synthetic table like ``train``."""
    import DataSynthesizer.lib.PrivBayes
    from DataSynthesizer.DataDescriber import DataDescriber
    from DataSynthesizer.DataGenerator import DataGenerator

    DataSynthesizer.lib.PrivBayes.Pool = (
        _SerialPool  # the search's process pool pickles the table per task
    )
    DataSynthesizer.lib.PrivBayes.mutual_information = _mutual_information
    src, desc, out = workdir / "train.csv", workdir / "description.json", workdir / "synth.csv"
    train.to_csv(src, index=False)
    with contextlib.redirect_stdout(io.StringIO()):
        describer = DataDescriber()  # defaults: 20 bins, category threshold 20
        describer.describe_dataset_in_correlated_attribute_mode(
            dataset_file=str(src), k=K_DEGREE, epsilon=epsilon, seed=seed
        )
        describer.save_dataset_description_to_file(str(desc))
        generator = DataGenerator()
        generator.generate_dataset_in_correlated_attribute_mode(len(train), str(desc), seed=seed)
        generator.save_synthetic_data(str(out))
    import pandas as pd

    return pd.read_csv(out)


def to_schema(synth, schema):
    """Post-processing into the schema's domain: integer columns rounded, numerics clipped."""
    import numpy as np

    out = synth.copy()
    for col in schema.columns:
        if hasattr(col, "lower"):  # a numeric column
            v = np.clip(out[col.name].to_numpy(dtype=float), col.lower, col.upper)
            out[col.name] = np.rint(v).astype(int) if col.integer else v
        else:
            out[col.name] = out[col.name].astype(str)
    out["target"] = out["target"].astype(str)
    return out


def errors(P, synth, schema):
    """(fig1's no-privacy pipeline on the synthetic rows, LinearSVC on all columns)."""
    import dataclasses

    import numpy as np

    from ppdp.experiments import _gu2022 as gu

    X, y = schema.encode(synth)
    X = X / P.scale
    counts = tuple(int(c) for c in np.bincount(y, minlength=2))
    if min(counts) == 0:  # one class only: the SVM can only predict it
        only = float(np.mean(P.y_test != int(np.argmax(counts))))
        return only, only
    S = dataclasses.replace(P, train=synth, X_train=X, y_train=y, counts=counts)
    return gu.non_private_error(S), gu.svm_error(X, y, P.X_test, P.y_test)


def run(args: argparse.Namespace) -> int:
    import DataSynthesizer
    import numpy as np
    import pandas as pd
    from threadpoolctl import threadpool_limits

    from ppdp.experiments import _gu2022 as gu
    from ppdp.experiments import gu2022_fig1 as fig1
    from ppdp.experiments._framework import seed_sequence

    full = fig1.Config.full()
    tasks = tuple(args.tasks) if args.tasks else full.tasks
    tasks = gu.validate_tasks(tasks)
    print(
        f"DataSynthesizer {getattr(DataSynthesizer, '__version__', '0.1.13')}, correlated mode, "
        f"k={K_DEGREE}; tasks {', '.join(tasks)}; eps {list(full.epsilons)}; "
        f"{args.reps} repetitions (fig1: {full.trials}); seed {full.seed}",
        flush=True,
    )
    rows = []
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()
    data = {task: gu.load_task(task, full.n_rows, full.seed) for task in tasks}
    # Repetitions outermost, the CSV rewritten after every synthesis: a run cut short still
    # leaves whole repetitions of every task.
    with threadpool_limits(limits=1), tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            for task in tasks:
                ti = full.tasks.index(task)  # fig1's split keys use the task's index there
                df, schema = data[task]
                P = gu.prepare(df, schema, full.seed, ti, rep)
                for ei, eps in enumerate(full.epsilons):
                    seed = int(seed_sequence(full.seed, 3, ti, rep, ei).generate_state(1)[0])
                    t0 = time.perf_counter()
                    synth = to_schema(synthesize(P.train, eps, seed, Path(tmp)), schema)
                    err, err_all = errors(P, synth, schema)
                    dt = time.perf_counter() - t0
                    rows.append(
                        {
                            "task": task,
                            "epsilon": eps,
                            "rep": rep,
                            "misclassification": err,
                            "misclassification_svm_all_features": err_all,
                            "seconds": round(dt, 3),
                            "n_synthetic": len(synth),
                        }
                    )
                    pd.DataFrame(rows).to_csv(out, index=False)
                    print(
                        f"  {task:16s} rep {rep} eps={eps:<5g} error {err:.4f} "
                        f"(all-features SVM {err_all:.4f})  {dt:5.1f} s",
                        flush=True,
                    )
    res = pd.DataFrame(rows)

    # The table: the peer beside fig1's committed results where they are there.
    ours_path = out.parent / "summary.csv"
    ours = pd.read_csv(ours_path) if ours_path.exists() else None
    g = res.groupby(["task", "epsilon"]).misclassification
    agg = g.agg(["mean", "std", "count"]).reset_index()
    print()
    header = (
        f"{'task':16s} {'eps':>5s} {'peer mean':>9s} {'s.e.':>6s} {'no priv':>8s} "
        f"{'lda-rule':>8s} {'paper':>8s} {'peer/rule':>9s}"
    )
    print(header)
    print("-" * len(header))
    for r in agg.itertuples():
        se = r.std / np.sqrt(r.count) if r.count > 1 else float("nan")
        npv = rule = paper = float("nan")
        if ours is not None:
            sub = ours[ours.task == r.task]
            npv = float(sub[sub.method == "non-private"].mean_error.iloc[0])
            s = sub[(sub.method == "lda-rule") & np.isclose(sub.epsilon, r.epsilon)]
            rule = float(s.mean_error.iloc[0]) if len(s) else float("nan")
            s = sub[(sub.method == "paper-release") & np.isclose(sub.epsilon, r.epsilon)]
            paper = float(s.mean_error.iloc[0]) if len(s) else float("nan")
        print(
            f"{r.task:16s} {r.epsilon:5g} {r.mean:9.4f} {se:6.4f} {npv:8.4f} {rule:8.4f} "
            f"{paper:8.4f} {r.mean / rule:9.2f}"
        )
    print(
        f"\n{len(res)} syntheses in {time.perf_counter() - t_all:.0f} s "
        f"(median {res.seconds.median():.1f} s each); wrote {out}"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--reps", type=int, default=3, help="repetitions per (task, eps)")
    parser.add_argument("--tasks", nargs="*", default=None, help="subset of fig1's tasks")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="CSV to write")
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error(f"--reps ({args.reps}) must be an integer >= 1")
    if not _in_venv():
        py = ensure_venv()
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        os.execve(str(py), [str(py), str(Path(__file__).resolve()), *sys.argv[1:]], env)
    try:
        import DataSynthesizer  # noqa: F401
    except ImportError as exc:  # pragma: no cover - the venv was built without it
        print(f"SKIP: DataSynthesizer does not import in {VENV}: {exc}")
        return 3
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
