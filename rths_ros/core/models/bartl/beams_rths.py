"""The coupled-beam rig of Bartl 2019 §6.1 (:mod:`.beams`) as a scenario of the node graph.

``numerical.model = coupled_beams`` is the model of the ``shaker_pair`` family: a two-DoF interface, the
displacements ``y = T [z_B; alpha_B]`` at the two actuator points of the plate at B (eq. 6.1), driven by two
voice-coil shakers in current control instead of the Stewart platform.  The fast-path nodes drive the objects here
through the same protocols as every other rig (:mod:`rths_ros.app.factory` builds them;
:class:`rths_ros.app.vrths.VirtualRun` drives them in its vector-interface loop):

====================== ================================ =======================================================
node                   object                           what it does at sample k
====================== ================================ =======================================================
numerical_substructure :class:`VirtualBeam`             ``lambda_k = [F_Bz, M_By]`` -> ``y_VIR,k+1`` (Newmark
                                                        one-step map of the Craig-Bampton VIR beam) with
                                                        ``f_ext(t_k+1)`` at P and ``-lambda_k`` at B
stewart_platform       :class:`ShakerPath`              the shakers' force demands: 0 + the AFF's output
                                                        ``u = W(t_k+1) theta`` (pure AFF, §6.1)
sim_plant              :class:`BeamRigTwin`             ``u`` held one sample -> EXP beam, plate and shakers:
                                                        ``y_EXP`` and ``lambda_EXP`` (eq. 6.3)
ft_sensor              :class:`PlateForce`              ``lambda_EXP`` from the wrench, unchanged
aff_learner            :class:`CoupledBeamsAff`         QR-RLS with simultaneous identification on the
                                                        interface gap ``g = y_EXP - y_VIR``
====================== ================================ =======================================================

The order is that of :func:`rths_ros.core.models.bartl.beams.simulate_beams`: the twin's sample 0 is the rig
held one sample at rest, so the graph's step k is the loop's sample k+1, and the steps of both are the same
compiled functions (:func:`~rths_ros.core.models.bartl.beams.rig_advance`, ``vir_advance``, ...).  The records
agree bit for bit (``test/core/models/bartl/test_coupled_beams_scenario.py``).

The excitation ``f_ext = A cos(2 pi f t)`` (or its square wave) at P switches on at the end of the AFF's
identification (``aff.t_id_s``; Alg. 1: f_ext = 0 while identifying), as in the rig study.

Message mapping: LegCommand ``length[0:2]`` = the shakers' force demands u (N) (``feedforward_position`` the
same: all of the demand is the filter's); LegState ``length[0:2]`` = ``y_EXP`` (m), ``velocity[0:2]`` = their
velocities, ``current[0:2]`` = u (N); RawWrench ``force.z`` = ``F_Bz`` (N), ``torque.y`` = ``M_By`` (N m), the
interface force of the plate model (6.3) as the impedance heads and accelerometers give it; InterfaceCommand /
InterfaceState ``position[0:2]`` = ``y_VIR`` / ``y_EXP`` at the two actuator points; InterfaceForce
``force[0:2]`` = ``measured[0:2]`` = ``[F_Bz, M_By]``.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

from rths_ros.core.learning.aff.harmonic_interface import InterfaceGapAff
from rths_ros.core.learning.aff.harmonic_params import HarmonicAffParams
from rths_ros.core.models.bartl.beams import (
    BeamRig,
    BeamRigParams,
    build_rig,
    excitation_force,
    force_at_points,
    rig_advance,
    to_points,
    vir_advance,
)
from rths_ros.core.plant.base import PlantOutput
from rths_ros.core.platform.commander import CommandRejected, LegCommandArrays
from rths_ros.params import ParameterError, param

__all__ = ["CoupledBeamsAffParams", "CoupledBeamsParams", "VirtualBeam", "BeamRigTwin", "ShakerPath", "PlateForce",
           "CoupledBeamsAff", "build", "rig_of", "validate_scenario", "WRENCH_AXES"]

#: the RawWrench entries of the interface force [F_Bz, M_By] (force.z, torque.y)
WRENCH_AXES = (2, 4)


@dataclass(frozen=True)
class CoupledBeamsAffParams(HarmonicAffParams):
    """§6.1's filter (as :func:`rths_ros.analysis.bartl_rigs.beam_aff`): QR-RLS adaptation with simultaneous
    identification, mu_ad = 0.999, mu_id = 0.9999, two interface DoFs; the random identification (theta uniform in
    +-0.5 N, held 0.5 s) and its length are this package's choices."""

    frequencies_hz: tuple[float, ...] = param([60.0], "Hz", 1e-3, 1e4, "basis frequencies: the excitation "
                                              "frequency (sine) or the first harmonics of the square wave "
                                              "(§6.1.5's 5 harmonics at 40 Hz: [40, 80, 120, 160, 200])")
    n_int: int = param(2, "", 2, 2, "interface DoFs = shakers (2: the two actuator points)")
    law: str = param("rls", "", doc="adaptation law of theta: lms (eqs. 5.18-5.20) or rls (QR-RLS, Alg. 3)",
                     choices=("lms", "rls"))
    simultaneous: bool = param(True, "", doc="identify P_gu during the adaptation too (Alg. 5; needs law rls)")
    mu_rls: float = param(0.999, "", 1e-6, 1.0, "RLS forgetting factor mu_RLS of the adaptation (§6.1: 0.999)")
    mu_id_rls: float = param(0.9999, "", 1e-6, 1.0, "RLS forgetting factor of the identification (§6.1: 0.9999)")
    t_id_s: float = param(3.0, "s", 0.0, 1e6, "duration of the identification phase; the excitation switches on "
                          "at its end (§6.1: 5 s; 3 s here to keep the run short)")
    t_rand_s: float = param(0.5, "s", 1e-6, 1e6, "hold time of each random identification theta")
    id_amplitude: float = param(0.5, "N", 0.0, 1e9, "random identification theta uniform in [-a, a]")


@dataclass(frozen=True)
class CoupledBeamsParams(BeamRigParams):
    """The rig (:class:`~rths_ros.core.models.bartl.beams.BeamRigParams`: beams, plate, shakers, Table 6.1 and
    this package's choices) and the excitation of the virtual beam at P (§6.1.2)."""

    excitation_amplitude_n: float = param(1.0, "N", 0.0, 1e3, "amplitude A of the excitation force at P (the "
                                          "thesis gives none; 1 N)")
    excitation_frequency_hz: float = param(60.0, "Hz", 0.0, 2000.0, "frequency f of the excitation (§6.1.2: "
                                           "60, 320, 800 Hz; 40 Hz for the square wave)")
    square: bool = param(False, "", doc="square wave of amplitude A instead of the cosine (§6.1.2)")
    force_limit_n: float = param(50.0, "N", 0.0, 1e4, "a shaker force demand beyond this aborts the run")
    aff: CoupledBeamsAffParams = param(CoupledBeamsAffParams(), doc="harmonic AFF of §6.1 (QR-RLS, simultaneous "
                                       "identification, two DoFs), run by the aff_learner node; the shakers' demand "
                                       "is its output alone, so aff.enabled must be true")


def validate_scenario(s) -> None:
    """The rig's own checks of a scenario: the AFF drives the shakers; its basis holds the excitation frequency."""
    p = s.numerical.coupled_beams
    if not s.aff.enabled:
        raise ParameterError("aff.enabled: false is not allowed with numerical.model = 'coupled_beams' (the "
                             "shakers' demand is the AFF's output alone, §6.1); expected true")
    if s.passivity.enabled:
        raise ParameterError("passivity.enabled: true is not allowed with numerical.model = 'coupled_beams' (the "
                             "passivity controller acts on a 1-D interface); expected false")
    f = tuple(p.aff.frequencies_hz)
    if not any(abs(x - p.excitation_frequency_hz) <= 1e-9 for x in f):
        raise ParameterError(f"numerical.coupled_beams.aff.frequencies_hz: {list(f)!r} is not allowed with "
                             f"numerical.coupled_beams.excitation_frequency_hz = {p.excitation_frequency_hz!r}; "
                             "expected a list that holds the excitation frequency")
    if "aff_learner" not in s.run_nodes:
        raise ParameterError("nodes: the aff_learner is missing; numerical.model = 'coupled_beams' needs it (the "
                             "shakers' demand is the AFF's output)")


def _rig_params(p: CoupledBeamsParams) -> BeamRigParams:
    return BeamRigParams(**{f.name: getattr(p, f.name) for f in dataclasses.fields(BeamRigParams)})


@functools.lru_cache(maxsize=4)
def _rig(rp: BeamRigParams) -> BeamRig:
    return build_rig(rp)


def rig_of(p: CoupledBeamsParams, dt_s: float | None = None) -> BeamRig:
    """The reduced rig of a scenario section (built once per parameter set in a process)."""
    if dt_s is not None and abs(p.dt_s - dt_s) > 1e-15:
        raise ParameterError(f"numerical.coupled_beams.dt_s: {p.dt_s!r} differs from loop.dt_s = {dt_s!r}; they "
                             "must be equal (the rig's sample is the synchronisation step)")
    return _rig(_rig_params(p))


class VirtualBeam:
    """The numerical substructure (:class:`~rths_ros.core.models.base.NumericalModel`, force width 2): the
    Craig-Bampton VIR beam by its Newmark one-step map; ``step(lambda)`` applies ``f_ext(t_k+1)`` at P and
    ``-lambda`` = ``[-F_Bz, -M_By]`` at B (eq. 6.2); the command is ``y_VIR`` at the actuator points."""

    force_width = 2

    def __init__(self, p: CoupledBeamsParams, dt_s: float):
        rig = rig_of(p, dt_s)
        self.p = p
        self.dt_s = float(dt_s)
        self.av, self.bv, self.c_v, self.T = rig.av, rig.bv, rig.c_v, rig.T
        n = rig.vir.n_dof
        self._g_vel = np.ascontiguousarray(rig.c_v[1:3, :n])     # [z_B, alpha_B] from the velocities
        self._n = n
        self._t_on = float(p.aff.t_id_s)
        self.s = np.zeros(self.av.shape[0])
        self._inp = np.zeros(3)
        self._zb = np.zeros(2)
        self.yv3 = np.zeros(3)
        self._q = np.zeros(2)
        self._qd = np.zeros(2)
        self.k = 0
        # load the compiled steps now, not at a realtime run's first step (a 0.2 ms loop's watchdog is 20 ms)
        self.step((0.0, 0.0))
        self.reset()

    def reset(self) -> None:
        self.s = np.zeros(self.av.shape[0])
        self.yv3 = np.zeros(3)
        self._q[:] = 0.0
        self._qd[:] = 0.0
        self.k = 0

    def excitation(self, t: float) -> float:
        p = self.p
        return excitation_force(t, p.excitation_amplitude_n, p.excitation_frequency_hz, p.square, self._t_on)

    def advance(self, lam_z: float, lam_alpha: float) -> None:
        """One step with ``f_ext(t_k+1)`` at P and the forces ``[lam_z, lam_alpha]`` at B."""
        self.k += 1
        inp = self._inp
        inp[0] = self.excitation(self.k * self.dt_s)
        inp[1] = lam_z
        inp[2] = lam_alpha
        self.s, self.yv3 = vir_advance(self.av, self.bv, self.c_v, self.s, inp)

    def step(self, force) -> int:
        self.advance(-force[0], -force[1])
        self._zb[0] = self.yv3[1]
        self._zb[1] = self.yv3[2]
        self._q[:] = to_points(self.T, self._zb)
        self._qd[:] = to_points(self.T, self._g_vel @ self.s[self._n:2 * self._n])
        return 0

    def command(self) -> tuple[np.ndarray, np.ndarray]:
        return self._q, self._qd

    @property
    def velocity(self) -> float:
        return float(self._qd[0])

    def abort_reason(self, events: int) -> str | None:
        return None


def build(numerical, dt_s: float) -> VirtualBeam:
    """``numerical.model = coupled_beams`` (``numerical.coupled_beams``)."""
    return VirtualBeam(numerical.coupled_beams, dt_s)


class BeamRigTwin:
    """sim_plant of the ``shaker_pair`` family: the EXP beam with the plate and the two shakers (the reduced model
    of :func:`~rths_ros.core.models.bartl.beams.build_rig`, exact with u held over the sample).  Noise-free, as the
    rig study; no legs, no safe-pose ramp (the shakers' demand is a force: 0 is safe)."""

    def __init__(self, p: CoupledBeamsParams, dt_s: float):
        rig = rig_of(p, dt_s)
        self.rig = rig
        self.start_lengths = np.zeros(6)
        self.kinematics = None
        self._n = rig.exp.n_dof
        self.x = np.zeros(rig.ad.shape[0])
        self._u = np.zeros(2)
        self.reset(0)            # loads the compiled step now, not at a realtime run's first step

    def reset(self, noise_seed: int) -> PlantOutput:
        """Back to rest; sample 0 is the rig held one sample at rest (u = 0)."""
        self.x = np.zeros(self.rig.ad.shape[0])
        return self.step(self.start_lengths)

    def step(self, length, feedforward_velocity=None) -> PlantOutput:
        """Hold the force demands ``length[0:2]`` over one sample; the measurement at its end."""
        r = self.rig
        self._u[0] = length[0]
        self._u[1] = length[1]
        self.x, y_exp, lam_e = rig_advance(r.ad, r.bd, r.c_y, r.c_lam, r.d_lam, self.x, self._u)
        n = self._n
        lengths, vel, cur, w = np.zeros(6), np.zeros(6), np.zeros(6), np.zeros(6)
        lengths[:2] = y_exp
        vel[:2] = r.T @ self.x[n:n + 2]
        cur[:2] = self._u
        w[WRENCH_AXES[0]], w[WRENCH_AXES[1]] = lam_e[0], lam_e[1]
        return PlantOutput(lengths, vel, cur, w)


class ShakerPath:
    """Platform path of the two shakers (:class:`~rths_ros.core.platform.paths.PlatformPath`): pure AFF, the
    force demand is the filter's output alone (:meth:`add_feedforward`); the interface command (y_VIR) is checked
    against ``safety.interface_limit_m`` and every demand against ``force_limit_n``, and the run aborts beyond
    either.  No leg commander: the leg-space learners do not apply."""

    closed_loop = False
    commander = None

    def __init__(self, limit_m: float, force_limit_n: float):
        self.limit_m = float(limit_m)
        self.force_limit_n = float(force_limit_n)
        self.start_lengths = np.zeros(6)
        self._out = LegCommandArrays()

    def reset(self) -> None:
        self._out.length[:] = 0.0

    def command(self, position, velocity, measured: float | None = None) -> LegCommandArrays:
        for i in range(2):
            x = float(position[i])
            if not (math.isfinite(x) and abs(x) <= self.limit_m):
                raise CommandRejected(f"interface command y_VIR[{i}] = {x:.6g} m beyond safety.interface_limit_m = "
                                      f"{self.limit_m:g} m")
        out = self._out
        out.length[:] = 0.0
        out.velocity[:] = 0.0
        out.feedforward_position[:] = 0.0
        return out

    def check(self, cmd: LegCommandArrays) -> None:
        for i in range(2):
            u = float(cmd.length[i])
            if not (math.isfinite(u) and abs(u) <= self.force_limit_n):
                raise CommandRejected(f"shaker force demand u[{i}] = {u:.6g} N beyond "
                                      f"numerical.coupled_beams.force_limit_n = {self.force_limit_n:g} N")

    def add_feedforward(self, cmd: LegCommandArrays, u) -> None:
        """The filter's output ``u[0:2]`` is the demand; its limit is checked."""
        cmd.length[0] += u[0]
        cmd.length[1] += u[1]
        cmd.feedforward_position[0] += u[0]
        cmd.feedforward_position[1] += u[1]
        self.check(cmd)

    @staticmethod
    def achieved(lengths, velocities) -> tuple[list, list]:
        return [float(lengths[0]), float(lengths[1])], [float(velocities[0]), float(velocities[1])]


class PlateForce:
    """Force path (:class:`~rths_ros.core.platform.paths.ForcePath`): ``[F_Bz, M_By]`` from the wrench
    (``force.z``, ``torque.y``), always in contact (the plate is fixed to the EXP beam)."""

    needs_leg_state = False

    def reset(self) -> None:
        pass

    def process(self, wrench, lengths=None):
        f = (float(wrench[WRENCH_AXES[0]]), float(wrench[WRENCH_AXES[1]]))
        return f, f, True


class CoupledBeamsAff(InterfaceGapAff):
    """The two-DoF harmonic AFF of the beam rig through the node graph
    (:class:`~rths_ros.core.learning.aff.harmonic_interface.InterfaceGapAff`, both halves; the family's
    ``aff_gap = "interface"``): the gap of the rig study's sample k+1 at both actuator points,
    ``g = y_EXP - y_VIR`` (interface state k minus the interface command of step k+1), ``g_ext`` from a second
    virtual beam driven by f_ext alone, ``lambda_VIR`` at the actuator points from the measured ``[F_Bz, M_By]``.
    This is the loop of :func:`rths_ros.core.models.bartl.beams.simulate_beams` split in two: the signals agree bit
    for bit.  θ is published regrouped per shaker (rows 0 and 1)."""

    def __init__(self, p: CoupledBeamsParams, dt_s: float):
        super().__init__(p.aff, dt_s)
        self.p = p
        rig = rig_of(p, dt_s)
        self.T = rig.T
        self.tinv_t = np.linalg.inv(rig.T).T
        self.external = VirtualBeam(p, dt_s)          # the virtual beam under f_ext alone: g_ext
        self._g, self._ge = np.zeros(self.n), np.zeros(self.n)
        self._f = np.zeros(2)
        # load the compiled steps of both halves now, not at a realtime run's first step
        self.adapt_interface((0.0, 0.0), (0.0, 0.0), (0.0, 0.0), step=0)
        self.feedforward(step=0)
        self.reset()

    def reset_rig(self) -> None:
        self.external.reset()

    def gaps(self, z_cmd_next, z_ach, f_meas):
        ext = self.external
        ext.advance(0.0, 0.0)
        ye3 = ext.yv3
        T = self.T
        for r in range(self.n):
            self._g[r] = float(z_ach[r]) - float(z_cmd_next[r])
            self._ge[r] = -(T[r, 0] * ye3[1] + T[r, 1] * ye3[2])
        self._f[0], self._f[1] = float(f_meas[0]), float(f_meas[1])
        return self._g, self._ge, force_at_points(self.tinv_t, self._f)
