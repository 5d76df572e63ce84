"""``ppdp.audit.summary``: what ``ppdp audit`` prints and why an audit did not succeed."""

from __future__ import annotations

from types import SimpleNamespace

from ppdp.audit.summary import audit_failure, audit_lines


def _result(passed, lower):
    return SimpleNamespace(
        passed=passed,
        epsilon_lower_bound=lower,
        claimed_epsilon=1.0,
        n_measure=1000,
        alpha=1e-6,
        event="x > 0",
    )


def _outcome(result, control):
    return SimpleNamespace(
        mechanism="laplace", result=result, control=control, control_failed=not control.passed
    )


def test_a_good_audit_has_no_failure_line() -> None:
    outcome = _outcome(_result(True, 0.8), _result(False, 1.6))
    lines = audit_lines(outcome)
    assert lines[0] == "ppdp audit laplace: 1,000 fresh draws per side, α = 1e-06 per audit"
    assert lines[2].split()[-1] == "pass" and lines[3].endswith("fail (as it must)")
    assert audit_failure(outcome, epsilon=1.0) is None


def test_a_passing_control_or_a_failing_mechanism_is_said() -> None:
    powerless = _outcome(_result(True, 0.8), _result(True, 0.9))
    assert "half-noise control passed" in audit_failure(powerless, epsilon=1.0)  # type: ignore[operator]
    broken = _outcome(_result(False, 1.2345), _result(False, 1.6))
    line = audit_failure(broken, epsilon=1.0)
    assert line is not None and line.startswith("laplace FAILED its audit: the lower bound 1.2345")
    assert audit_lines(broken)[2].split()[-1] == "FAIL"
