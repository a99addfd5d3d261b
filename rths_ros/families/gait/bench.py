"""Per-step cost of the gait test's core objects on a recorded trajectory (``rths bench core`` with a gait
scenario; docs/performance.md)."""
from __future__ import annotations

from rths_ros.app import factory
from rths_ros.app import scenario as scn
from rths_ros.bench.core import _time_replay
from rths_ros.families.gait.family import build_gait_platform


def bench_core_gait(s: scn.Scenario, n: int = 4000) -> dict:
    """Per-step cost of the gait test's core objects (numerical.model = vpp), each replaying the recorded
    inputs of one virtual trial in the order of the node graph (rths_ros.core.models.gait.rths)."""
    from rths_ros.app.vrths import run_virtual
    from rths_ros.core.models.gait import vpp, vpp_kernels, vpp_params
    rec = run_virtual(scn.replace(s, loop=scn.replace(s.loop, trials=1)))
    m = rec["force"].shape[0] - 1
    if m < 2:
        raise RuntimeError(f"{s.name}: the virtual trial ended after {m} steps; nothing to replay "
                           f"({rec.get('abort_reason', '')})")
    vp = s.numerical.vpp
    out = {}
    num = factory.build_numerical(s)
    forces = rec["force"]
    out[f"numerical_substructure: VPP sync step ({vp.n_sub} RK4 sub-steps of {1e3 * vp.dt_sub_s:.1f} ms, "
        "events, plate-frame command)"] = _time_replay(
        lambda k: num.step(forces[k]), m, n, num.reset)
    P = vpp_params.param_vector(vp, amputee=True, foot="external")
    work = vpp._Work()
    box = {}

    def kernel_reset():
        box["st"] = vpp.initial_state(vp, amputee=True, ic=num.inner._ic)

    def kernel(k):
        st = box["st"]
        work.w[0], work.w[1], work.w[2] = forces[k, 0], forces[k, 1], forces[k, 2]
        vpp_kernels._sync_kernel(st.s, st.c, st.fp, P, work.w, vp.dt_sub_s, vp.n_sub, work.wk, work.cmd)
    out[f"numerical_substructure: vpp.sync_step kernel alone ({vp.n_sub} sub-steps)"] = _time_replay(
        kernel, m, n, kernel_reset)
    plat = build_gait_platform(s)
    q, qd = rec["q_cmd"], rec["qd_cmd"]
    out["stewart_platform: GaitPlatform.command (IK with toe-out, speed policy, limits)"] = _time_replay(
        lambda k: plat.command(q[k + 1], qd[k + 1]), m, n, plat.reset)
    out["stewart_platform: GaitPlatform.achieved (FK)"] = _time_replay(
        lambda k: plat.achieved(rec["b_meas"][k], rec["bdot_meas"][k]), m, n, plat.gi.reset)
    gf = factory.build_force_path(s)
    out["ft_sensor: GaitForceProcessor.process (FK, sagittal load, CoP)"] = _time_replay(
        lambda k: gf.process(rec["wrench"][k], rec["b_meas"][k]), m, n, gf.reset)
    plant = factory.build_plant(s)
    seed = factory.plant_seed(s, 0)
    out["sim_plant: SimPlant.step (6 legs, prosthetic foot on the plate, sensor)"] = _time_replay(
        lambda k: plant.step(rec["b_cmd"][k + 1], rec["ff_velocity"][k + 1]), m, n, lambda: plant.reset(seed))
    return out
