"""In-process virtual RTHS (vRTHS): the whole fast path in one Python loop, no ROS.

It calls the same core objects, built by :mod:`rths_ros.app.factory`, in the same order as the
node graph does in lockstep mode (docs/architecture.md, "one step"), so the ROS graph must
reproduce its result to floating-point accuracy.  Used for fast studies and as the equivalence
reference of the graph.  Trials use the graph's global step numbering (trial j occupies the
steps j*(N+1) ... j*(N+1)+N).
"""
from __future__ import annotations

import numpy as np

from rths_ros.app import factory
from rths_ros.app.scenario import Scenario
from rths_ros.core.platform.commander import CommandRejected, LimitViolation
from rths_ros.core.platform.safety import non_finite
from rths_ros.families import registry
from rths_ros.families.base import TRIAL_LOOPS, resolve
from rths_ros.families.records import RECORD_KEYS, VECTOR_KEYS, empty_record, empty_vector_record  # noqa: F401


def hold_last_index(mask: np.ndarray) -> np.ndarray:
    """Indices that replace every missing sample (mask False) by the last present one before it (the
    first present one at the start), as a receiving node holds its last input."""
    idx = np.where(mask, np.arange(mask.size), 0)
    np.maximum.accumulate(idx, out=idx)
    idx[: int(np.argmax(mask))] = int(np.argmax(mask))
    return idx


def trial_slice(rec: dict, trial: int, trial_len: int) -> dict:
    """The rows of one trial, with local step k and time t from 0."""
    lo, hi = trial * trial_len, (trial + 1) * trial_len
    out = {key: (v[lo:hi] if hasattr(v, "shape") and v.shape[:1] == rec["k"].shape else v) for key, v in rec.items()}
    n = out["k"].size
    out["k"] = np.arange(n)
    out["t"] = out["t"] - out["t"][0] if n else out["t"]
    return out


class VirtualRun:
    """The fast-path objects of one scenario and the step loop that drives them."""

    def __init__(self, s: Scenario, compiled: bool = True):
        self.s = s
        #: run a trial in the compiled kernel of the objects' loop where it applies (building, 1-D interface, gait)
        self.compiled = compiled
        self.family = s.numerical.family
        # the same objects the nodes build: model, platform path, force path, plant (rths_ros.app.factory)
        self.numerical = factory.build_numerical(s)
        self.platform = factory.build_platform_path(s)
        self.force = factory.build_force_path(s)
        self.plant = factory.build_plant(s)
        self.n_steps = s.steps
        self.trial_len = s.steps + 1
        # the 1-D loop serves every rig with one interface DoF: the Stewart platform's, the linear motor's, the damper's;
        # the vector loop the multi-DoF interfaces: the gait test's, the two shakers'
        fam = registry.family(self.family)
        if fam.trial in TRIAL_LOOPS:
            self._trial_of_family = {"scalar": self._trial, "vector": self._trial_vector}[fam.trial]
        else:                                   # the family's own trial loop, fn(virtual_run, trial, record)
            own = resolve(fam.trial)
            self._trial_of_family = lambda j, rec: own(self, j, rec)
        self._empty_record = fam.empty_record
        if self._trial_of_family != self._trial:   # the 1-D controllers act on a 1-D interface only (scenario checks)
            self.npc = self.ilc = self.blend = None
            # an adaptive filter of the interface gap (the two shakers' AFF)
            self.aff = factory.build_aff(s) if s.aff.enabled else None
            return
        self.commander = self.platform.commander     # None where the leg-space learners do not apply
        self.scalar_force = self.force.processor
        self.npc = factory.build_passivity(s) if s.passivity.enabled else None
        self.aff = factory.build_aff(s) if s.aff.enabled else None
        self.blend = factory.build_force_blend(s)
        self.ilc = None
        if s.ilc.enabled:
            from rths_ros.app.ilc_series import IlcSeries
            self.ilc = IlcSeries(s)

    def run(self, progress=None) -> dict:
        s = self.s
        trials = s.loop.trials
        rec = self._empty_record(trials * self.trial_len)
        rec["trial"] = rec["k"] // self.trial_len
        rec["t"] = (rec["k"] % self.trial_len) * s.loop.dt_s
        rec["aborted"] = False
        rec["abort_reason"] = ""
        for j in range(trials):
            ok = self._trial_of_family(j, rec)
            if progress is not None:
                progress(j + 1, trials)
            if ok and self.ilc is not None:
                _, stop, _ = self.ilc.end_trial()
                if stop and j + 1 < trials:  # the learner stops a diverging series after this trial
                    rec["aborted"] = True
                    rec["abort_reason"] = self.ilc.stop_reason
                    rec["_abort_row"] = self.n_steps
                    ok = False
            if not ok:
                n = (j * self.trial_len) + int(rec.pop("_abort_row")) + 1
                return {key: (v[:n] if hasattr(v, "shape") and v.shape[:1] == rec["k"].shape else v)
                        for key, v in rec.items()}
        return rec

    def _trial(self, j: int, rec: dict) -> bool:
        s = self.s
        base = j * self.trial_len
        if self.compiled and self.npc is None and self.aff is None and self.ilc is None and self.blend is None \
                and not base <= s.faults.nan_wrench_at_step <= base + self.n_steps:
            from rths_ros.core.models.contact1d.trial import run_trial_compiled
            if run_trial_compiled(self.numerical, self.platform, self.force, self.plant, factory.plant_seed(s, j),
                                  self.n_steps, rec, base):
                return True     # the objects' loop in one compiled kernel (same numbers); else step the objects
        out = self.plant.reset(factory.plant_seed(s, j))
        self.numerical.reset()
        path = self.platform
        path.reset()
        self.scalar_force.reset()
        npc, ilc, aff = self.npc, self.ilc, self.aff
        aff_sup = aff is not None and getattr(aff, "supervised", False)
        # an AFF that adapts with the interface gap (the cubic-spring rig's) needs the command of step k+1
        aff_interface = aff is not None and factory.parts(self.s).aff_gap == "interface"
        blend = self.blend
        if blend is not None:
            blend.reset()
        if npc is not None:
            npc.reset()
        if aff is not None:
            aff.reset()
        f_ilc = ilc.feedforward() if ilc is not None else None
        f_prev = zd_prev = zda_prev = f_d = 0.0
        z, zd = 0.0, 0.0
        b_cmd = np.array(path.start_lengths, dtype=float)
        ff = np.zeros(6)
        ff_pos = np.zeros(6)
        q = np.zeros(1)
        qd = np.zeros(1)
        f_one = [0.0]
        num_q, num_qd = self.numerical.command()
        nan_at = s.faults.nan_wrench_at_step
        for k in range(self.n_steps + 1):
            row = base + k
            wrench = out.wrench if row != nan_at else np.full(6, np.nan)
            bad = non_finite("wrench", wrench, row)
            if bad:     # the ft_sensor node aborts the run here; so does the virtual run
                rec["aborted"] = True
                rec["abort_reason"] = f"ft_sensor: {bad}"
                rec["_abort_row"] = k - 1
                return False
            f_gated, f_meas, contact = self.scalar_force.process(wrench)
            q_ach, qd_ach = path.achieved(out.lengths, out.velocities)
            if npc is not None and k > 0:   # F_d(t_k) from step k-1 and zdot(t_k) (passivity_controller)
                f_d = npc.update(f_prev, zd_prev, zda_prev, f_prev + f_d, zd)
            f_int = f_gated + f_d
            f_prev, zd_prev, zda_prev = f_gated, zd, qd_ach[0]
            if aff is not None and not aff_interface:   # the aff_learner's half: adapt with the leg gap of k
                if aff_sup:              # harmonic AFF with the power-flow supervisor: P_in at the interface
                    aff.adapt(b_cmd - ff_pos, out.lengths, step=k, lam_vir=-f_gated, gap_interface=q_ach[0] - z)
                else:
                    aff.adapt(b_cmd - ff_pos, out.lengths, step=k)
            if ilc is not None:
                ilc.record_interface(k, z, q_ach[0])
                if k > 0:
                    ilc.record_legs(k, b_cmd - ff_pos, out.lengths)
            rec["z_cmd"][row] = z
            rec["zdot_cmd"][row] = zd
            rec["z_ach"][row] = q_ach[0]
            rec["zdot_ach"][row] = qd_ach[0]
            rec["f_int"][row] = f_int
            rec["f_meas"][row] = f_meas
            rec["f_d"][row] = f_d
            rec["contact"][row] = contact
            rec["b_cmd"][row] = b_cmd
            rec["ff_velocity"][row] = ff
            rec["b_meas"][row] = out.lengths
            rec["bdot_meas"][row] = out.velocities
            rec["current"][row] = out.currents
            rec["wrench"][row] = out.wrench
            if k == self.n_steps:
                break
            if blend is not None:        # du Bois et al. 2010 §4.4: f = gamma f_p + (1 - gamma) f_n, power-discrepancy trip
                f_one[0] = blend.force(f_gated, z, zd, qd_ach[0]) + f_d
            else:
                f_one[0] = f_int
            self.numerical.step(f_one)
            z, zd = float(num_q[0]), float(num_qd[0])
            q[0], qd[0] = z, zd
            try:
                cmd = path.command(q, qd)
                if aff_interface:        # the aff_learner's half: the interface gap of the study's sample k+1
                    aff.adapt_interface(q, q_ach, (f_meas,), step=k)
                if aff is not None:      # the platform's half: u_{k+1} = Theta . [b_{k+1}, b_k, ...] (FIR)
                    #                          or W(t_{k+1}) theta_k (harmonic)
                    path.add_feedforward(cmd, aff.feedforward(cmd.length, step=k + 1))
                if ilc is not None:
                    ilc.apply(k + 1, f_ilc, cmd.length, cmd.feedforward_velocity, cmd.feedforward_position)
                if (aff is not None or ilc is not None) and self.commander is not None \
                        and self.commander.params.enforce_limits:
                    self.commander.check_command(cmd)   # the command as sent, after every feedforward
            except CommandRejected as exc:  # the node aborts the run here; so does the virtual run
                rec["aborted"] = True
                rec["abort_reason"] = f"step {row + 1}: {exc}"
                rec["_abort_row"] = k
                return False
            b_cmd = cmd.length.copy()
            ff = cmd.feedforward_velocity.copy()
            ff_pos = cmd.feedforward_position.copy()
            out = self.plant.step(cmd.length, cmd.feedforward_velocity)
        return True


    def _trial_vector(self, j: int, rec: dict) -> bool:
        """One trial of a multi-DoF interface (the gait test, rths_ros.core.models.gait.rths; the two shakers,
        rths_ros.core.models.bartl.beams_rths), in the order of the node graph.  An adaptive filter adapts with the
        interface gap (the learner's half after the command of step k+1) and adds its output to that command."""
        s = self.s
        base = j * self.trial_len
        aff = self.aff
        if self.compiled and aff is None and not base <= s.faults.nan_wrench_at_step <= base + self.n_steps:
            from rths_ros.core.models.gait.trial import run_trial_compiled
            if run_trial_compiled(self.numerical, self.platform, self.force, self.plant, factory.plant_seed(s, j),
                                  self.n_steps, rec, base):
                return True     # the objects' loop in one compiled kernel (same numbers); else step the objects
        out = self.plant.reset(factory.plant_seed(s, j))
        num, plat, gf = self.numerical, self.platform, self.force
        num.reset()
        plat.reset()
        gf.reset()
        if aff is not None:
            aff.reset()
        has_cop = "cop_x" in rec
        q, qd = (a.copy() for a in num.command())
        b_cmd = plat.start_lengths.copy()
        ff = np.zeros(6)
        nan_at = s.faults.nan_wrench_at_step
        for k in range(self.n_steps + 1):
            row = base + k
            wrench = out.wrench if row != nan_at else np.full(6, np.nan)
            bad = non_finite("wrench", wrench, row)
            if bad:
                rec["aborted"] = True
                rec["abort_reason"] = f"ft_sensor: {bad}"
                rec["_abort_row"] = k - 1
                return False
            try:    # ft_sensor: sagittal load from the wrench and the measured legs
                force, measured, contact = gf.process(wrench, out.lengths)
            except LimitViolation as exc:
                rec["aborted"] = True
                rec["abort_reason"] = f"ft_sensor: step {row}: {exc}"
                rec["_abort_row"] = k - 1
                return False
            q_ach, qd_ach = plat.achieved(out.lengths, out.velocities)   # stewart_platform: interface state
            rec["q_cmd"][row] = q
            rec["qd_cmd"][row] = qd
            rec["q_ach"][row] = q_ach
            rec["qd_ach"][row] = qd_ach
            rec["force"][row] = force
            rec["measured"][row] = measured
            rec["contact"][row] = contact
            if has_cop:
                rec["cop_x"][row] = gf.cop_x
            rec["b_cmd"][row] = b_cmd
            rec["ff_velocity"][row] = ff
            rec["b_meas"][row] = out.lengths
            rec["bdot_meas"][row] = out.velocities
            rec["current"][row] = out.currents
            rec["wrench"][row] = out.wrench
            if k == self.n_steps:
                break
            ev = num.step(force)                                             # numerical_substructure
            reason = num.abort_reason(ev) if ev else None
            if reason is not None:
                rec["aborted"] = True
                rec["abort_reason"] = f"numerical_substructure: step {row + 1}: {reason}"
                rec["_abort_row"] = k
                return False
            q, qd = (a.copy() for a in num.command())
            try:
                cmd = plat.command(q, qd)                                   # stewart_platform: leg command
                if aff is not None:
                    aff.adapt_interface(q, q_ach, measured, step=k)         # aff_learner: gap of step k
                    plat.add_feedforward(cmd, aff.feedforward(cmd.length, step=k + 1))   # u_k+1 = W(t_k+1) theta
            except CommandRejected as exc:
                rec["aborted"] = True
                rec["abort_reason"] = f"step {row + 1}: {exc}"
                rec["_abort_row"] = k
                return False
            b_cmd = cmd.length.copy()
            ff = cmd.feedforward_velocity.copy()
            out = self.plant.step(cmd.length, cmd.feedforward_velocity)
        return True


def run_virtual(s: Scenario, progress=None) -> dict:
    """Run every trial of the scenario in process.  Returns the record (arrays indexed by global step)."""
    return VirtualRun(s).run(progress)
