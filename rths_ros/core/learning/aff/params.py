"""Parameters of the adaptive feedforward filters (scenario section ``aff``): the FIR filter with
filtered-x LMS (:mod:`rths_ros.core.learning.aff.fxlms`) and the harmonic basis
(:mod:`rths_ros.core.learning.aff.harmonic_legs`), kept apart from both so neither imports the other."""
from __future__ import annotations

from dataclasses import dataclass

from rths_ros.params import ParameterError, param

__all__ = ["AffParams", "HarmonicFeedforwardParams", "HarmonicSupervisorParams", "ALGORITHMS"]


ALGORITHMS = ("lms", "qr_rls")


@dataclass(frozen=True)
class HarmonicSupervisorParams:
    """Power-flow supervisor of Bartl 2019 Alg. 2 (eqs. 5.25-5.28) on the contact test: one supervisor for the six
    leg filters, driven by the power into the transfer system at the interface DoF,
    P_in = lam_VIR . d/dt (z_ach - z_cmd) with lam_VIR = -F_int (the force on the numerical part)."""

    enabled: bool = param(False, "", doc="supervise mu_LMS and gamma_LMS of the six leg filters (needs "
                                         "algorithm lms): P_in < p_lim_w lowers mu and raises the leakage")
    p_lim_w: float = param(-1.0, "W", -1e9, 0.0, "power-inflow limit P_lim < 0 (Tables B.3/B.4: -1 W; "
                                                 "Table 6.3: -0.3 W)")
    da_mu_down: float = param(1e-4, "", 0.0, 1.0, "step Delta_down a_mu per violating sample (Table B.4: 1e-4)")
    da_gamma_up: float = param(0.01, "", 0.0, 1.0, "step Delta_up a_gamma per violating sample (Table B.3: 0.01)")
    da_gamma_down: float = param(0.001, "", 0.0, 1.0, "step Delta_down a_gamma per passive sample (Table B.3: "
                                                      "0.001)")
    b_mu: float = param(10.0, "", 1.0, 100.0, "exponent b_mu of mu = mu_lms a_mu^b_mu (Table B.3: 10)")
    b_gamma: float = param(2.0, "", 1.0, 100.0, "exponent b_gamma of gamma = gamma_max a_gamma^b_gamma "
                                                "(Table B.3: 2)")
    gamma_max: float = param(1.0, "", 0.0, 1e9, "maximum regularisation gamma_max, units of lambda_max = "
                                                "|S|^2 (m/m)^2 of the leg filters (Table B.3: 1)")
    p_in_filter_s: float = param(0.0, "s", 0.0, 10.0, "time constant of a first-order low-pass on P_in before the "
                                                     "comparison with P_lim; 0 = unfiltered (the thesis's form)")


@dataclass(frozen=True)
class HarmonicFeedforwardParams:
    """Harmonic AFF on the legs (aff.kind = harmonic); laws and gains of Bartl 2019 §5.1-5.4."""

    n_harmonics: int = param(24, "", 1, 200, "number n of harmonics of the fundamental in the basis W(t) "
                                             "(f, 2f, ..., n f)")
    base_frequency_hz: float = param(0.0, "Hz", 0.0, 1000.0, "fundamental f of the basis; 0 = the test's "
                                                             "frequency numerical.contact_1d.f_d_hz")
    algorithm: str = param("lms", "", doc="adaptation law of the weights: lms = leaky normalised LMS (eqs. "
                           "5.18-5.20), qr_rls = QR-RLS with the estimated external gap (Alg. 3)",
                           choices=ALGORITHMS)
    mu_lms: float = param(0.0007, "", 0.0, 2.0, "normalised LMS gain mu_LMS (mu_bar = mu_LMS / (lambda_max + "
                                                "gamma_LMS)); each harmonic's band mu_bar / (4 pi dT) must stay well "
                                                "below the harmonic spacing f (contact test: 0.001 is the limit)")
    gamma_lms: float = param(0.0, "", 0.0, 1e6, "LMS regularisation gamma_LMS (leakage nu = 1 - mu_bar gamma_LMS; "
                                                "units of lambda_max = S^2, here (m/m)^2)")
    mu_rls: float = param(0.9999, "", 0.9, 1.0, "QR-RLS forgetting factor mu_RLS (memory dT / (1 - mu_RLS); "
                                                "keep it longer than one period 1/f)")
    gamma_rls: float = param(1000.0, "", 0.0, 1e9, "QR-RLS start confidence Xi = gamma_RLS I of theta = 0 "
                                                   "(about 2 gamma_RLS samples of data; small values let the first, "
                                                   "ill-conditioned fits explode)")
    supervisor: HarmonicSupervisorParams = param(HarmonicSupervisorParams(), doc="power-flow supervisor (Alg. 2) "
                                                 "of the LMS gains, shared by the six legs")

    def validate(self) -> None:
        if self.supervisor.enabled and self.algorithm != "lms":
            raise ParameterError(f"supervisor.enabled: true needs algorithm 'lms' (Alg. 2 tunes mu_LMS and "
                                 f"gamma_LMS), not {self.algorithm!r}")

    def frequencies_hz(self, f_d_hz: float) -> tuple[float, ...]:
        f = self.base_frequency_hz if self.base_frequency_hz > 0.0 else float(f_d_hz)
        if not f > 0.0:
            raise ParameterError(f"aff.harmonic.base_frequency_hz: no fundamental (base_frequency_hz = "
                                 f"{self.base_frequency_hz!r}, f_d = {f_d_hz!r})")
        return tuple(f * (h + 1) for h in range(self.n_harmonics))


@dataclass(frozen=True)
class AffParams:
    """Adaptive feedforward filter of Insam 2022 ch. 7; defaults = the standard parameters of Table A.5."""

    enabled: bool = param(False, "", doc="adaptive feedforward filter on (off: the output is 0, nothing adapts)")
    kind: str = param("fir", "", doc="filter: fir = filtered-x LMS FIR filters of Insam 2022 ch. 7 (mu, nu, "
                      "n_taps, delta, algorithm, regressor), harmonic = harmonic-basis AFF of Bartl 2019 ch. 5 on the "
                      "harmonics of f_d (aff.harmonic)", choices=("fir", "harmonic"))
    harmonic: HarmonicFeedforwardParams = param(HarmonicFeedforwardParams(), doc="harmonic-basis AFF per leg "
                                                "(aff.kind = harmonic; docs/harmonic_aff.md)")
    mu: float = param(0.1, "", 0.0, 2.0, "adaptation gain mu_LMS of the normalised update (Table A.5: 0.1)")
    nu: float = param(0.99999, "", 0.0, 1.0, "leakage factor nu_LMS = 1 - mu_LMS gamma_LMS (Table A.5: 0.99999)")
    n_taps: int = param(100, "", 1, 1000, "FIR filter length N_FIR per leg (Table A.5: 100)")
    delta: float = param(0.001, "m^2", 1e-15, 1e3,
                         "regularisation delta of the normalisation mu / (delta + |b~|^2) (Table A.5: 0.001)")
    secondary_path: str = param("closed_loop", "", doc="model S of the path from the injected displacement to the "
                                "measured leg length: closed_loop = ZOH-discretised closed-loop leg transfer "
                                "function (Table 4.1 + cascade gains), identity = S = 1",
                                choices=("closed_loop", "identity"))
    algorithm: str = param("modified", "", doc="adaptation error: fxlms = the gap g_k (eq. 7.4 as printed; "
                           "unstable at mu = 0.1 in the twin), modified = the gap the current coefficients would "
                           "have left, g_k + S(u)_k - Theta b~_k (modified FXLMS; stable for 0 < mu < 2 with an "
                           "exact secondary-path model)", choices=("modified", "fxlms"))
    regressor: str = param("deviation", "", doc="FIR input: deviation of the desired leg length from the home "
                           "length, or the absolute length (as written in the thesis; for comparison only)",
                           choices=("deviation", "absolute"))
