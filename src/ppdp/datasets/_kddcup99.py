"""KDD Cup 1999 (10% file): a seeded 70,000-row sample and its declared schema."""

from __future__ import annotations

import hashlib
import io
from typing import Literal

import pandas as pd

from ppdp._validation import check_option
from ppdp.data.schema import CategoricalColumn, LabelSpec, NumericColumn, Schema
from ppdp.datasets._files import read_bytes
from ppdp.exceptions import DataValidationError

#: The shipped file (relative to ``ppdp/datasets/data/``) and its SHA-256.
SAMPLE_FILE = "kddcup99/kddcup99_10pct_sample70k.csv.gz"
SAMPLE_SHA256 = "350112eaa5af0edee3f29fbaa49540b0045e0597f10e55ad69b4f8f6e40423a2"

#: Attack types of the 10% file that are denial-of-service attacks (the UCI
#: ``training_attack_types`` grouping: back, land, neptune, pod, smurf, teardrop).
DOS_ATTACKS = ("back.", "land.", "neptune.", "pod.", "smurf.", "teardrop.")

#: Binary tasks: task -> (class names (negative, positive)).
TASKS = {
    "dos": ("not-dos", "dos"),
    "attack": ("normal", "attack"),
}
LABEL = "label"
#: Name of the column that keeps the source's 23-class label (not part of the schema).
ATTACK_TYPE = "attack_type"

# Numeric columns in file order, with their declared bounds and where each bound comes from:
#   "definition": the feature is a rate (a fraction in [0, 1]) or a 0/1 flag by definition;
#   "construction": the KDD feature extraction saturates the counter at this value
#       (it equals the observed maximum of the 10% file);
#   "clipping": a round clipping bound we declare (heavy-tailed or rare counts); larger
#       values are clipped on encoding and counted in the custodian's log.
_NUMERIC: dict[str, tuple[float, float, str]] = {
    "duration": (0, 3600, "clipping"),
    "src_bytes": (0, 10_000, "clipping"),
    "dst_bytes": (0, 10_000, "clipping"),
    "land": (0, 1, "definition"),
    "wrong_fragment": (0, 10, "clipping"),
    "urgent": (0, 10, "clipping"),
    "hot": (0, 10, "clipping"),
    "num_failed_logins": (0, 10, "clipping"),
    "logged_in": (0, 1, "definition"),
    "num_compromised": (0, 10, "clipping"),
    "root_shell": (0, 1, "definition"),
    "su_attempted": (0, 10, "clipping"),
    "num_root": (0, 10, "clipping"),
    "num_file_creations": (0, 10, "clipping"),
    "num_shells": (0, 10, "clipping"),
    "num_access_files": (0, 10, "clipping"),
    "num_outbound_cmds": (0, 10, "clipping"),
    "is_host_login": (0, 1, "definition"),
    "is_guest_login": (0, 1, "definition"),
    "count": (0, 511, "construction"),
    "srv_count": (0, 511, "construction"),
    "serror_rate": (0, 1, "definition"),
    "srv_serror_rate": (0, 1, "definition"),
    "rerror_rate": (0, 1, "definition"),
    "srv_rerror_rate": (0, 1, "definition"),
    "same_srv_rate": (0, 1, "definition"),
    "diff_srv_rate": (0, 1, "definition"),
    "srv_diff_host_rate": (0, 1, "definition"),
    "dst_host_count": (0, 255, "construction"),
    "dst_host_srv_count": (0, 255, "construction"),
    "dst_host_same_srv_rate": (0, 1, "definition"),
    "dst_host_diff_srv_rate": (0, 1, "definition"),
    "dst_host_same_src_port_rate": (0, 1, "definition"),
    "dst_host_srv_diff_host_rate": (0, 1, "definition"),
    "dst_host_serror_rate": (0, 1, "definition"),
    "dst_host_srv_serror_rate": (0, 1, "definition"),
    "dst_host_rerror_rate": (0, 1, "definition"),
    "dst_host_srv_rerror_rate": (0, 1, "definition"),
}
#: Numeric columns holding fractions; every other numeric column holds integers.
_RATES = frozenset(k for k in _NUMERIC if k.endswith("_rate"))
_SERVICES = (
    "IRC", "X11", "Z39_50", "auth", "bgp", "courier", "csnet_ns", "ctf", "daytime", "discard",
    "domain", "domain_u", "echo", "eco_i", "ecr_i", "efs", "exec", "finger", "ftp", "ftp_data",
    "gopher", "hostnames", "http", "http_443", "imap4", "iso_tsap", "klogin", "kshell", "ldap",
    "link", "login", "mtp", "name", "netbios_dgm", "netbios_ns", "netbios_ssn", "netstat",
    "nnsp", "nntp", "ntp_u", "other", "pm_dump", "pop_2", "pop_3", "printer", "private",
    "red_i", "remote_job", "rje", "shell", "smtp", "sql_net", "ssh", "sunrpc", "supdup",
    "systat", "telnet", "tftp_u", "tim_i", "time", "urh_i", "urp_i", "uucp", "uucp_path",
    "vmnet", "whois",
)  # fmt: skip
_CATEGORIES: dict[str, tuple[str, ...]] = {
    "protocol_type": ("icmp", "tcp", "udp"),
    "service": _SERVICES,
    "flag": ("OTH", "REJ", "RSTO", "RSTOS0", "RSTR", "S0", "S1", "S2", "S3", "SF", "SH"),
}
#: The 41 feature columns in file order.
FEATURES = (
    "duration",
    "protocol_type",
    "service",
    "flag",
    *(c for c in _NUMERIC if c != "duration"),
)
_INTEGER = frozenset(_NUMERIC) - _RATES


def kddcup99_schema(task: Literal["dos", "attack"] = "dos") -> Schema:
    """The declared schema of the KDD Cup 99 sample for a binary ``task``.

    38 numeric columns and three categorical ones (``protocol_type`` 3, ``service`` 66 with
    undeclared services mapped to its ``other`` category, ``flag`` 11): 118 encoded columns.
    The label ``label`` has the classes ``("not-dos", "dos")`` for ``task="dos"`` or
    ``("normal", "attack")`` for ``task="attack"``. See :func:`load_kddcup99` for where
    each numeric bound comes from.

    Examples
    --------
    >>> s = kddcup99_schema()
    >>> s.n_features, s.classes
    (118, ('not-dos', 'dos'))
    """
    task = check_option("task", task, tuple(TASKS))
    columns: list[NumericColumn | CategoricalColumn] = []
    for name in FEATURES:
        if name in _CATEGORIES:
            other = "other" if name == "service" else None
            columns.append(CategoricalColumn(name, _CATEGORIES[name], other=other))
        else:
            lo, hi, _ = _NUMERIC[name]
            columns.append(NumericColumn(name, lo, hi, integer=name in _INTEGER))
    return Schema(columns=tuple(columns), label=LabelSpec(LABEL, TASKS[task]), nan_policy="error")


def bound_sources() -> dict[str, str]:
    """Where each numeric bound comes from: ``"definition"``, ``"construction"`` or
    ``"clipping"`` (see :func:`load_kddcup99`)."""
    return {name: src for name, (_, _, src) in _NUMERIC.items()}


def load_kddcup99(*, task: Literal["dos", "attack"] = "dos") -> tuple[pd.DataFrame, Schema]:
    """A seeded 70,000-row sample of the KDD Cup 1999 10% file, with a binary label.

    Chaudhuri, Monteleoni & Sarwate (2011) ran their experiments on a random sample of about
    70,000 connections of this file; their sample is not available, so ``ppdp`` ships its
    own: 70,000 rows drawn without replacement from the 494,021 rows of
    ``kddcup.data_10_percent`` with ``numpy.random.default_rng(2011)`` (source order and
    duplicate rows kept, lines byte-identical to the source). Provenance, checksums and
    terms: :func:`ppdp.datasets.dataset_info` ``("kddcup99")``.

    Parameters
    ----------
    task : {"dos", "attack"}, default "dos"
        ``"dos"``: a denial-of-service attack (back, land, neptune, pod, smurf, teardrop)
        versus anything else, the task of Chaudhuri et al. (2011) (20.95% ``not-dos`` in
        the sample). ``"attack"``: ``normal`` (19.81%) versus any attack.

    Returns
    -------
    df : DataFrame
        70,000 rows: the 41 features (string categoricals, integer or float numerics), the
        binary ``label`` and ``attack_type`` (the source's 23-class label with its trailing
        period, e.g. ``"smurf."``; not part of the schema, so encoding ignores it).
    schema : Schema
        See :func:`kddcup99_schema`; 118 encoded feature columns.

    Notes
    -----
    The numeric bounds are of three kinds (:func:`bound_sources`):

    * **definition** (23 columns): the 15 ``*_rate`` columns are fractions in ``[0, 1]``;
      ``land``, ``logged_in``, ``root_shell``, ``is_host_login``, ``is_guest_login`` are
      0/1 flags.
    * **construction** (4 columns): ``count`` and ``srv_count`` in ``[0, 511]``,
      ``dst_host_count`` and ``dst_host_srv_count`` in ``[0, 255]``: the counters of the
      KDD feature extraction saturate there. These values also equal the observed maxima
      of the 10% file.
    * **clipping** (14 columns): bounds we declare, round numbers, and larger values are
      clipped: ``duration`` at 3,600 s, ``src_bytes`` and ``dst_bytes`` at 10,000 bytes,
      the rare per-connection counts (``hot``, ``num_root``, ...) at 10. They were chosen
      with the public data's quantiles in view, which is harmless here; on private data,
      clipping bounds must be fixed without looking at the data.

    Chaudhuri et al. instead divided each column by its maximum over the data: a
    data-dependent scaling that leaks (ALGORITHMS-learning A.9 (7)). With the bounds above
    a few large byte counts and durations are clipped, so the encoding differs from theirs.

    References
    ----------
    S. Stolfo, W. Fan, W. Lee, A. Prodromidis, P. Chan. "Cost-based Modeling for Fraud and
    Intrusion Detection: Results from the JAM Project." DISCEX 2000. K. Chaudhuri,
    C. Monteleoni, A. D. Sarwate. "Differentially Private Empirical Risk Minimization."
    JMLR 12, 2011.

    Examples
    --------
    >>> df, schema = load_kddcup99()
    >>> df.shape, schema.n_features
    ((70000, 43), 118)
    >>> df["label"].value_counts().to_dict()
    {'dos': 55335, 'not-dos': 14665}
    """
    task = check_option("task", task, tuple(TASKS))
    data = read_bytes(SAMPLE_FILE)
    if hashlib.sha256(data).hexdigest() != SAMPLE_SHA256:  # also when _files lacks the entry
        raise DataValidationError(
            f"shipped file {SAMPLE_FILE!r} does not match its SHA-256 checksum; reinstall ppdp"
        )
    raw = pd.read_csv(io.BytesIO(data), compression="gzip")
    attack_type = raw[LABEL].astype(str)
    negative, positive = TASKS[task]
    is_pos = attack_type.isin(DOS_ATTACKS) if task == "dos" else attack_type != "normal."
    df = raw.loc[:, list(FEATURES)].copy()
    df[LABEL] = is_pos.map({True: positive, False: negative}).astype(object)
    df[ATTACK_TYPE] = attack_type.astype(object)
    return df, kddcup99_schema(task)
