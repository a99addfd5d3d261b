"""``rths stability``, ``rths interface-estimation``, ``rths aff-learning`` and ``rths fxlms-transient``: the analysis tools of Bartl 2019
(Bartl's thesis) that need no scenario: the stability maps of feedback coupling (docs/stability.md), interface
estimation through a transmission simulator (docs/interface_estimation.md) and the learning study of the
harmonic AFF over sample times (docs/harmonic_aff.md)."""
from __future__ import annotations

from pathlib import Path

from rths_ros.params import ParameterError


def _out(a, name: str) -> Path:
    from rths_ros.launch_support import default_out
    return Path(a.out) if a.out else default_out(name)


def _floats(text: str, key: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ParameterError(f"{key}: {text!r} is not a comma-separated list of numbers") from None


def cmd_stability(a) -> int:
    from rths_ros.analysis.stability_maps import format_summary, stability_summary, write_stability
    from rths_ros.core.methods.delay_stability import DelayCase, PLoopCase
    try:
        case = DelayCase(a.phi, a.kappa, a.zeta_vir, a.zeta_exp, a.coupling)
        pcase = PLoopCase(kappa_exp=a.kappa_exp, kappa_act=a.kappa_act, phi_act=a.phi_act, zeta_vir=a.p_zeta_vir,
                          zeta_act=a.zeta_act)
    except ValueError as exc:
        raise ParameterError(str(exc)) from None
    zetas = _floats(a.zetas, "--zetas")
    if not zetas or min(zetas) < 0.0:
        raise ParameterError(f"--zetas: {a.zetas!r} must list damping ratios >= 0")
    summary = stability_summary(case, pcase)
    out = _out(a, "stability")
    if not a.json:
        print(format_summary(summary))
        if not a.no_plots:
            print(f"  drawing the maps ({a.grid} x {a.grid} points per damping level) ...", flush=True)
    paths = write_stability(summary, out, zetas, case, pcase, plots=not a.no_plots, grid=a.grid)
    if a.json:
        print(paths["json"].read_text(), end="")
    else:
        print(f"  -> {', '.join(str(p) for p in paths.values())}")
    return 0


def _beam_interface_estimation(a) -> int:
    from rths_ros.analysis.beam_interface_estimation import (
        DEFAULT_Q_FORCES,
        DEFAULT_R_SCALES,
        check_grid,
        params_from_flags,
        run_beam_report,
    )
    p = params_from_flags({"--q-force": ("q_force", a.q_force), "--r-scale": ("r_scale", a.r_scale),
                           "--duration": ("duration_s", a.duration), "--ts-model": ("ts_model", a.ts_model),
                           "--excitation": ("excitation", a.excitation), "--seed": ("seed", a.seed)})
    qs = check_grid("--q-forces", _floats(a.q_forces, "--q-forces") if a.q_forces else DEFAULT_Q_FORCES, 1e-6, 1e14)
    rs = check_grid("--r-scales", _floats(a.r_scales, "--r-scales") if a.r_scales else DEFAULT_R_SCALES, 1e-6, 1e6)
    out = _out(a, "interface-estimation-beams")
    say = None if a.json else (lambda m: print("  " + m, flush=True))
    print(run_beam_report(p, out, qs, rs, a.json, progress=say))
    return 0


def cmd_interface_estimation(a) -> int:
    from rths_ros.analysis.interface_estimation_report import run_report
    from rths_ros.core.sysid.ts_experiment import TSExperiment
    if a.rig == "beams":
        return _beam_interface_estimation(a)
    for flag, v in (("--r-scale", a.r_scale), ("--ts-model", a.ts_model), ("--excitation", a.excitation),
                    ("--q-forces", a.q_forces), ("--r-scales", a.r_scales)):
        if v is not None:
            raise ParameterError(f"{flag}: {v!r}; only with --rig beams")
    a.q_force = 1e4 if a.q_force is None else a.q_force
    a.duration = 1.0 if a.duration is None else a.duration
    for key, v in (("--q-force", a.q_force), ("--duration", a.duration)):
        if not (v > 0.0 and v < float("inf")):
            raise ParameterError(f"{key}: {v!r} must be finite and > 0")
    if a.duration < 0.2:
        raise ParameterError(f"--duration: {a.duration!r} s; at least 0.2 s (errors are taken after 0.1 s)")
    p = TSExperiment(q_force=a.q_force, duration_s=a.duration, seed=a.seed)
    out = _out(a, "interface-estimation")
    print(run_report(p, out, a.json))
    return 0


def cmd_aff_learning(a) -> int:
    from rths_ros.analysis.harmonic_learning import format_study, learning_study, write_study
    dts = _floats(a.dt, "--dt")
    mids = _floats(a.mu_id_rls, "--mu-id-rls")
    if not dts or not all(1e-5 <= d <= 0.02 for d in dts):
        raise ParameterError(f"--dt: {a.dt!r}; expected sample times in [1e-05, 0.02] s")
    if not mids or not all(0.0 < m < 1.0 for m in mids):
        raise ParameterError(f"--mu-id-rls: {a.mu_id_rls!r}; expected forgetting factors in (0, 1)")
    out = _out(a, "aff-learning")
    print(f"rths aff-learning: {len(dts)} sample times x {4 + 4 * len(mids)} runs of 200 s (Table B.1 system) ...",
          flush=True)
    rows = learning_study(dts, mids, progress=lambda m: print("  " + m, flush=True))
    print(format_study(rows))
    print(f"  -> {write_study(rows, out)}")
    return 0


def cmd_fxlms_transient(a) -> int:
    from rths_ros.analysis.fxlms_study import run_study
    from rths_ros.core.methods.fxlms_transient import FxlmsCase
    lengths = tuple(int(x) for x in _floats(a.n_theta, "--n-theta"))
    if not lengths or min(lengths) < 1 or max(lengths) > 20000:
        raise ParameterError(f"--n-theta: {a.n_theta!r}; expected filter lengths in [1, 20000]")
    try:
        base = FxlmsCase(mu=a.mu, periods=a.periods, seed=a.seed)
    except ValueError as exc:
        raise ParameterError(str(exc)) from None
    if not 10.0 <= a.periods <= 1e5:
        raise ParameterError(f"--periods: {a.periods!r}; expected [10, 100000]")
    out = _out(a, "fxlms-transient")
    print(f"rths fxlms-transient: {len(lengths) + 1} runs of {a.periods:g} periods (Bartl 2019 §5.5.2) ...", flush=True)
    table, _ = run_study(base, lengths, out, progress=lambda m: print("  " + m, flush=True))
    print(table)
    print(f"  -> {out / 'fxlms_transient.json'}, fxlms_transient.png")
    return 0


def add_parsers(sub, scenario_args=None) -> None:
    """The three subcommands, on the ``rths`` parser's ``sub``."""
    st = sub.add_parser("stability", help="stability of feedback coupling with delay (Pade map over mass and "
                        "stiffness ratio) and with a P-controlled actuator (Routh-Hurwitz); docs/stability.md")
    st.add_argument("--coupling", choices=("displacement", "force"), default="displacement")
    st.add_argument("--phi", type=float, default=1.5, help="mass ratio m_VIR/m_EXP of the printed case (1.5)")
    st.add_argument("--kappa", type=float, default=1.0, help="stiffness ratio k_VIR/k_EXP of the printed case (1)")
    st.add_argument("--zeta-vir", type=float, default=0.1, help="virtual damping ratio of the printed case (0.1)")
    st.add_argument("--zeta-exp", type=float, default=0.1, help="experimental damping ratio of the printed case")
    st.add_argument("--zetas", default="0,0.01,0.05,0.1", help="damping levels of the map panels")
    st.add_argument("--kappa-exp", type=float, default=2.0, help="P-loop: k_EXP/k_VIR (2)")
    st.add_argument("--kappa-act", type=float, default=0.1, help="P-loop: k_ACT/k_VIR (0.1)")
    st.add_argument("--phi-act", type=float, default=0.1, help="P-loop: m_ACT/m_VIR (0.1)")
    st.add_argument("--p-zeta-vir", type=float, default=2e-3, help="P-loop: virtual damping ratio (0.002)")
    st.add_argument("--zeta-act", type=float, default=0.1, help="P-loop: actuator damping ratio (0.1)")
    st.add_argument("--grid", type=int, default=121, help="points per axis of the delay map")
    st.add_argument("--no-plots", action="store_true", help="numbers only")
    st.add_argument("--out", help="directory for stability.json and the plots (default runs/stability-TIME)")
    st.add_argument("--json", action="store_true", help="print stability.json instead of the summary")
    st.set_defaults(func=cmd_stability)
    ie = sub.add_parser("interface-estimation", help="Bartl 2019 §3.2: interface force and state through a "
                        "transmission simulator, augmented-state Kalman filter against inverse dynamics and projection")
    ie.add_argument("--rig", choices=("ts", "beams"), default="ts", help="ts: the §3.2 platform (default); beams: "
                    "the §6.1 beam rig's plate and shakers (docs/interface_estimation.md, 'On the beam rig')")
    ie.add_argument("--q-force", type=float, default=None, help="Kalman: spectral density of the interface forces' "
                    "random walk, N^2/s (default 1e4; on --rig beams 100)")
    ie.add_argument("--r-scale", type=float, default=None, help="--rig beams: Kalman R as a factor on the sensors' "
                    "noise variances c^2/3 (default 1)")
    ie.add_argument("--q-forces", default=None, help="--rig beams: Q values of the Kalman sweep (default "
                    "1,10,100,1000,10000)")
    ie.add_argument("--r-scales", default=None, help="--rig beams: R factors of the Kalman sweep (default 0.1,1,10)")
    ie.add_argument("--ts-model", choices=("plate", "plate_shakers"), default=None, help="--rig beams: the "
                    "transmission simulator (default plate: stinger forces from the impedance heads)")
    ie.add_argument("--excitation", choices=("sine", "random"), default=None, help="--rig beams: shaker demand, "
                    "sines at 60 and 320 Hz (default) or band-limited noise")
    ie.add_argument("--duration", type=float, default=None, help="simulated seconds (default 1)")
    ie.add_argument("--seed", type=int, default=1, help="seed of the sensor noise")
    ie.add_argument("--out", help="directory for interface_estimation.json/.png or, on --rig beams, "
                    "beam_interface_estimation.json/.md/.png (default runs/interface-estimation[-beams]-TIME)")
    ie.add_argument("--json", action="store_true")
    ie.set_defaults(func=cmd_interface_estimation)
    al = sub.add_parser("aff-learning", help="Bartl 2019 §5.4.4: LMS vs simultaneous-RLS learning of the harmonic "
                        "AFF on the Table B.1 system, over sample times (docs/harmonic_aff.md)")
    al.add_argument("--dt", default="0.001,0.002,0.005", help="sample times in s (default 0.001,0.002,0.005)")
    al.add_argument("--mu-id-rls", default="0.99,0.999", help="RLS identification forgetting factors")
    al.add_argument("--out", help="directory for aff_learning.json/.md (default runs/aff-learning-TIME)")
    al.set_defaults(func=cmd_aff_learning)
    fx = sub.add_parser("fxlms-transient", help="Bartl 2019 §5.5.2: FIR filtered-x LMS coupling under random "
                        "excitation for several filter lengths (docs/harmonic_aff.md)")
    fx.add_argument("--n-theta", default="10,100,1000", help="filter lengths (default 10,100,1000)")
    fx.add_argument("--mu", type=float, default=0.01, help="normalised LMS gain (default 0.01)")
    fx.add_argument("--periods", type=float, default=600.0, help="run length in periods T_0 (default 600)")
    fx.add_argument("--seed", type=int, default=1, help="seed of the random force")
    fx.add_argument("--out", help="directory for fxlms_transient.json/.png (default runs/fxlms-transient-TIME)")
    fx.set_defaults(func=cmd_fxlms_transient)
