"""Simulated plant (digital twin) of the 1-D contact test: Stewart platform legs + specimen + sensors.

Insam 2022, §4.2-4.3 (vRTHS).  One call of :meth:`SimPlant.step` advances the plant over one
synchronisation step t_k -> t_{k+1} (fast-path step 6) and returns the measurement m_{k+1}:

1. the leg command (length ``b_cmd`` and velocity-level feedforward), optionally delayed by
   ``command_delay_steps`` whole steps, drives the six legs (:class:`~rths_ros.core.plant.legs.LegCascade`:
   Table 4.1 models under the P-PI cascade of Table A.1, controller at ``substeps / dt``);
2. the true leg lengths give the platform pose by forward kinematics (warm-started from the previous
   pose); the specimen is driven by the world-z displacement ``p`` of the interface point (the point
   ``specimen_offset_m`` above the TCP of the interface map), interpolated linearly over the step;
3. the specimen (:class:`~rths_ros.core.plant.specimen.Specimen1D`, mounted upside down) returns the force it
   exerts on the sensor, ``-(m_EXP g + k_EXP (p - u))`` along world z;
4. sensors: the leg lengths are quantised by the resolver resolution (2.4 um, relative to the homed
   lengths), the leg rates are the difference quotient of the quantised lengths (or the true rates),
   the wrench is the specimen force in the sensor frame (aligned with the TCP, origin at the TCP) plus
   bias and seeded Gaussian noise.

Prosthetic-foot specimen (``specimen_kind = prosthetic_foot``, the gait RTHS of Insam 2022 Part III): steps 2-3
are replaced by the simulated 1C40 foot (:class:`~rths_ros.core.plant.prosthetic_foot.ProstheticFoot`) on the fixed
ground plate.  The true platform pose (forward kinematics of the true leg lengths) and its body twist (from the
true leg rates) pose the foot through the mounting of :class:`~rths_ros.core.models.gait.interface.GaitInterface`
(``foot_state_from_tcp``); the foot's wrench on the sensor is the sensor wrench (plus bias and noise as above).
The trial starts at ``start_lengths`` (the gait's start pose) instead of the home lengths.

Ideal actuator (``ideal_actuator = true``): the true leg lengths equal the commanded lengths at the end of each
step and the true leg rates are the difference quotient of the commanded lengths (no leg dynamics, no lag); the
one-step command/measurement delay of the loop remains.

Everything is deterministic for a given ``noise_seed`` and independent of wall-clock time.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rths_ros.core.models.gait.interface import GaitInterface, GaitInterfaceParams
from rths_ros.core.numerics.kernel import kernel
from rths_ros.core.plant.legs import N_LEGS, LegCascade, LegCascadeParams, LegPlantParams, _legs_step
from rths_ros.core.plant.prosthetic_foot import ProstheticFoot, ProstheticFootParams
from rths_ros.core.plant.specimen import Specimen1D, Specimen1DParams
from rths_ros.core.platform.interface import InterfaceMap
from rths_ros.core.platform.stewart import StewartKinematics, _forward, no_convergence
from rths_ros.params import ParameterError, param

__all__ = ["SimPlantParams", "PlantOutput", "SimPlant"]


@dataclass(frozen=True)
class SimPlantParams:
    """Digital twin of the transfer system and the experimental part (Insam 2022 §4.3)."""

    legs: LegPlantParams = param(LegPlantParams(), doc="identified leg models (Table 4.1)")
    cascade: LegCascadeParams = param(LegCascadeParams(), doc="cascade controller gains (Table A.1)")
    specimen: Specimen1DParams = param(Specimen1DParams(), doc="experimental part and contact model")
    substeps: int = param(10, "", 10, 1000, "controller samples per synchronisation step (10 -> 10 kHz)")
    command_delay_steps: int = param(0, "steps", 0, 1000,
                                     "extra delay of the leg commands in whole synchronisation steps")
    quantisation_m: float = param(2.4e-6, "m", 0.0, 1e-3,
                                  "resolver resolution of the measured leg lengths (5 mm/rev / 2048 ppr); 0 = off")
    velocity_estimate: str = param("difference", "", doc="measured leg rates: difference quotient of the "
                                   "quantised lengths, or the true rates", choices=("difference", "true"))
    force_noise_std_n: float = param(0.02, "N", 0.0, 100.0,
                                     "standard deviation of the white Gaussian noise on Fx, Fy, Fz")
    moment_noise_std_n_m: float = param(0.0, "N m", 0.0, 100.0,
                                        "standard deviation of the white Gaussian noise on Mx, My, Mz")
    force_bias: tuple[float, ...] = param([0.0] * 6, "N, N m", -1e4, 1e4,
                                          "constant sensor bias [Fx, Fy, Fz, Mx, My, Mz]", length=6)
    noise_seed: int = param(0, "", 0, 2**63 - 1, "seed of the sensor noise generator")
    specimen_kind: str = param("contact_1d", "", doc="experimental part of the twin: the 1-D mass on a spring "
                               "(contact test) or the simulated prosthetic foot on the ground plate (gait test)",
                               choices=("contact_1d", "prosthetic_foot"))
    foot: ProstheticFootParams = param(ProstheticFootParams(), doc="simulated 1C40 foot (specimen_kind = "
                                       "prosthetic_foot)")
    ideal_actuator: bool = param(False, "", doc="the legs reach the commanded lengths exactly at each step (no leg "
                                 "dynamics); false: Table 4.1 legs under the cascade")


@dataclass
class PlantOutput:
    """One measurement of the plant (all arrays are fresh copies owned by the receiver).

    ``lengths`` [m], ``velocities`` [m/s], ``currents`` [A] per leg (leg order 1..6); ``wrench`` =
    raw [Fx, Fy, Fz, Mx, My, Mz] in the sensor frame [N, N m].  The remaining fields are the true
    (unmeasured) state, for logging and tests: ``platform_z_m`` = world-z displacement p of the
    interface point from home, ``specimen_position_m`` = mass displacement u (plate at h0),
    ``contact_force_n`` = plate reaction now, ``in_contact`` = reaction > 0 now, ``touched`` = the mass
    was on the plate at some time during the last step.
    """

    step: int
    lengths: np.ndarray
    velocities: np.ndarray
    currents: np.ndarray
    wrench: np.ndarray
    true_lengths: np.ndarray
    platform_z_m: float
    specimen_position_m: float
    contact_force_n: float
    in_contact: bool
    touched: bool


class SimPlant:
    """Digital twin advanced in lockstep with the fast path (see module doc)."""

    def __init__(self, params: SimPlantParams | None, kinematics: StewartKinematics, interface_map: InterfaceMap,
                 dt_s: float = 1e-3, gait_interface: GaitInterfaceParams | None = None, start_lengths=None):
        self.params = params if params is not None else SimPlantParams()
        if not dt_s > 0.0:
            raise ParameterError(f"dt_s: {dt_s!r} is not allowed; expected a number > 0 s")
        self.dt_s = float(dt_s)
        self.kinematics = kinematics
        self.interface_map = interface_map
        p = self.params
        self.legs = LegCascade(p.legs, p.cascade, self.dt_s, p.substeps)
        self.specimen = Specimen1D(p.specimen, self.dt_s)
        self._home_pose = kinematics.home_pose
        self._home_lengths = np.array(kinematics.home_lengths, dtype=float)
        self._start_lengths = self._home_lengths.copy() if start_lengths is None else \
            np.array(start_lengths, dtype=float)
        self._foot_mode = p.specimen_kind == "prosthetic_foot"
        if self._foot_mode:
            self.gait = GaitInterface(gait_interface, kinematics)
            self.foot = ProstheticFoot(p.foot)
            self._foot_w = np.zeros(6)
            self._V = np.zeros(6)
        self._ideal = bool(p.ideal_actuator)
        self._ideal_len = self._start_lengths.copy()
        self._ideal_vel = np.zeros(N_LEGS)
        self._offset = float(interface_map.params.specimen_offset_m)
        self._home_z = self._interface_point_z(self._home_pose)
        self._weight = p.specimen.m_exp_kg * p.specimen.g_m_per_s2
        self._bias = np.array(p.force_bias, dtype=float)
        self._noise_std = np.array([p.force_noise_std_n] * 3 + [p.moment_noise_std_n_m] * 3)
        nd = p.command_delay_steps + 1
        self._cmd_buf = np.zeros((nd, N_LEGS))
        self._ff_buf = np.zeros((nd, N_LEGS))
        self._buf_i = 0
        self._lq = np.zeros(N_LEGS)
        self._lq_prev = np.zeros(N_LEGS)
        self._noise = np.zeros(6)
        self._wrench_buf = np.zeros(6)
        self._zero_ff = np.zeros(N_LEGS)
        #: true TCP pose (R, t), the forward kinematics' warm start; work arrays of :func:`pose_and_z`
        self.pose_r = np.zeros((3, 3))
        self.pose_t = np.zeros(3)
        self.fk_work = (np.zeros(6), np.zeros((3, 6)), np.zeros((6, 6)), np.zeros(6), np.zeros((6, 7)),
                        np.zeros(6), np.zeros((3, 3)), np.zeros((3, 3)))
        self._target = np.zeros(6)
        self._rng = np.random.Generator(np.random.PCG64(p.noise_seed))
        self.reset()
        # exercise the whole step once (kernels are compiled by now), then start over
        self.step(self._start_lengths, np.zeros(N_LEGS))
        self.reset()

    # ------------------------------------------------------------------------------------------------
    def _interface_point_z(self, pose: pin.SE3) -> float:
        return float(pose.translation[2] + pose.rotation[2, 2] * self._offset)

    def reset(self, seed: int | None = None) -> PlantOutput:
        """Everything at rest at home; the noise generator restarts from ``seed`` (default ``noise_seed``)."""
        p = self.params
        self._rng = np.random.Generator(np.random.PCG64(p.noise_seed if seed is None else int(seed)))
        self.legs.reset(self._start_lengths)
        self.specimen.reset(0.0)
        self._ideal_len[:] = self._start_lengths
        self._ideal_vel[:] = 0.0
        self._pose = self._home_pose if not self._foot_mode else \
            self.kinematics.forward(self._start_lengths, guess=self._home_pose)
        self.pose_r[:] = self._pose.rotation
        self.pose_t[:] = self._pose.translation
        self._z = 0.0
        self._cmd_buf[:] = self._start_lengths
        self._ff_buf[:] = 0.0
        self._buf_i = 0
        self._k = 0
        self._lq[:] = self._start_lengths
        self._lq_prev[:] = self._start_lengths
        self._out = self._make_output(first=True)
        return self._out

    def measure(self) -> PlantOutput:
        """The measurement m_k at the current time t_k (the same object until the next step/reset)."""
        return self._out

    @property
    def pose(self) -> pin.SE3:
        """True TCP pose (from the true leg lengths)."""
        return self._pose

    @property
    def start_lengths(self) -> np.ndarray:
        """Leg lengths at the start of a trial (the home lengths, or the gait test's start pose)."""
        return self._start_lengths.copy()

    @property
    def step_index(self) -> int:
        return self._k

    def step(self, length_cmd, ff_velocity=None) -> PlantOutput:
        """Advance t_k -> t_{k+1} with the leg command of this step (held over it); returns m_{k+1}."""
        length = np.asarray(length_cmd, dtype=np.float64)
        ff = self._zero_ff if ff_velocity is None else np.asarray(ff_velocity, dtype=np.float64)
        if length.shape != (N_LEGS,) or ff.shape != (N_LEGS,):
            raise ValueError(f"length_cmd, ff_velocity: expected {N_LEGS} values each, got shapes {length.shape}, "
                             f"{ff.shape}")
        j = command_delay(self._cmd_buf, self._ff_buf, self._buf_i, length, ff)
        self._buf_i = j
        if self._ideal:
            ideal_advance(self._cmd_buf[j], self._ideal_len, self._ideal_vel, self.dt_s)
        else:
            self.legs.step(self._cmd_buf[j], self._ff_buf[j])
        target = self._target
        it, err, z = pose_and_z(self._true_length, self.pose_r, self.pose_t, *self.kinematics.geometry, 1e-12, 20,
                                self.fk_work, target, self._offset, self._home_z)
        if not err <= 1e-12:    # the pose stays the last one solved
            self.pose_r[:] = self._pose.rotation
            self.pose_t[:] = self._pose.translation
            raise no_convergence(target, err, it)
        self._pose = pin.SE3(self.pose_r, self.pose_t)
        self.kinematics.note_forward(self._pose, it)
        if self._foot_mode:
            self._k += 1
            self._out = self._make_output(first=False)
            return self._out
        z0 = self._z
        self._z = z
        self.specimen.step(z0, self._z)
        self._k += 1
        self._out = self._make_output(first=False)
        return self._out

    def draw_noise(self, n: int) -> np.ndarray:
        """The sensor noise of the next ``n`` steps (n, 6), drawn from the plant's generator as :meth:`step` draws
        it (the same numbers in the same order: 6 per step)."""
        return self._rng.standard_normal((int(n), 6))

    def set_state_after_trial(self, buf_i: int, z: float, spring: float, steps: int) -> None:
        """After a compiled trial advanced the state arrays by ``steps`` steps (its noise drawn with
        :meth:`draw_noise`): the delay-line position, the interface-point displacement, the specimen's spring
        force and the pose object.  :meth:`measure` is not updated."""
        self._buf_i = int(buf_i)
        self._z = float(z)
        self.specimen.set_spring(spring, z)
        self._k += int(steps)
        self._pose = pin.SE3(self.pose_r, self.pose_t)

    def set_pose_after_trial(self, buf_i: int, steps: int, iterations: int) -> None:
        """After a compiled trial of the gait test advanced the state arrays by ``steps`` steps (its noise drawn
        with :meth:`draw_noise`): the delay-line position, the step count and the pose object.  :meth:`measure` is
        not updated."""
        self._buf_i = int(buf_i)
        self._k += int(steps)
        self._pose = pin.SE3(self.pose_r, self.pose_t)
        self.kinematics.note_forward(self._pose, int(iterations))

    @property
    def _true_length(self) -> np.ndarray:
        return self._ideal_len if self._ideal else self.legs.length

    @property
    def _true_velocity(self) -> np.ndarray:
        return self._ideal_vel if self._ideal else self.legs.velocity

    def _foot_wrench(self) -> np.ndarray:
        """Wrench of the simulated foot on the sensor for the true platform pose and twist."""
        self.kinematics.twist_from_rates(self._pose, self._true_velocity, self._V)
        state = self.gait.foot_state_from_tcp(self._pose, self._V)
        return self.foot.wrench_of_state(state, self._foot_w)

    # ------------------------------------------------------------------------------------------------
    def _make_output(self, first: bool) -> PlantOutput:
        p = self.params
        true_len = self._true_length
        wrench = self._wrench_buf
        if self._foot_mode:
            wrench[:] = self._foot_wrench()
            fz_world = 0.0
        else:
            fz_world = self.specimen.sensor_force
        self._rng.standard_normal(out=self._noise)
        vel = np.empty(N_LEGS)
        _sensors(true_len, self._true_velocity, self._home_lengths, p.quantisation_m, self._vel_mode(first),
                 self.dt_s, self._lq, self._lq_prev, vel, self._foot_mode, self.pose_r, fz_world,
                 self._offset, self._noise, self._noise_std, self._bias, wrench)
        return PlantOutput(step=self._k, lengths=self._lq.copy(), velocities=vel,
                           currents=(np.zeros(N_LEGS) if self._ideal else self.legs.current.copy()),
                           wrench=wrench.copy(), true_lengths=true_len.copy(),
                           platform_z_m=self._z, specimen_position_m=self.specimen.position,
                           contact_force_n=self.specimen.contact_force, in_contact=self.specimen.in_contact,
                           touched=self.specimen.touched)

    def _vel_mode(self, first: bool) -> int:
        """Measured leg rates: 0 = the true rates, 1 = zero (first sample), 2 = difference quotient."""
        if self.params.velocity_estimate == "true":
            return 0
        return 1 if first else 2


@kernel
def _sensors(true_len, true_vel, home, q, vel_mode, dt, lq, lq_prev, vel, foot, rot, fz_world, off, noise,
             noise_std, bias, wrench):
    """The measurement of the plant: quantised leg lengths ``lq`` (the previous ones to ``lq_prev``), leg rates
    ``vel`` (``vel_mode`` of :meth:`SimPlant._vel_mode`) and the wrench plus noise and bias (``foot``: ``wrench``
    holds the foot's wrench on entry; else the specimen force ``fz_world`` along world z in the sensor (TCP)
    frame ``rot``, acting on the TCP z axis ``off`` above it)."""
    for i in range(lq.shape[0]):
        lq_prev[i] = lq[i]
        if q > 0.0:
            lq[i] = np.rint((true_len[i] - home[i]) / q) * q + home[i]
        else:
            lq[i] = true_len[i]
    for i in range(lq.shape[0]):
        if vel_mode == 0:
            vel[i] = true_vel[i]
        elif vel_mode == 1:
            vel[i] = 0.0
        else:
            vel[i] = (lq[i] - lq_prev[i]) / dt
    if not foot:
        for i in range(3):
            wrench[i] = rot[2, i] * fz_world          # R^T (0, 0, F_z)
        wrench[3] = -off * wrench[1]                  # (0, 0, offset) x F
        wrench[4] = off * wrench[0]
        wrench[5] = 0.0
    for i in range(6):
        wrench[i] = wrench[i] + noise[i] * noise_std[i]
    for i in range(6):
        wrench[i] = wrench[i] + bias[i]


@kernel
def command_delay(cmd_buf, ff_buf, i, length, ff):
    """Store the command of this step at ``i`` of the delay line (``command_delay_steps + 1`` rows); returns the
    row of the command that acts now (the oldest; the next step stores there)."""
    for c in range(cmd_buf.shape[1]):
        cmd_buf[i, c] = length[c]
        ff_buf[i, c] = ff[c]
    return (i + 1) % cmd_buf.shape[0]


@kernel
def ideal_advance(cmd, length, vel, dt):
    """The ideal actuator: the legs reach ``cmd`` at the end of the step, their rates are the difference
    quotient."""
    for c in range(length.shape[0]):
        vel[c] = cmd[c] - length[c]
    for c in range(length.shape[0]):
        vel[c] = vel[c] / dt
    for c in range(length.shape[0]):
        length[c] = cmd[c]


@kernel
def advance_legs(cmd_buf, ff_buf, bi, length, ff, ideal, ideal_len, ideal_vel, dt, legs_x, lm, ln, lc, ld, legs_cur,
                 true_len, true_vel, current_row):
    """The legs over one step, as :meth:`SimPlant.step` moves them: the command through the delay line, then the
    ideal actuator or the leg cascades (``_legs_step``); the true lengths and rates into ``true_len``/``true_vel``
    and the currents into ``current_row``.  Returns the delay line's next row (the compiled trials use it)."""
    bi = command_delay(cmd_buf, ff_buf, bi, length, ff)
    if ideal:
        ideal_advance(cmd_buf[bi], ideal_len, ideal_vel, dt)
        for i in range(6):
            true_len[i] = ideal_len[i]
            true_vel[i] = ideal_vel[i]
            current_row[i] = 0.0
    else:
        _legs_step(legs_x, cmd_buf[bi], ff_buf[bi], lm, ln, lc, ld, legs_cur)
        for i in range(6):
            true_len[i] = legs_x[i, 0]
            true_vel[i] = legs_x[i, 1]
            current_row[i] = legs_cur[i]
    return bi


@kernel
def pose_and_z(true_len, r, t, a, p, tol, max_iter, fk_work, target, offset, home_z):
    """The true TCP pose ``(r, t)`` of the true leg lengths by forward kinematics, warm-started from ``(r, t)``,
    and the world-z displacement of the interface point (``offset`` above the TCP) from home.  Returns
    (Newton updates, residual, z); a residual above ``tol``: no convergence (z undefined)."""
    big_l, big_u, big_j, res, big_a, delta, s3, r3 = fk_work
    for c in range(6):
        target[c] = true_len[c]
    it, err = _forward(r, t, a, p, target, tol, max_iter, big_l, big_u, big_j, res, big_a, delta, s3, r3)
    z = (t[2] + r[2, 2] * offset) - home_z
    return it, err, z
