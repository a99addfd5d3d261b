"""Digital twin of the cubic-spring rig of Bartl 2019 (§6.2, Figs. 6.11/6.12, Tables 6.2/6.3).

Components (one interface DOF, the rod position x of the linear motor):

* VIR  ``m x'' + d x' + k x = f_ext - f_meas`` with m = 1 kg, d = 10 N s/m, k = 1000 N/m (Table 6.2), integrated by
  implicit Newmark (beta = 1/4, gamma = 1/2) with the force measured at the same sample (eq. 2.48);
* EXP  the cubic spring ``f = k3 x^3 + k x`` (eq. 6.5).  Table 6.2 prints k = 1.95 N/m and k3 = 0.0014 N/m^3, which
  would make the cubic term 1e-8 N at the 25 mm stroke.  This twin reads the values as N/mm and N/mm^3:
  k = 1950 N/m, k3 = 1.4e6 N/m^3 (at 10 mm the cubic term is 1.4 N against 19.5 N, at 25 mm 22 N against 49 N);
* ACT  a linear motor (Copley ST2508S in the thesis) whose rod carries the force sensor and the spring: rod mass
  ``m_A``, viscous friction ``d_A`` and Coulomb friction ``F_c tanh(v / v_s)``; cascade control as printed (P on the
  position, PI on the velocity) with a friction compensation ``c_fc F_c tanh(v_d / v_s)`` added to the force
  (current) demand; the current loop is ideal up to the force limit.  The position demand is saturated at
  +-25 mm around the initial position (§6.2).  The thesis gives none of these numbers; the defaults below are this
  package's choice (docs/bartl_rigs.md).

Sensors: the motor's position sensor (white noise ``pos_noise_m``) and the force sensor between rod and spring,
which measures the spring force plus a bias and white noise (``force_bias_n``, ``force_noise_n``).  The force
sensor's bias is the twin's source of the drift / offset the thesis blames on "sensor noise" (§6.2.2): the AFF
acts only at the excitation harmonics, so a constant force error shifts the virtual part's mean position and
nothing pulls the actuator after it.

The rig is stepped with a semi-implicit (symplectic) Euler method at ``dt / n_sub`` inside each sample of the
hybrid loop; the position demand is held over the sample (:meth:`CubicSpringRig.advance`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rths_ros.params import param

__all__ = ["CubicSpringParams", "CubicSpringRig", "PeakFilter", "spring_force"]


@dataclass(frozen=True)
class CubicSpringParams:
    """Table 6.2 (VIR, EXP with the N/mm reading), §6.2 (saturation) and this package's actuator choices."""

    m_vir_kg: float = param(1.0, "kg", 1e-6, 1e6, "virtual mass m_VIR (Table 6.2)")
    d_vir_n_s_per_m: float = param(10.0, "N s/m", 0.0, 1e6, "virtual damping d_VIR (Table 6.2)")
    k_vir_n_per_m: float = param(1000.0, "N/m", 0.0, 1e9, "virtual stiffness k_VIR (Table 6.2)")
    k_exp_n_per_m: float = param(1950.0, "N/m", 0.0, 1e9, "linear spring constant k_EXP (Table 6.2: 1.95, read "
                                                          "as N/mm)")
    k3_exp_n_per_m3: float = param(1.4e6, "N/m^3", 0.0, 1e15, "cubic spring constant k3_EXP (Table 6.2: 0.0014, "
                                                              "read as N/mm^3)")
    m_act_kg: float = param(0.4, "kg", 1e-3, 100.0, "moving mass of rod, force sensor and spring seat (choice)")
    d_act_n_s_per_m: float = param(5.0, "N s/m", 0.0, 1e5, "viscous friction of the motor (choice)")
    f_coulomb_n: float = param(3.0, "N", 0.0, 1e3, "Coulomb friction of the motor (choice)")
    v_stick_m_s: float = param(1e-3, "m/s", 1e-6, 1.0, "velocity scale of the smoothed Coulomb law tanh(v/v_s)")
    friction_comp: float = param(0.8, "", 0.0, 1.5, "share of the Coulomb friction the compensation cancels "
                                                    "(< 1: stick-slip is left, as §6.2.1 reports)")
    kp_pos_per_s: float = param(2 * math.pi * 20.0, "1/s", 0.0, 1e5, "position loop gain (P; choice: 20 Hz)")
    kv_n_s_per_m: float = param(0.4 * 2 * math.pi * 150.0, "N s/m", 0.0, 1e6, "velocity loop gain (PI, P part; "
                                                                              "choice: m_A 2 pi 150 Hz)")
    ki_v_n_per_m: float = param(0.4 * 2 * math.pi * 150.0 * 2 * math.pi * 15.0, "N/m", 0.0, 1e9,
                                "velocity loop integral gain (PI; choice: corner at 15 Hz)")
    force_limit_n: float = param(500.0, "N", 1.0, 1e5, "peak force of the motor (choice)")
    delay_s: float = param(0.006, "s", 0.0, 0.1, "transport delay of the position demand (real-time computer to "
                                               "drive; choice), rounded to whole samples")
    stroke_m: float = param(0.025, "m", 1e-4, 1.0, "position saturation around the initial position (§6.2)")
    force_bias_n: float = param(0.5, "N", -100.0, 100.0, "bias of the force sensor (choice; the drift source)")
    force_noise_n: float = param(0.02, "N", 0.0, 100.0, "white noise of the force sensor, standard deviation")
    pos_noise_m: float = param(2e-7, "m", 0.0, 1e-2, "white noise of the position sensor, standard deviation")
    dt_s: float = param(1e-3, "s", 1e-5, 0.01, "sample time of the hybrid loop (choice; the thesis gives none for "
                                               "§6.2)")
    n_sub: int = param(20, "", 1, 1000, "motor integration sub-steps per sample (50 us at 1 ms)")
    seed: int = param(1, "", 0, 2**31, "seed of the sensor noise")


def spring_force(x: float, p: CubicSpringParams) -> float:
    """Eq. 6.5, the force the spring exerts back on the rod is ``-spring_force``."""
    return p.k3_exp_n_per_m3 * x * x * x + p.k_exp_n_per_m * x


class CubicSpringRig:
    """ACT + EXP of the cubic-spring rig: :meth:`advance` holds the position demand over one sample and returns
    the measured position and force at the end of it."""

    def __init__(self, p: CubicSpringParams = CubicSpringParams()):
        self.p = p
        self.rng = np.random.default_rng(p.seed)
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        """Back to rest; with ``seed``, the sensor noise restarts from that stream."""
        if seed is not None:
            self.rng = np.random.default_rng(int(seed))
        self.x = 0.0
        self.v = 0.0
        self.i_v = 0.0          # integral of the velocity error
        self.x_d_prev = 0.0
        self.force = 0.0        # last motor force [N]
        self.saturated = False  # the last demand was clipped
        self._fifo = [0.0] * int(round(self.p.delay_s / self.p.dt_s))

    def advance(self, x_d: float) -> tuple[float, float]:
        """Position demand ``x_d`` [m] held over one sample; returns (measured x [m], measured force [N])."""
        p = self.p
        if self._fifo:
            self._fifo.append(x_d)
            x_d = self._fifo.pop(0)
        s = p.stroke_m
        self.saturated = not (-s <= x_d <= s)
        x_d = min(max(x_d, -s), s) if x_d == x_d else 0.0
        h = p.dt_s / p.n_sub
        v_ff = (x_d - self.x_d_prev) / p.dt_s      # demand velocity (feedforward of the position loop)
        self.x_d_prev = x_d
        fc, vs = p.f_coulomb_n, p.v_stick_m_s
        for _ in range(p.n_sub):
            v_d = p.kp_pos_per_s * (x_d - self.x) + v_ff
            e_v = v_d - self.v
            self.i_v += e_v * h
            f = p.kv_n_s_per_m * e_v + p.ki_v_n_per_m * self.i_v + p.friction_comp * fc * math.tanh(v_d / vs)
            if f > p.force_limit_n or f < -p.force_limit_n:
                f = math.copysign(p.force_limit_n, f)
                self.i_v -= e_v * h                 # anti wind-up
            acc = (f - p.d_act_n_s_per_m * self.v - fc * math.tanh(self.v / vs) - spring_force(self.x, p)) / p.m_act_kg
            self.v += h * acc
            self.x += h * self.v
            self.force = f
        x_m = self.x + p.pos_noise_m * self.rng.standard_normal()
        f_m = spring_force(self.x, p) + p.force_bias_n + p.force_noise_n * self.rng.standard_normal()
        return x_m, f_m


class PeakFilter:
    """Peak (resonant band-pass) filter ``H(s) = 2 zeta W s / (s^2 + 2 zeta W s + W^2)`` at ``f_hz``: gain 1 and
    phase 0 at W, no static gain.  Bilinear transform prewarped to W, so the unit gain at W holds exactly in
    discrete time.  Used on the actuator input of the AFF (§5.3, §6.2.1); the thesis gives no design, the relative
    bandwidth ``zeta`` is this package's choice."""

    def __init__(self, f_hz: float, dt_s: float, zeta: float = 0.2):
        w = 2.0 * math.pi * f_hz
        c = w / math.tan(w * dt_s / 2.0)           # prewarped bilinear constant
        a = 2.0 * zeta * w
        den = c * c + a * c + w * w
        self.b = (a * c / den, 0.0, -a * c / den)
        self.a = (1.0, 2.0 * (w * w - c * c) / den, (c * c - a * c + w * w) / den)
        self.reset()

    def reset(self) -> None:
        self.z1 = 0.0
        self.z2 = 0.0

    def __call__(self, x: float) -> float:
        """Transposed direct form II, one sample."""
        b, a = self.b, self.a
        y = b[0] * x + self.z1
        self.z1 = b[1] * x - a[1] * y + self.z2
        self.z2 = b[2] * x - a[2] * y
        return y

    def response(self, f_hz: float, dt_s: float) -> complex:
        z = complex(math.cos(2 * math.pi * f_hz * dt_s), math.sin(2 * math.pi * f_hz * dt_s))
        b, a = self.b, self.a
        return (b[0] + b[1] / z + b[2] / z ** 2) / (a[0] + a[1] / z + a[2] / z ** 2)


def reference_response(f_hz: float, amp_n: float, p: CubicSpringParams = CubicSpringParams(),
                       t_end_s: float = 4.0) -> dict:
    """The coupled reference system (VIR + cubic spring, no actuator, no sensor errors):
    ``m x'' + d x' + (k_VIR + k_EXP) x + k3 x^3 = A cos(W t)`` from rest, solved with a tight-tolerance Runge-Kutta
    method; returns ``t`` (sampled at ``p.dt_s``) and ``x``."""
    from scipy.integrate import solve_ivp

    w = 2.0 * math.pi * f_hz
    k = p.k_vir_n_per_m + p.k_exp_n_per_m

    def rhs(t, s):
        x, v = s
        return (v, (amp_n * math.cos(w * t) - p.d_vir_n_s_per_m * v - k * x - p.k3_exp_n_per_m3 * x ** 3)
                / p.m_vir_kg)

    t = np.arange(int(round(t_end_s / p.dt_s))) * p.dt_s
    sol = solve_ivp(rhs, (0.0, float(t[-1])), (0.0, 0.0), t_eval=t, rtol=1e-9, atol=1e-12, method="DOP853")
    return {"t": t, "x": sol.y[0]}
