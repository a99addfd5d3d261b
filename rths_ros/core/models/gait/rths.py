"""Fast-path objects of the prosthetic-foot RTHS (Insam 2022 Part III, ch. 16-17): VPP amputee model, platform
command with the swing policy, sagittal force processing.

One synchronisation step of the gait loop (the same objects, in the same order, in the ROS nodes and in the
in-process virtual run :mod:`rths_ros.app.vrths`):

1. the plant (digital twin with the simulated prosthetic foot, or the rig) delivers the measured leg lengths
   b'_k and the raw sensor wrench w_k;
2. :class:`GaitForceProcessor` (ft_sensor node): forward kinematics of b'_k gives the achieved TCP pose and leg
   angle; the wrench, payload-compensated and expressed in the plate frame, becomes the interface load
   ``[F_par, F_perp, M]`` on the stump end (F_par along hip -> foot of the ACHIEVED shank axis, negative in
   compression; M counter-clockwise about the interface point) plus the plate force ``F_x, F_y``, the moment
   about the plate origin and the centre of pressure;
3. :class:`GaitNumerical` (numerical_substructure node): one 1 ms step of the VPP amputee model
   (:func:`rths_ros.core.models.gait.vpp.sync_step`, 5 RK4 sub-steps of 0.2 ms with the load held) and the interface
   command of the next step in the PLATE frame, ``q = (x_IFP - x_ref, y_IFP, alpha_R)`` and its rates;
4. :class:`GaitPlatform` (stewart_platform node): inverse kinematics with the 7 deg toe-out
   (:class:`rths_ros.core.models.gait.interface.GaitInterface`), leg rates from the hexapod Jacobian, optional velocity
   feedforward, the leg-speed policy and the stroke / joint-angle limits;
5. the plant advances one step with the leg command.

Choices (the thesis is silent; all are parameters):

* Reference point. During a right stance ``x_ref`` is the model foot point x_FP,R fixed at touch-down, so the
  platform moves the foot only relative to the plate point that stands for the model's foot point.  In swing the
  reference moves with the leg ("hold x - x_ref"): ``x_ref = x_IFP + h_0f cos(alpha_0)``, i.e. the command is the
  model's touch-down pose relative to the next foot point, ``x - x_ref = -h_0f cos(alpha_0)``, ``alpha = alpha_0``,
  and ``y`` = the model's swing height of the interface point, which reaches ``h_0f sin(alpha_0)`` exactly at the
  touch-down.  The platform therefore never follows the walking speed (about 1 m/s) and the command is continuous
  at touch-down.
* Swing transition. At the model's right take-off the command jumps from the toe-off pose (alpha about 105 deg,
  IFP ahead of the foot point) to the touch-down pose (alpha_0 = 75 deg).  The command blends from the pose at
  take-off to the swing target with the minimum-jerk profile ``s = 10 tau^3 - 15 tau^4 + 6 tau^5`` over
  ``swing_transition_s`` and lifts the foot by ``swing_lift_m * 64 tau^3 (1 - tau)^3`` (zero rate and
  acceleration at both ends) so that the toe clears the plate.  During the right swing the model ignores the
  measured load (its stump is reset to l_0,u), so the swing command only has to bring the foot to the touch-down
  pose in time.
* Leg speed. The thesis' 250 mm/s was a setting of the platform, which saturated and lagged (fig. 17.5).  With
  ``leg_speed_policy = saturate`` the commanded leg lengths move towards the inverse-kinematics target by at most
  ``v_max dt`` per step (the feedforward rate is clipped likewise and counted in ``saturated_steps``); with
  ``abort`` a command beyond the speed limit raises :class:`~rths_ros.core.platform.commander.LimitViolation`.  Stroke and
  universal-joint limits always abort.
* Start pose. The trial starts with the platform at the inverse kinematics of the model's initial command (left
  single support, right leg in swing just above the touch-down height), not at the hexapod's home pose; the
  digital twin starts there, and with ``plant = hardware`` the hardware_plant node ramps the rig there before it
  announces READY (:mod:`rths_ros.nodes.hardware_plant`).
* A fall of the model (event bit 16) ends the run with ABORT and the reason.

``replay_model`` re-runs the model from a recorded sequence of interface loads (bit-exact: the same kernel with
the same float64 inputs) to recover the CoM, trunk angle, contact flags, foot points, GRFs and hip torques for the
gait analysis.  The per-step cost of the objects above is measured by ``rths bench core gait_vpp``
(:func:`rths_ros.families.gait.bench.bench_core_gait`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rths_ros.core.models.gait import kernels as gk
from rths_ros.core.models.gait import vpp, vpp_kernels, vpp_params
from rths_ros.core.models.gait.interface import GaitInterface, GaitInterfaceParams
from rths_ros.core.platform.commander import LegCommandArrays, PlatformCommander, PlatformCommanderParams
from rths_ros.core.platform.interface import InterfaceMap, InterfaceMapParams
from rths_ros.core.platform.stewart import StewartKinematics
from rths_ros.params import ParameterError, param

__all__ = ["GaitCommandParams", "GaitPlatformParams", "GaitNumerical", "GaitPlatform", "GaitForceProcessor",
           "replay_model", "FALL_EVENT"]

FALL_EVENT = vpp_params.EV_FALL


@dataclass(frozen=True)
class GaitCommandParams:
    """Which model and initial conditions, and the swing policy of the interface command (numerical.gait)."""

    initial_conditions: str = param("model", "", doc="model = the optimised amp_* values of numerical.vpp; "
                                    "thesis_a7 = Table A.7 (y0 1.0709 m, x'0 0.97633 m/s, phi'0 -0.0071 rad/s)",
                                    choices=("model", "thesis_a7"))
    swing_transition_s: float = param(0.08, "s", 0.0, 1.0, "blend from the toe-off pose to the touch-down pose "
                                      "(minimum jerk) after the right take-off; 0 = jump")
    swing_lift_m: float = param(0.02, "m", 0.0, 0.1, "extra foot clearance in the middle of the swing transition")


@dataclass(frozen=True)
class GaitPlatformParams:
    """Mounting of the foot on the platform and the leg-speed policy (platform.gait)."""

    interface: GaitInterfaceParams = param(GaitInterfaceParams(), doc="foot mounting, payload and load limits")
    leg_speed_policy: str = param("saturate", "", doc="saturate = the leg commands lag at the speed limit (the "
                                  "thesis' platform setting); abort = a faster command aborts the run",
                                  choices=("saturate", "abort"))


# ------------------------------------------------------------------------------------------------------------------
class GaitNumerical:
    """VPP amputee model + interface command in the plate frame (see module doc)."""

    def __init__(self, vp: vpp_params.VppParams, gp: GaitCommandParams | None = None, dt_s: float = 1e-3):
        self.vp = vp
        self.gp = gp if gp is not None else GaitCommandParams()
        if abs(vp.n_sub * vp.dt_sub_s - dt_s) > 1e-12:
            raise ParameterError(f"numerical.vpp.n_sub * numerical.vpp.dt_sub_s = {vp.n_sub * vp.dt_sub_s!r} s "
                                 f"differs from loop.dt_s = {dt_s!r} s; they must be equal")
        self.dt_s = float(dt_s)
        self.P = vpp_params.param_vector(vp, amputee=True, foot="external")
        self._ic = dict(vpp_params.THESIS_IC_A7) if self.gp.initial_conditions == "thesis_a7" else None
        self._work = vpp._Work()
        self._h0f = vp.h0_f_m
        self._a0 = math.radians(vp.alpha0_deg)
        #: (h_0f, alpha_0, swing_transition_s, swing_lift_m, 2, 3) of rths_ros.core.models.gait.kernels.plate_command
        self._gp = np.array([self._h0f, self._a0, self.gp.swing_transition_s, self.gp.swing_lift_m, 2.0, 3.0])
        self.q = np.zeros(3)
        self.qd = np.zeros(3)
        self.model_cmd = np.zeros(6)
        self.reset()

    def reset(self) -> None:
        self.state = vpp.initial_state(self.vp, amputee=True, ic=self._ic)
        self.events = 0
        self.t = 0.0
        self._t_to = -math.inf
        self._q_to = np.zeros(3)
        self.model_cmd[:] = vpp.interface_command(self.state, self.P)
        self._update_command()

    @property
    def right_stance(self) -> bool:
        return bool(self.state.c[vpp_params.C_R])

    @property
    def fallen(self) -> bool:
        return self.state.fallen

    @property
    def x_ref(self) -> float:
        """Model x of the plate reference point (the right foot point in stance, the moving target in swing)."""
        if self.right_stance:
            return float(self.state.fp[1])
        return float(self.model_cmd[0] + self._h0f * math.cos(self._a0))

    def _update_command(self) -> None:
        gk.plate_command(self.model_cmd, self.right_stance, float(self.state.fp[1]), self.t, self._t_to, self._q_to,
                         self._gp, self.q, self.qd)

    def step(self, f_par: float, f_perp: float, m_z: float) -> int:
        """Advance the model one synchronisation step with the load held; update :attr:`q`, :attr:`qd` (the
        command of the next step).  Returns the event bits (1/2 TD L/R, 4/8 TO L/R, 16 fall)."""
        was_stance = self.right_stance
        q_prev = self.q.copy()
        w = self._work
        w.w[0], w.w[1], w.w[2] = f_par, f_perp, m_z
        ev = vpp_kernels._sync_kernel(self.state.s, self.state.c, self.state.fp, self.P, w.w, self.vp.dt_sub_s,
                              self.vp.n_sub, w.wk, self.model_cmd)
        self.state.t += self.vp.n_sub * self.vp.dt_sub_s
        self.t += self.dt_s
        if was_stance and not self.right_stance:      # right take-off: start the swing transition here
            self._t_to = self.t - self.dt_s
            self._q_to[:] = q_prev
        self.events = int(ev)
        self._update_command()
        return self.events


class GaitModel:
    """The gait test's :class:`~rths_ros.core.models.base.NumericalModel`: the VPP walker (:class:`GaitNumerical`,
    ``inner``) fed the sagittal load ``[F_par, F_perp, M]``; command = the plate-frame pose and its rates."""

    force_width = 3

    def __init__(self, inner: GaitNumerical):
        self.inner = inner

    def reset(self) -> None:
        self.inner.reset()

    def step(self, force) -> int:
        return self.inner.step(float(force[0]), float(force[1]), float(force[2]))

    def command(self) -> tuple[np.ndarray, np.ndarray]:
        return self.inner.q, self.inner.qd

    @property
    def velocity(self) -> float:
        return float(self.inner.qd[0])

    def abort_reason(self, events: int) -> str | None:
        if events & FALL_EVENT:
            return f"the walker fell (VPP model, t = {self.inner.t:.3f} s)"
        return None


# ------------------------------------------------------------------------------------------------------------------
class GaitPlatform:
    """Plate-frame command ``(x - x_ref, y, alpha)`` -> leg commands, with the leg-speed policy (module doc).
    The gait test's :class:`~rths_ros.core.platform.paths.PlatformPath` (open loop, no feedforward learners)."""

    closed_loop = False
    commander = None

    def __init__(self, params: GaitPlatformParams, kinematics: StewartKinematics, vff: bool, dt_s: float):
        self.params = params
        self.kinematics = kinematics
        self.gi = GaitInterface(params.interface, kinematics)
        self._checker = PlatformCommander(InterfaceMap(InterfaceMapParams(), kinematics),
                                          PlatformCommanderParams(enforce_limits=True))
        self.vff = bool(vff)
        self.dt_s = float(dt_s)
        self._vmax = kinematics.params.leg_velocity_max_m_per_s
        self._saturate = params.leg_speed_policy == "saturate"
        self._out = LegCommandArrays()
        self.start_lengths = np.array(kinematics.home_lengths, dtype=float)
        self._prev = self.start_lengths.copy()
        self._db = np.zeros(6)
        self.saturated_steps = 0
        self.enforce_limits = params.interface.enforce_limits

    def set_start(self, q0) -> np.ndarray:
        """Leg lengths of the start pose (inverse kinematics of the model's initial command)."""
        b, _ = self.gi.leg_commands(np.asarray(q0, dtype=float), np.zeros(3), check=False)
        self.start_lengths = b.copy()
        self.reset()
        return self.start_lengths

    def reset(self) -> None:
        self._prev[:] = self.start_lengths
        self.saturated_steps = 0
        self.gi.reset()
        o = self._out
        o.length[:] = self.start_lengths
        o.velocity[:] = 0.0
        o.feedforward_velocity[:] = 0.0
        o.feedforward_position[:] = 0.0

    def command(self, q, qd, measured: float | None = None) -> LegCommandArrays:
        """Leg commands of the next step; raises LimitViolation (stroke, joint angles; speed with ``abort``)."""
        b, bd = self.gi.leg_commands(q, qd, check=False)
        o = self._out
        if self._saturate and gk.saturate_legs(b, bd, self._prev, self._vmax * self.dt_s, self._vmax, self.dt_s,
                                               self._db):
            self.saturated_steps += 1
        o.length[:] = b
        o.velocity[:] = bd
        if self.vff:
            o.feedforward_velocity[:] = bd
        else:
            o.feedforward_velocity[:] = 0.0
        o.feedforward_position[:] = 0.0
        if self.enforce_limits:
            self._checker.check(o.length, o.velocity, self.gi.last_tcp_pose)
        self._prev[:] = o.length
        return o

    def check(self, cmd: LegCommandArrays) -> None:
        """The limits of a command changed after :meth:`command` (the stroke and joint angles at the last pose)."""
        self._checker.check(cmd.length, cmd.velocity, self.gi.last_tcp_pose)

    def achieved(self, lengths, rates) -> tuple[np.ndarray, np.ndarray]:
        """Achieved plate-frame interface state from the measured leg lengths and rates (forward kinematics)."""
        return self.gi.achieved(lengths, rates)


# ------------------------------------------------------------------------------------------------------------------
class GaitForceProcessor:
    """Raw sensor wrench + measured leg lengths -> interface load on the stump end (module doc, step 2).
    The gait test's :class:`~rths_ros.core.platform.paths.ForcePath`."""

    needs_leg_state = True

    def __init__(self, params: GaitPlatformParams, kinematics: StewartKinematics):
        self.gi = GaitInterface(params.interface, kinematics)
        self.force = np.zeros(3)      # [F_par, F_perp, M_z]  (model sign conventions)
        self.measured = np.zeros(3)   # [F_x, F_y, M_O,z]: plate force and the moment about the plate origin
        self.cop_x = math.nan
        self.alpha = math.pi / 2
        self.contact = False

    def reset(self) -> None:
        self.gi.reset()

    def process(self, wrench, lengths) -> tuple[np.ndarray, np.ndarray, bool]:
        """Returns (force, measured, contact); the CoP relative to the plate reference point is in :attr:`cop_x`
        (NaN below ``cop_min_force_n``).  Raises WrenchLimitViolation beyond the sensor or frame limits."""
        pose = self.gi.kinematics.forward(np.asarray(lengths, dtype=float), guess=self.gi._fk_last)
        self.gi._fk_last = pose
        q = self.gi.command_from_tcp(pose)
        self.alpha = float(q[2])
        sw = self.gi.sagittal_wrench(wrench, self.alpha, pose=pose)
        self.force[0], self.force[1], self.force[2] = sw.f_parallel, sw.f_perp, sw.m_z
        m_o = sw.m_z + q[0] * sw.f_y - q[1] * sw.f_x        # moment about the plate origin (planar)
        self.measured[0], self.measured[1], self.measured[2] = sw.f_x, sw.f_y, m_o
        self.contact = abs(sw.f_y) >= self.gi.params.cop_min_force_n
        self.cop_x = sw.cop_x
        return self.force, self.measured, self.contact


def cop_of(measured, min_force_n: float = 5.0) -> np.ndarray:
    """CoP x relative to the plate reference point from recorded ``[F_x, F_y, M_O,z]`` rows (NaN if unloaded)."""
    m = np.atleast_2d(np.asarray(measured, dtype=float))
    out = np.full(m.shape[0], np.nan)
    ok = np.abs(m[:, 1]) >= min_force_n
    out[ok] = m[ok, 2] / m[ok, 1]
    return out


# ------------------------------------------------------------------------------------------------------------------
def replay_model(vp: vpp_params.VppParams, gp: GaitCommandParams, forces: np.ndarray, dt_s: float = 1e-3) -> dict:
    """Re-run the model with the recorded interface loads (row k = the load of step k, fed at step k) and return
    per-step arrays: the state at step k (t, com_x, com_y, trunk_angle, com_xd, contact_L/R, foot_x_L/R), the
    model GRFs and hip torques per leg (with the load of step k held; ``hip_torque_R`` = tau_h,R of eq. 16.2,
    ``hip_torque_vpp_R`` = the VPP controller's share tau_VPP,R = tau_h,R + F_perp l_R of eq. 16.3), and the
    platform command q/qd (the command the numerical part published for step k)."""
    forces = np.asarray(forces, dtype=float)
    n = forces.shape[0]
    g = GaitNumerical(vp, gp, dt_s)
    out = {k: np.zeros(n) for k in ("t", "com_x", "com_y", "trunk_angle", "com_xd", "foot_x_L", "foot_x_R",
                                    "grf_x_L", "grf_y_L", "grf_x_R", "grf_y_R", "hip_torque_L", "hip_torque_R",
                                    "hip_torque_vpp_R", "x_ref")}
    out["contact_L"] = np.zeros(n, dtype=bool)
    out["contact_R"] = np.zeros(n, dtype=bool)
    out["q"] = np.zeros((n, 3))
    out["qd"] = np.zeros((n, 3))
    out["events"] = np.zeros(n, dtype=np.int64)
    fallen_at = -1
    for k in range(n):
        st = g.state
        s = st.s
        out["t"][k] = k * dt_s
        out["com_x"][k], out["com_y"][k], out["trunk_angle"][k], out["com_xd"][k] = \
            s[vpp_params.S_X], s[vpp_params.S_Y], s[vpp_params.S_PHI], s[vpp_params.S_VX]
        out["contact_L"][k], out["contact_R"][k] = bool(st.c[vpp_params.C_L]), bool(st.c[vpp_params.C_R])
        out["foot_x_L"][k], out["foot_x_R"][k] = st.fp[0], st.fp[1]
        out["x_ref"][k] = g.x_ref
        out["q"][k], out["qd"][k] = g.q, g.qd
        lq = vpp.leg_quantities(st, g.P, forces[k])
        for i, leg in enumerate(("L", "R")):
            out[f"grf_x_{leg}"][k], out[f"grf_y_{leg}"][k] = lq["grf_x"][i], lq["grf_y"][i]
            out[f"hip_torque_{leg}"][k] = lq["tau"][i]
        out["hip_torque_vpp_R"][k] = lq["tau_vpp"][1]
        if k + 1 < n:
            out["events"][k + 1] = g.step(*forces[k])
            if g.fallen and fallen_at < 0:
                fallen_at = k + 1
    out["fallen_at_step"] = fallen_at
    return out
