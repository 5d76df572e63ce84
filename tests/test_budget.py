"""PrivacyBudget, Neighbouring and Guarantee: validation, algebra, printing, serialisation."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppdp.budget import Guarantee, GuaranteeKind, Neighbouring, PrivacyBudget, mechanism_label
from ppdp.exceptions import ParameterError, ParameterTypeError, PPDPError

eps_st = st.floats(min_value=0.0, max_value=100.0, allow_nan=False)
delta_st = st.floats(min_value=0.0, max_value=0.4, allow_nan=False)
budget_st = st.builds(PrivacyBudget, eps_st, delta_st)


class TestPrivacyBudgetValidation:
    @pytest.mark.parametrize("eps", [-1.0, math.nan, math.inf, -math.inf])
    def test_bad_epsilon_values(self, eps):
        with pytest.raises(ParameterError, match=r"epsilon \("):
            PrivacyBudget(eps)

    @pytest.mark.parametrize("eps", [True, "1.0", None, [1.0]])
    def test_bad_epsilon_types(self, eps):
        with pytest.raises(ParameterTypeError, match="epsilon"):
            PrivacyBudget(eps)

    @pytest.mark.parametrize("delta", [-1e-9, 1.0, 1.5, math.nan])
    def test_bad_delta(self, delta):
        with pytest.raises(ParameterError, match=r"delta \("):
            PrivacyBudget(1.0, delta)

    def test_errors_are_ppdp_and_builtin(self):
        with pytest.raises(PPDPError):
            PrivacyBudget(-1)
        with pytest.raises(ValueError):
            PrivacyBudget(-1)
        with pytest.raises(TypeError):
            PrivacyBudget("1")

    def test_message_names_value_and_range(self):
        with pytest.raises(ParameterError) as info:
            PrivacyBudget(-1.0)
        assert str(info.value) == "epsilon (-1.0) must be a finite number >= 0"

    def test_frozen(self):
        b = PrivacyBudget(1.0)
        with pytest.raises(AttributeError):
            b.epsilon = 2.0  # type: ignore[misc]

    def test_ints_become_floats(self):
        b = PrivacyBudget(1, 0)
        assert isinstance(b.epsilon, float) and b.epsilon == 1.0 and b.is_pure


class TestPrivacyBudgetAlgebra:
    def test_add_and_sub_known_values(self):
        assert PrivacyBudget(1.0, 1e-6) + PrivacyBudget(0.5) == PrivacyBudget(1.5, 1e-6)
        assert PrivacyBudget(1.0, 1e-6) - PrivacyBudget(0.25, 1e-6) == PrivacyBudget(0.75, 0.0)

    def test_sub_floors_at_zero(self):
        assert (PrivacyBudget(0.1) - PrivacyBudget(0.3)).is_zero

    def test_order_is_componentwise(self):
        a, b = PrivacyBudget(1.0, 0.0), PrivacyBudget(0.5, 1e-6)
        assert not a <= b and not b <= a  # incomparable: a partial order
        assert PrivacyBudget(0.5) < PrivacyBudget(1.0, 1e-6)
        assert PrivacyBudget(1.0) >= PrivacyBudget(1.0)

    @given(budget_st, budget_st, budget_st)
    def test_partial_order_laws(self, a, b, c):
        assert a <= a
        if a <= b and b <= a:
            assert a == b
        if a <= b and b <= c:
            assert a <= c

    @given(budget_st, budget_st)
    def test_composition_is_monotone(self, a, b):
        assert a <= a + b and b <= a + b

    @given(budget_st)
    def test_round_trip(self, a):
        assert PrivacyBudget.from_dict(json.loads(json.dumps(a.to_dict()))) == a

    def test_str(self):
        assert str(PrivacyBudget(1.0)) == "ε=1"
        assert str(PrivacyBudget(0.5, 1e-6)) == "ε=0.5, δ=1e-06"


class TestNeighbouring:
    @pytest.mark.parametrize(
        ("text", "member"),
        [
            ("add/remove", Neighbouring.ADD_REMOVE),
            ("replace-one", Neighbouring.REPLACE_ONE),
            ("bounded", Neighbouring.REPLACE_ONE),
            ("Unbounded", Neighbouring.ADD_REMOVE),
        ],
    )
    def test_parse(self, text, member):
        assert Neighbouring.parse(text) is member

    def test_parse_rejects_unknown(self):
        with pytest.raises(ParameterError, match=r"relation \('swap'\) must be one of"):
            Neighbouring.parse("swap")


class TestGuarantee:
    def test_pure_text(self):
        g = Guarantee.pure(
            1.0, relation="replace-one", mechanism="Laplace", assumptions=["L1 sensitivity 2"]
        )
        assert str(g) == (
            "ε-differential privacy with ε=1, neighbouring: replace-one "
            "(mechanism: Laplace; assumes: L1 sensitivity 2)"
        )
        assert g.budget == PrivacyBudget(1.0)

    def test_approx_with_zero_delta_is_pure(self):
        assert Guarantee.approx(1.0, 0.0, relation="add/remove").kind is GuaranteeKind.PURE

    def test_approx_text_and_budget(self):
        g = Guarantee.approx(0.5, 1e-6, relation="add/remove")
        assert "(ε, δ)-differential privacy with ε=0.5, δ=1e-06" in str(g)
        assert g.budget == PrivacyBudget(0.5, 1e-6)

    def test_none_states_reason_and_has_no_budget(self):
        g = Guarantee.none("raw projections of every record are published")
        assert not g.is_private and g.budget is None
        assert "no formal privacy guarantee" in str(g)
        assert "reason: raw projections" in str(g)

    def test_zcdp_and_local(self):
        assert "ρ=0.5" in str(Guarantee.zcdp(0.5, relation="add/remove"))
        loc = Guarantee.local(2.0)
        assert loc.relation is None and loc.budget == PrivacyBudget(2.0)

    @pytest.mark.parametrize(
        "g",
        [
            Guarantee.pure(1.0, relation="replace-one", details={"sensitivity": 2.0}),
            Guarantee.approx(0.3, 1e-7, relation="add/remove", assumptions=("n public",)),
            Guarantee.zcdp(0.1, relation="add/remove"),
            Guarantee.pufferfish(1.0, assumptions=("true model in Θ",)),
            Guarantee.local(1.5, mechanism="randomised response"),
            Guarantee.none("not DP as written"),
        ],
    )
    def test_serialisation_round_trip(self, g):
        data = json.loads(json.dumps(g.to_dict(), allow_nan=False))
        assert data["statement"] == str(g)
        assert Guarantee.from_dict(data) == g

    @pytest.mark.parametrize(
        ("g", "line"),
        [
            (
                Guarantee.pure(1.0, relation="replace-one", mechanism="DP-PCA (Jiang et al. 2013)"),
                "ε-DP, ε = 1, replace-one — DP-PCA (Jiang et al. 2013)",
            ),
            (
                Guarantee.approx(
                    1.0, 1e-6, relation="add/remove", mechanism="LDA-DP (Gu, Zhang & Zhang 2022)"
                ),
                "(ε, δ)-DP, ε = 1, δ = 1e-06, add/remove — LDA-DP (Gu, Zhang & Zhang 2022)",
            ),
            (
                Guarantee.zcdp(0.5, relation="add/remove", mechanism="Gaussian"),
                "ρ-zCDP, ρ = 0.5, add/remove — Gaussian",
            ),
            (
                Guarantee.pufferfish(0.5, mechanism="MQMExact", assumptions=("model in Θ",)),
                "ε-Pufferfish, ε = 0.5, replace-one — MQMExact",
            ),
            (
                Guarantee.local(2.0, mechanism="additive(laplace, scale=0.5, domain=[0, 1])"),
                "ε-local differential privacy, ε = 2, per respondent — "
                "additive(laplace, scale=0.5, domain=[0, 1])",
            ),
            (
                Guarantee.local(
                    2.5,
                    1e-6,
                    mechanism="characteristic-vector(discrete-normal, k=40, γ=0.5, sigma=1.5)",
                ),
                "(ε, δ)-local differential privacy, ε = 2.5, δ = 1e-06, per respondent — "
                "characteristic-vector(discrete-normal, …)",
            ),
            (
                Guarantee.none(
                    "raw projections: the exact projection of every record is released",
                    mechanism="LDA-DP (Gu, Zhang & Zhang 2022)",
                ),
                "no privacy guarantee: raw projections — LDA-DP (Gu, Zhang & Zhang 2022)",
            ),
            (
                Guarantee.none("no finite ε at δ=0 for Gaussian noise (pass delta > 0)"),
                "no privacy guarantee: no finite ε at δ=0 for Gaussian noise",
            ),
            (Guarantee.pure(0.25, relation="replace-one"), "ε-DP, ε = 0.25, replace-one"),
        ],
    )
    def test_summary_is_one_line(self, g, line):
        assert g.summary() == line
        assert "\n" not in g.summary() and len(g.summary()) < len(str(g)) + 40

    @pytest.mark.parametrize(
        ("mechanism", "label"),
        [
            ("Laplace", "Laplace"),
            (
                "EXP (per-record reading of Jiang et al. 2013's EXP baseline)",
                "EXP (Jiang et al. 2013)",
            ),
            (
                "PrivateLogisticRegression: objective perturbation (CMS11 Alg. 2) with a certified "
                "residual step",
                "PrivateLogisticRegression: objective perturbation (CMS11)",
            ),
            (
                "PrivateRBFSVM (Laplace output perturbation, Rubinstein et al.)",
                "PrivateRBFSVM (Rubinstein et al.)",
            ),
            ("Mul-LDA-DP round: " + "x " * 40, "Mul-LDA-DP round"),
        ],
    )
    def test_mechanism_label(self, mechanism, label):
        assert mechanism_label(mechanism) == label

    def test_summary_stays_short_when_the_statement_is_long(self):
        long = Guarantee.pure(
            1.0,
            relation="replace-one",
            mechanism="PrivateLogisticRegression: objective perturbation (CMS11 Alg. 2) with a "
            "certified residual step",
            assumptions=("records scaled by the declared data_norm",) * 10,
        )
        assert long.summary() == (
            "ε-DP, ε = 1, replace-one — PrivateLogisticRegression: objective perturbation (CMS11)"
        )
        assert len(long.summary()) <= 100 < len(str(long))

    def test_missing_parameters_rejected(self):
        with pytest.raises(ParameterError, match="relation"):
            Guarantee(GuaranteeKind.PURE, epsilon=1.0)
        with pytest.raises(ParameterError, match="delta"):
            Guarantee(GuaranteeKind.APPROX, epsilon=1.0, relation=Neighbouring.ADD_REMOVE)
        with pytest.raises(ParameterError, match="rho"):
            Guarantee(GuaranteeKind.ZCDP, relation=Neighbouring.ADD_REMOVE)

    def test_frozen(self):
        g = Guarantee.pure(1.0, relation="replace-one")
        with pytest.raises(AttributeError):
            g.epsilon = 2.0  # type: ignore[misc]
