"""Initial-condition optimisation of the VPP gait model with CMA-ES (Insam 2022, §15.2.1 and §16.2.1).

Variables (as in the thesis): forward speed ``x'_0``, CoM height ``y_0`` and trunk rate ``phi'_0``;
``x_0 = 0``, ``y'_0 = 0`` and ``phi_0`` are fixed, the model starts in left single support with the
left leg vertical (foot flat, §16.2).

Cost (the thesis names the quantities but not the weighting; chosen here): the model is simulated for
``n_strides`` strides and, at each return to the Poincaré section "hip passes over the left foot
point", the deviation from the initial section state is summed as

    J = sum_strides [ (dy/0.01 m)^2 + (dy'/0.05 m/s)^2 + (dx'/0.05 m/s)^2 + (dphi/0.05 rad)^2
                      + (dphi'/0.1 rad/s)^2 ]

A fall or a stride that is not completed within ``t_stride_max_s`` costs ``1e3 + 1e2 * missing strides``.

Stability check (§15.2.1): the model must complete 50 steps (touch-downs) without falling and the
forward speed sampled at every mid-stance (hip over the stance foot) may not change by more than 5 %
from one step to the next (:func:`stability_check`).

Optimiser: ``cma`` (Hansen's CMA-ES), sigma in scaled variables (``x'_0``/0.05, ``y_0``/0.005,
``phi'_0``/0.05), bounds from :class:`~rths_ros.core.models.gait.vpp_params.VppParams`.  ``fix_y0`` keeps the start
height fixed and optimises ``x'_0`` and ``phi'_0`` only.

Modified model of a gait scenario (:func:`scenario_model`): the scenario's ``numerical.vpp`` (stump ``k_u``,
``d_u``, ``m_IFP``, CoP shift) closed by a linear foot spring whose stiffness is the secant stiffness of the
scenario's simulated foot at foot flat under one body weight (:func:`scenario_foot_stiffness`), the same model as
the pure reference of the gait analysis.  ``python -m rths_ros.app.gait_ic --scenario gait_vpp ...`` optimises
its initial conditions and prints them as the scenario keys ``numerical.vpp.amp_*`` (docs/gait.md).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from rths_ros.core.models.gait import vpp, vpp_params
from rths_ros.params import ParameterError

SCALES = np.array([0.01, 0.05, 0.05, 0.05, 0.1])  # y, y', x', phi, phi'
VAR_SCALES = np.array([0.05, 0.005, 0.05])  # x'_0, y_0, phi'_0


@dataclass(frozen=True)
class OptResult:
    """CMA-ES outcome: best initial conditions, cost before/after, evaluations, stability check."""

    xd0_m_per_s: float
    y0_m: float
    phid0_rad_per_s: float
    cost_start: float
    cost_best: float
    evaluations: int
    stable: dict

    def ic(self, phi0: float = 0.0) -> dict:
        return {"xd0_m_per_s": self.xd0_m_per_s, "y0_m": self.y0_m, "phi0_rad": phi0,
                "phid0_rad_per_s": self.phid0_rad_per_s}


def _ic(x, phi0):
    return {"xd0_m_per_s": float(x[0]), "y0_m": float(x[1]), "phi0_rad": phi0, "phid0_rad_per_s": float(x[2])}


def periodicity_cost(p: vpp_params.VppParams, xd0: float, y0: float, phid0: float, amputee: bool = False,
                     n_strides: int = 1, t_stride_max_s: float = 2.0, P: np.ndarray | None = None) -> float:
    """Stride-to-stride deviation cost ``J`` (module doc) of the initial conditions."""
    ic = _ic((xd0, y0, phid0), p.phi0_rad)
    try:
        rec = vpp.simulate(p, n_steps=2 * n_strides + 2, t_max_s=t_stride_max_s * n_strides, amputee=amputee,
                           foot="spring", ic=ic, decimate=10 ** 9, P=P)
    except ParameterError:
        return 1e4
    ref = np.array([y0, 0.0, xd0, p.phi0_rad, phid0])
    sec = rec["sections"][:n_strides]
    cost = 0.0
    for row in sec:
        cost += float(np.sum(((row[1:] - ref) / SCALES) ** 2))
    missing = n_strides - len(sec)
    if missing > 0 or not np.isfinite(cost):
        cost = 1e3 + 1e2 * missing + (cost if np.isfinite(cost) else 0.0)
    return cost


def step_speeds(rec: dict) -> np.ndarray:
    """Forward speed at each mid-stance (hip passing over the current stance foot), one per step."""
    x, vx, phi = rec["x"], rec["vx"], rec["phi"]
    out = []
    for leg in ("l", "r"):
        c = rec[f"contact_{leg}"] > 0.5
        rel = (x - rec["r_h_m"] * np.sin(phi)) - rec[f"fp_{leg}"]
        idx = np.nonzero(c[:-1] & c[1:] & (rel[:-1] < 0.0) & (rel[1:] >= 0.0))[0]
        for i in idx:
            th = rel[i] / (rel[i] - rel[i + 1])
            out.append((rec["t"][i] + th * (rec["t"][i + 1] - rec["t"][i]), vx[i] + th * (vx[i + 1] - vx[i])))
    out.sort()
    return np.array([v for _, v in out])


def stability_check(p: vpp_params.VppParams, ic: dict | None = None, amputee: bool = False, n_steps: int = 50,
                    max_rel_change: float = 0.05) -> dict:
    """50-step walk: completed steps, fall flag, maximum step-to-step relative speed change, verdict."""
    rec = vpp.simulate(p, n_steps=n_steps + 1, t_max_s=2.0 * n_steps, amputee=amputee, foot="spring", ic=ic,
                       decimate=1)
    v = step_speeds(rec)
    rel = np.abs(np.diff(v)) / np.abs(v[:-1]) if len(v) > 1 else np.array([np.inf])
    steps = rec["n_td"]
    max_rel = float(rel.max()) if rel.size else math.inf
    return {"steps": int(steps), "fallen": bool(rec["fallen"]), "max_rel_speed_change": max_rel,
            "mean_speed_m_per_s": float(v.mean()) if len(v) else math.nan,
            "stable": bool(steps >= n_steps and not rec["fallen"] and max_rel < max_rel_change)}


def optimise_ic(p: vpp_params.VppParams, amputee: bool = False, x0: tuple | None = None, sigma0: float = 1.0,
                max_evals: int = 1500, n_strides: int = 1, seed: int = 1, check: bool = True,
                fix_y0: float | None = None) -> OptResult:
    """CMA-ES over (x'_0, y_0, phi'_0) minimising :func:`periodicity_cost`; with ``fix_y0`` the start height is
    that value and only (x'_0, phi'_0) are optimised.

    ``x0`` (x'_0, y_0, phi'_0) defaults to the thesis's Table A.7 initial conditions.  Returns the best point
    found, its cost, the start cost, the number of cost evaluations and (``check``) the 50-step stability check.
    """
    import cma

    if x0 is None:
        a7 = vpp_params.THESIS_IC_A7
        x0 = (a7["xd0_m_per_s"], a7["y0_m"], a7["phid0_rad_per_s"])
    x0 = np.asarray(x0, dtype=float).copy()
    free = np.array([0, 2]) if fix_y0 is not None else np.arange(3)
    if fix_y0 is not None:
        x0[1] = float(fix_y0)
    P = vpp_params.param_vector(p, amputee, "spring")

    def point(z):
        x = x0.copy()
        x[free] += np.asarray(z) * VAR_SCALES[free]
        return x

    def f(z):
        x = point(z)
        return periodicity_cost(p, x[0], x[1], x[2], amputee, n_strides, P=P)

    z0 = np.zeros(free.size)
    c0 = f(z0)
    es = cma.CMAEvolutionStrategy(z0, sigma0, {"seed": seed, "maxfevals": max_evals, "verbose": -9,
                                               "tolfun": 1e-12, "tolx": 1e-9})
    es.optimize(f)
    zb = es.result.xbest if es.result.xbest is not None else z0
    fb = float(es.result.fbest) if es.result.fbest is not None else c0
    if fb > c0:
        zb, fb = z0, c0
    xb = point(zb)
    stable = stability_check(p, _ic(xb, p.phi0_rad), amputee) if check else {}
    return OptResult(float(xb[0]), float(xb[1]), float(xb[2]), float(c0), fb, int(es.result.evaluations), stable)


def scenario_foot_stiffness(s) -> float:
    """Secant stiffness [N/m] of the scenario's simulated foot (``sim_plant.foot``) at foot flat under one body
    weight of ``numerical.vpp``."""
    from rths_ros.core.plant.prosthetic_foot import ProstheticFoot
    vp = s.numerical.vpp
    return ProstheticFoot(s.sim_plant.foot).secant_stiffness(vp.m_vpp_kg * vp.g_m_per_s2)


def scenario_model(s) -> vpp_params.VppParams:
    """The modified (amputee) model of a gait scenario for the initial-condition optimisation: its
    ``numerical.vpp`` with the foot spring ``k_f`` = :func:`scenario_foot_stiffness` (module doc)."""
    return dataclasses.replace(s.numerical.vpp, k_f_n_per_m=scenario_foot_stiffness(s))


def scenario_ic(s) -> dict:
    """The initial conditions a gait scenario starts from (``numerical.gait.initial_conditions``)."""
    vp = s.numerical.vpp
    if s.numerical.gait.initial_conditions == "thesis_a7":
        return dict(vpp_params.THESIS_IC_A7)
    return {"y0_m": vp.amp_y0_m, "xd0_m_per_s": vp.amp_xd0_m_per_s, "phi0_rad": vp.phi0_rad,
            "phid0_rad_per_s": vp.amp_phid0_rad_per_s}


#: The thesis's own configuration of the RTHS walker (ch. 16-17) as scenario overrides: the Table A.7 initial
#: conditions (optimised on the basic model, §16.2.2) and the heel-to-toe CoP shift of eq. 16.10 on both legs
#: (§16.1.2, §17.3).  ``rths run gait_vpp --set numerical.vpp.cop_shift=true --set
#: numerical.gait.initial_conditions=thesis_a7``; its gait and why the scenario does not start so: docs/gait.md.
THESIS_CONFIGURATION = ("numerical.vpp.cop_shift=true", "numerical.gait.initial_conditions=thesis_a7")


def thesis_configuration(s):
    """Copy of the gait scenario ``s`` in the thesis's configuration (:data:`THESIS_CONFIGURATION`): CoP shift on,
    Table A.7 initial conditions; everything else (stump, foot, platform) as in ``s``."""
    num = s.numerical
    return dataclasses.replace(s, numerical=dataclasses.replace(
        num, vpp=dataclasses.replace(num.vpp, cop_shift=True),
        gait=dataclasses.replace(num.gait, initial_conditions="thesis_a7")))


def with_ic(p: vpp_params.VppParams, res: OptResult, amputee: bool = False) -> vpp_params.VppParams:
    """Copy of ``p`` with the optimised initial conditions stored (basic or ``amp_*`` fields)."""
    if amputee:
        return dataclasses.replace(p, amp_xd0_m_per_s=res.xd0_m_per_s, amp_y0_m=res.y0_m,
                                   amp_phid0_rad_per_s=res.phid0_rad_per_s)
    return dataclasses.replace(p, xd0_m_per_s=res.xd0_m_per_s, y0_m=res.y0_m, phid0_rad_per_s=res.phid0_rad_per_s)
