"""Linear virtual RTHS (vRTHS) test beds of Insam 2022, §11.2, §11.3.1 and §12.1.

A one-DoF mass-spring-damper (MSD) numerical part (NUM) is coupled through a simulated transfer
system (TS) to a linear experimental part (EXP: mass, spring, damper) that shares the interface
coordinate::

    NUM:  m_NUM z'' + d_NUM z' + k_NUM z = F_ext - F_int              (z = commanded displacement)
    EXP:  F_int = m_EXP a' + d_EXP v' + k_EXP z' + m_EXP g_e

with ``z'``, ``v'``, ``a'`` the achieved displacement, velocity and acceleration of the actuator and
``g_e = g`` for the gravity-drop excitation, 0 for the step-force excitation.  The force sensor is
ideal (no dynamics, no noise), the DSP adds no lag (thesis §12.1.1).

Excitations
    ``gravity_drop`` (§12.1.1): at t = 0 both springs are relaxed and held; for t > 0 the holding
    forces vanish, so ``F_ext = -m_NUM g`` and EXP carries its own weight ``m_EXP g``.  The coupled
    system drops and settles at ``-(m_NUM + m_EXP) g / (k_NUM + k_EXP)``.
    ``step_force`` (§11.2): static equilibrium for t < 0 and ``F_ext = step_force_n`` (-1 N) for t >= 0;
    gravity is in the equilibrium and drops out of the deviation equations.

Transfer system (``actuator``)
    ``legs``: the identified Stewart-platform leg models of Table 4.1 under the cascaded P-PI
    controller of Fig. 4.4 (:class:`rths_ros.core.plant.legs.LegCascade`, controller at ``substeps/dt``),
    with optional velocity feedforward (VFF).  The thesis drives the full hexapod model in pure heave;
    the mapping of the 1-DoF interface onto the legs is not stated.  The choice made here: every leg
    receives the interface command (unit heave-to-leg ratio) and the achieved displacement is the leg
    ``leg`` (1..6, default 2, the middle one of Table 4.1) or, with ``leg = 0``, the mean of the six legs
    (the least-squares heave of a symmetric hexapod).  The acceleration ``a'`` the EXP mass sees is by
    default the mean over the last step, ``(v'(t_k) - v'(t_k-1))/dT`` (the momentum change the sensor
    integrates); ``acceleration = instantaneous`` takes the left-limit value ``N_i i - w_c,i v'`` with the
    current of the last controller sample, which inside a step follows the saw-tooth of the held
    command and lags the motion by only ~5 ms instead of the ~12 ms of z' (it under-predicts the
    damping a mass EXP adds; Table 12.1 is reproduced with the step mean).
    ``delay``: pure delay of ``tau_act_steps`` samples (z' = z delayed, §11.2 "pure time delay").
    ``first_order``: ``1/(T_ACT s + 1)`` driven by the held command (§11.2).
    ``ideal``: z' = z (the command reaching the actuator), a' = left-limit NUM acceleration.

    ``tau_add_steps`` delays the displacement command (and the VFF signal) by whole samples before it
    reaches the actuator (FACE degradation, §11.3).  ``command_latency_steps`` (default 1) is the
    one-sample computation delay of a sampled loop: the command computed from F(t_k) is applied from
    t_k+1 on.  The thesis does not describe its Simulink timing; with one sample the a_min column of
    Table 12.1 is met within 1-2 % (without it a_min is 4-11 % too high) and tau_FEI of §11.3.1 is
    12 ms (thesis 11 ms).  ``force_delay_steps`` optionally delays the measured force instead.

Time stepping (the order of :mod:`rths_ros.app.vrths`): at t_k the force F_int(t_k) is measured; NUM is
advanced over [t_k, t_k+1] with the force held (exact zero-order-hold discretisation of the linear
NUM; the thesis does not name its integrator); z(t_k+1) is the command the actuator tracks over
[t_k+j, t_k+j+1] with j = command_latency_steps + tau_add_steps.

Reference (:func:`reference_solution`): the coupled system with an ideal TS, ``M z'' + D z' + K z = F0``
with M, D, K the sums of NUM and EXP and F0 = -M g (drop) or the step force, solved in closed form.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from rths_ros.core.plant.legs import N_LEGS, LegCascade, LegCascadeParams, LegPlantParams
from rths_ros.params import ParameterError, build, param

__all__ = ["LinearVrthsParams", "SYSTEMS", "system", "simulate", "reference_solution",
           "reference_frequency_hz", "reference_damping_kg_per_s", "static_offset_m", "LinearPointRunner"]

EXCITATIONS = ("gravity_drop", "step_force")
ACTUATORS = ("legs", "delay", "first_order", "ideal")


@dataclass(frozen=True)
class LinearVrthsParams:
    """One linear vRTHS test (defaults: the spring-EXP system of §11.3.1/§12.1.2)."""

    m_num_kg: float = param(9.62, "kg", 1e-6, 1e5, "numerical mass m_NUM")
    k_num_n_per_m: float = param(2e4, "N/m", 0.0, 1e9, "numerical spring k_NUM")
    d_num_kg_per_s: float = param(200.0, "kg/s", 0.0, 1e6, "numerical damper d_NUM")
    m_exp_kg: float = param(0.0, "kg", 0.0, 1e5, "experimental mass m_EXP")
    k_exp_n_per_m: float = param(8650.0, "N/m", 0.0, 1e9, "experimental spring k_EXP")
    d_exp_kg_per_s: float = param(0.0, "kg/s", 0.0, 1e6, "experimental damper d_EXP")
    excitation: str = param("gravity_drop", "", doc="gravity drop (§12.1.1) or force step (§11.2)",
                            choices=EXCITATIONS)
    step_force_n: float = param(-1.0, "N", -1e6, 1e6, "external force on m_NUM for t >= 0 (step_force)")
    g_m_per_s2: float = param(9.81, "m/s^2", 0.0, 100.0, "gravitational acceleration (gravity_drop)")
    dt_s: float = param(0.001, "s", 1e-5, 0.01, "synchronisation step ΔT")
    duration_s: float = param(5.0, "s", 0.01, 600.0, "length of the run")
    actuator: str = param("legs", "", doc="transfer-system model", choices=ACTUATORS)
    leg: int = param(2, "", 0, N_LEGS, "leg (1..6) whose length is the achieved displacement; 0 = mean of six")
    k_pp_per_s: float = param(90.0, "1/s", 0.0, 1e4, "position gain K_Pp of the cascade (§12.1.1: 90)")
    k_pv_a_s_per_m: float = param(0.2, "A s/m", 0.0, 1e3, "velocity gain K_Pv of the cascade")
    k_iv_a_per_m: float = param(5.0, "A/m", 0.0, 1e5, "velocity integral gain K_Iv of the cascade")
    vff: bool = param(False, "", doc="velocity feedforward of the commanded velocity (off in §12.1 unless stated)")
    vff_velocity: str = param("numerical", "", doc="VFF signal: the velocity of the numerical part, or the "
                              "backward difference (z_k+1 - z_k)/dT of the displacement command",
                              choices=("numerical", "difference"))
    acceleration: str = param("step_mean", "", doc="achieved acceleration a' seen by the EXP mass (legs): "
                              "mean over the last step (v'(t_k) - v'(t_k-1))/dT, or the instantaneous left-limit "
                              "value N i - w_c v' at t_k", choices=("step_mean", "instantaneous"))
    substeps: int = param(10, "", 1, 1000, "controller samples per synchronisation step (legs)")
    tau_add_steps: int = param(0, "steps", 0, 10000, "extra command delay τ_add in whole samples")
    command_latency_steps: int = param(1, "steps", 0, 1000,
                                       "samples between the numerical output and the actuator input (one-sample "
                                       "computation delay of a sampled loop; see module doc)")
    force_delay_steps: int = param(0, "steps", 0, 1000, "samples between the force measurement and its use by NUM")
    tau_act_steps: int = param(0, "steps", 0, 10000, "actuator delay in samples (actuator = delay)")
    t_act_s: float = param(0.01, "s", 1e-6, 10.0, "time constant T_ACT (actuator = first_order)")

    @property
    def n_steps(self) -> int:
        return int(round(self.duration_s / self.dt_s))

    @property
    def m_total(self) -> float:
        return self.m_num_kg + self.m_exp_kg

    @property
    def k_total(self) -> float:
        return self.k_num_n_per_m + self.k_exp_n_per_m

    @property
    def d_total(self) -> float:
        return self.d_num_kg_per_s + self.d_exp_kg_per_s

    def validate(self) -> None:
        if self.k_total <= 0.0:
            raise ParameterError(f"k_num_n_per_m: {self.k_num_n_per_m!r} with k_exp_n_per_m = "
                                 f"{self.k_exp_n_per_m!r} is not allowed; expected k_NUM + k_EXP > 0")


#: The systems of Insam 2022 §11.2-§12.1 (parameters as printed; see docs/fidelity.md).
SYSTEMS: dict[str, dict] = {
    # §11.2.1: spring EXP, step force -1 N (reference eigenfrequency 8.57 Hz)
    "spring_11_2": dict(m_num_kg=10.0, k_num_n_per_m=2e4, d_num_kg_per_s=200.0, m_exp_kg=0.0,
                        k_exp_n_per_m=1e4, excitation="step_force", duration_s=1.0),
    # §11.2.2: mass EXP, step force.  m_EXP is illegible ("0 kg"); 3.46 kg gives the stated 6.02 Hz.
    "mass_11_2": dict(m_num_kg=10.0, k_num_n_per_m=2e4, d_num_kg_per_s=200.0, m_exp_kg=3.46,
                      k_exp_n_per_m=0.0, excitation="step_force", duration_s=1.0),
    # §11.3.1 and §12.1.2: spring EXP, gravity drop
    "spring_12_1_2": dict(m_num_kg=9.62, k_num_n_per_m=2e4, d_num_kg_per_s=200.0, m_exp_kg=0.0,
                          k_exp_n_per_m=8650.0, excitation="gravity_drop", duration_s=5.0),
    # §12.1.3: mass EXP
    "mass_12_1_3": dict(m_num_kg=1.0, k_num_n_per_m=2e3, d_num_kg_per_s=10.0, m_exp_kg=0.5,
                        k_exp_n_per_m=0.0, excitation="gravity_drop", duration_s=5.0),
    # §12.1.4 = system 1 of §12.1.5: mass + spring EXP (NUM 6 Hz, EXP 3 Hz)
    "system1": dict(m_num_kg=8.0, k_num_n_per_m=11380.0, d_num_kg_per_s=20.0, m_exp_kg=2.0,
                    k_exp_n_per_m=710.0, excitation="gravity_drop", duration_s=8.0),
    # §12.1.5 system 2: same frequencies, less mass and stiffness in EXP
    "system2": dict(m_num_kg=9.5, k_num_n_per_m=13512.0, d_num_kg_per_s=20.0, m_exp_kg=0.5,
                    k_exp_n_per_m=177.0, excitation="gravity_drop", duration_s=8.0),
}


def system(name: str, **overrides) -> LinearVrthsParams:
    """The parameters of a named system of :data:`SYSTEMS`, with ``overrides`` (validated)."""
    if name not in SYSTEMS:
        raise ParameterError(f"system: {name!r} is not allowed; expected one of {', '.join(SYSTEMS)}")
    return build(LinearVrthsParams, {**SYSTEMS[name], **overrides}, section="system")


# ------------------------------------------------------------------------------------------------
# reference


def reference_frequency_hz(p: LinearVrthsParams) -> float:
    """Damped eigenfrequency of the coupled reference, ``sqrt(K/M - delta^2)/(2 pi)`` (§12.1.1)."""
    delta = p.d_total / (2.0 * p.m_total)
    w2 = p.k_total / p.m_total - delta * delta
    return math.sqrt(w2) / (2.0 * math.pi) if w2 > 0.0 else 0.0


def reference_damping_kg_per_s(p: LinearVrthsParams) -> float:
    """Overall system damping of the reference, d_NUM + d_EXP (§12.1.1)."""
    return p.d_total


def _constant_force(p: LinearVrthsParams) -> float:
    if p.excitation == "gravity_drop":
        return -p.m_total * p.g_m_per_s2
    return p.step_force_n


def static_offset_m(p: LinearVrthsParams) -> float:
    """Final rest position of the interface, F0 / (k_NUM + k_EXP)."""
    return _constant_force(p) / p.k_total


def reference_solution(p: LinearVrthsParams, t=None) -> dict:
    """Closed-form response of ``M z'' + D z' + K z = F0``, z(0) = z'(0) = 0, at ``t`` (default: the
    run's sample times).  Returns ``t, z, zdot, zddot`` (arrays)."""
    t = np.arange(p.n_steps + 1) * p.dt_s if t is None else np.asarray(t, dtype=float)
    m, d, k = p.m_total, p.d_total, p.k_total
    z_inf = _constant_force(p) / k
    delta = d / (2.0 * m)
    w0sq = k / m
    disc = w0sq - delta * delta
    if disc > 1e-12 * w0sq:          # underdamped
        w = math.sqrt(disc)
        e = np.exp(-delta * t)
        c, s = np.cos(w * t), np.sin(w * t)
        z = z_inf * (1.0 - e * (c + delta / w * s))
        zd = z_inf * e * (w0sq / w) * s
        zdd = z_inf * e * (w0sq / w) * (w * c - delta * s)
    else:                            # critically or overdamped: two real roots (or a double root)
        r = math.sqrt(max(-disc, 0.0))
        r1, r2 = -delta + r, -delta - r
        if r > 1e-9 * max(delta, 1.0):
            a1, a2 = r2 / (r1 - r2), -r1 / (r1 - r2)      # z = z_inf (1 + a1 e^{r1 t} + a2 e^{r2 t})
            z = z_inf * (1.0 + a1 * np.exp(r1 * t) + a2 * np.exp(r2 * t))
            zd = z_inf * (a1 * r1 * np.exp(r1 * t) + a2 * r2 * np.exp(r2 * t))
            zdd = z_inf * (a1 * r1 ** 2 * np.exp(r1 * t) + a2 * r2 ** 2 * np.exp(r2 * t))
        else:
            e = np.exp(-delta * t)
            z = z_inf * (1.0 - e * (1.0 + delta * t))
            zd = z_inf * delta * delta * t * e
            zdd = z_inf * delta * delta * e * (1.0 - delta * t)
    return {"t": t, "z": z, "zdot": zd, "zddot": zdd}


# ------------------------------------------------------------------------------------------------
# simulation


def _zoh(a: np.ndarray, b: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    from scipy.linalg import expm
    n = a.shape[0]
    aug = np.zeros((n + b.shape[1], n + b.shape[1]))
    aug[:n, :n] = a
    aug[:n, n:] = b
    e = expm(aug * dt)
    return e[:n, :n], e[:n, n:]


def simulate(p: LinearVrthsParams) -> dict:
    """Run one linear vRTHS test.  Returns the run record (arrays of n_steps + 1 samples)::

        t, z_cmd, zdot_cmd (NUM output), z_ach, zdot_ach, zddot_ach (actuator), f_meas (ideal sensor),
        f_int (= f_meas, force_delay_steps later), f_ext (external force on NUM), z_ref (analytic
        reference)

    plus the scalars ``unstable`` (|z| beyond 1000 x the static offset: the rest is NaN), ``dt``,
    ``tau_add_s`` and ``m_total_kg``.
    """
    dt = p.dt_s
    n = p.n_steps + 1
    m, d, k = p.m_num_kg, p.d_num_kg_per_s, p.k_num_n_per_m
    phi, gam = _zoh(np.array([[0.0, 1.0], [-k / m, -d / m]]), np.array([[0.0], [1.0 / m]]), dt)
    gam = gam[:, 0]
    g_exp = p.g_m_per_s2 if p.excitation == "gravity_drop" else 0.0
    f_ext = -m * p.g_m_per_s2 if p.excitation == "gravity_drop" else p.step_force_n
    # command delay line: commands[j] is the command for the interval [t_j, t_j+1]
    nd = p.tau_add_steps + p.command_latency_steps
    rec = {key: np.zeros(n) for key in ("z_cmd", "zdot_cmd", "z_ach", "zdot_ach", "zddot_ach",
                                        "f_int", "f_meas")}
    rec["t"] = np.arange(n) * dt
    rec["f_ext"] = np.full(n, f_ext)
    x = np.zeros(2)                     # NUM state (z, zdot) at t_k
    u_prev = 0.0                        # force on NUM over the previous interval
    cmd_z = np.zeros(n + nd)            # command history (index: interval)
    cmd_v = np.zeros(n + nd)
    legs = None
    if p.actuator == "legs":
        cascade = LegCascadeParams(preset="custom", k_pp_per_s=p.k_pp_per_s, k_pv_a_s_per_m=p.k_pv_a_s_per_m,
                                   k_iv_a_per_m=p.k_iv_a_per_m)
        plant = LegPlantParams()
        legs = LegCascade(plant, cascade, dt, p.substeps)
        legs.reset(np.zeros(N_LEGS))
        gain = np.array(plant.gain_num)
        wc = np.array(plant.omega_c_rad_per_s)
        sel = slice(None) if p.leg == 0 else slice(p.leg - 1, p.leg)
        b6 = np.zeros(N_LEGS)
        v6 = np.zeros(N_LEGS)
    ach = np.zeros(3)                   # achieved z', v', a' at t_k
    fo = np.zeros(2)                    # first-order actuator: (z', v') ; v' = left-limit rate
    if p.actuator == "first_order":
        ta = p.t_act_s
        e1 = math.exp(-dt / ta)
    unstable = False
    bound = 1e3 * max(abs(static_offset_m(p)), 1e-6)
    num_acc = np.zeros(n)               # left-limit NUM acceleration at t_j
    for j in range(n):
        num_acc[j] = (u_prev - d * x[1] - k * x[0]) / m if j > 0 else 0.0
        rec["z_cmd"][j], rec["zdot_cmd"][j] = x[0], x[1]
        # --- measurement at t_j
        if p.actuator == "legs":
            if j > 0:
                ach[0] = float(np.mean(legs.length[sel]))
                v_new = float(np.mean(legs.velocity[sel]))
                if p.acceleration == "step_mean":
                    ach[2] = (v_new - ach[1]) / dt
                else:
                    ach[2] = float(np.mean((gain * legs.current - wc * legs.velocity)[sel]))
                ach[1] = v_new
        elif p.actuator in ("ideal", "delay"):
            i = j - (p.tau_act_steps if p.actuator == "delay" else 0) - nd
            if i >= 0:
                ach[0], ach[1], ach[2] = rec["z_cmd"][i], rec["zdot_cmd"][i], num_acc[i]
            else:
                ach[:] = 0.0
        else:  # first_order
            ach[0], ach[1] = fo[0], fo[1]
            ach[2] = -fo[1] / p.t_act_s if j > 0 else 0.0
        f_meas = p.m_exp_kg * (ach[2] + g_exp) + p.d_exp_kg_per_s * ach[1] + p.k_exp_n_per_m * ach[0]
        rec["z_ach"][j], rec["zdot_ach"][j], rec["zddot_ach"][j] = ach
        rec["f_meas"][j] = f_meas
        jf = j - p.force_delay_steps
        rec["f_int"][j] = rec["f_meas"][jf] if jf >= 0 else f_meas
        if not np.isfinite(ach[0]) or abs(ach[0]) > bound or abs(x[0]) > bound:
            unstable = True
            for key in ("z_cmd", "zdot_cmd", "z_ach", "zdot_ach", "zddot_ach", "f_int", "f_meas"):
                rec[key][j:] = np.nan
            break
        if j == n - 1:
            break
        # --- NUM over [t_j, t_j+1] with the force held
        u = f_ext - rec["f_int"][j]
        x = phi @ x + gam * u
        u_prev = u
        cmd_z[j + nd] = x[0]
        cmd_v[j + nd] = x[1] if p.vff_velocity == "numerical" else (x[0] - rec["z_cmd"][j]) / dt
        zc, vc = cmd_z[j], cmd_v[j]     # the command reaching the actuator now (tau_add later)
        # --- actuator over [t_j, t_j+1]
        if p.actuator == "legs":
            b6[:] = zc
            v6[:] = vc if p.vff else 0.0
            legs.step(b6, v6)
        elif p.actuator == "first_order":
            z0, z1 = fo[0], zc
            fo[0] = z1 + (z0 - z1) * e1
            fo[1] = (z1 - fo[0]) / p.t_act_s
    rec["z_ref"] = reference_solution(p, rec["t"])["z"]
    rec["m_total_kg"] = p.m_total
    rec["unstable"] = unstable
    rec["dt"] = dt
    rec["tau_add_s"] = p.tau_add_steps * dt
    return rec


class LinearPointRunner:
    """Picklable ``run_point(params) -> record`` for the FACE engine: the named or given base system,
    overridden per point by the keys of ``params`` (fields of :class:`LinearVrthsParams`)."""

    def __init__(self, base: str | dict | LinearVrthsParams = "spring_12_1_2", **overrides):
        if isinstance(base, LinearVrthsParams):
            base = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
        elif isinstance(base, str):
            if base not in SYSTEMS:
                raise ParameterError(f"scenario: {base!r} is not allowed; expected one of {', '.join(SYSTEMS)}")
            base = dict(SYSTEMS[base])
        self.base = {**dict(base), **overrides}
        self.params(None)               # validate the base now

    def params(self, point: dict | None) -> LinearVrthsParams:
        return build(LinearVrthsParams, {**self.base, **(point or {})}, section="scenario")

    def __call__(self, point: dict) -> dict:
        return simulate(self.params(point))

    def reference(self, point: dict | None = None) -> dict:
        """The analytic reference as a record (z_cmd = z_ach = z_ref)."""
        p = self.params(point)
        r = reference_solution(p)
        return {"t": r["t"], "z_cmd": r["z"], "z_ach": r["z"], "zdot_cmd": r["zdot"], "zdot_ach": r["zdot"],
                "z_ref": r["z"], "dt": p.dt_s, "unstable": False,
                "reference_frequency_hz": reference_frequency_hz(p),
                "reference_damping_kg_per_s": reference_damping_kg_per_s(p), "m_total_kg": p.m_total}
