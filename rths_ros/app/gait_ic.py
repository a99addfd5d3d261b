"""Command line of the VPP initial-condition optimisation (:mod:`rths_ros.core.models.gait.vpp_ic`):
``python -m rths_ros.app.gait_ic [--amputee | --scenario NAME] ...`` prints the optimised initial conditions,
with ``--scenario`` as the scenario keys ``numerical.vpp.amp_*`` (docs/gait.md)."""
from __future__ import annotations

import dataclasses

from rths_ros.app import scenario as scn
from rths_ros.core.models.gait import vpp_ic, vpp_params
from rths_ros.core.models.gait.vpp_ic import optimise_ic, periodicity_cost, scenario_ic, scenario_model


def main(argv: list[str] | None = None) -> int:
    """``python -m rths_ros.app.gait_ic [--amputee | --scenario NAME] [--fix-y0 Y] [--strides N] [--evals N]``:
    run the optimisation and print the result (with ``--scenario`` as the scenario keys to store)."""
    import argparse

    ap = argparse.ArgumentParser(description=vpp_ic.__doc__.splitlines()[0])
    ap.add_argument("--amputee", action="store_true", help="modified model, uniform leg split, CoP shift")
    ap.add_argument("--no-cop-shift", action="store_true", help="with --amputee: without the CoP shift")
    ap.add_argument("--scenario", help="modified model of this gait scenario (its stump, the secant of its foot)")
    ap.add_argument("--fix-y0", type=float, help="keep the start height y_0 [m] at this value")
    ap.add_argument("--evals", type=int, default=1500)
    ap.add_argument("--strides", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    amputee = bool(a.amputee or a.scenario)
    p = vpp_params.VppParams()
    if a.scenario:
        s = scn.load(a.scenario)
        p = scenario_model(s)
        print(f"{s.name}: k_u {p.k_u_n_per_m:g} N/m, d_u {p.d_u_kg_per_s:g} kg/s, m_IFP {p.m_ifp_kg:g} kg, "
              f"foot spring {p.k_f_n_per_m:.0f} N/m (secant at 1 BW), CoP shift {p.cop_shift}")
        c_now = periodicity_cost(p, *(scenario_ic(s)[k] for k in ("xd0_m_per_s", "y0_m", "phid0_rad_per_s")),
                                 amputee=True, n_strides=a.strides)
        print(f"cost of the scenario's current initial conditions: {c_now:.6g}")
    elif a.amputee:
        p = dataclasses.replace(vpp_params.uniform_leg_split(p), cop_shift=not a.no_cop_shift)
    res = optimise_ic(p, amputee, max_evals=a.evals, n_strides=a.strides, seed=a.seed, fix_y0=a.fix_y0)
    print(f"start cost {res.cost_start:.6g}  best cost {res.cost_best:.6g}  evaluations {res.evaluations}")
    print(f"xd0_m_per_s={res.xd0_m_per_s!r} y0_m={res.y0_m!r} phid0_rad_per_s={res.phid0_rad_per_s!r}")
    print(f"stability: {res.stable}")
    if a.scenario:
        print("scenario keys:\n  numerical.gait.initial_conditions: model")
        print(f"  numerical.vpp.amp_y0_m: {res.y0_m!r}\n  numerical.vpp.amp_xd0_m_per_s: {res.xd0_m_per_s!r}\n"
              f"  numerical.vpp.amp_phid0_rad_per_s: {res.phid0_rad_per_s!r}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
