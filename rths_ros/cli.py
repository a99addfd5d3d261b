"""The ``rths`` command: run scenarios, analyse bags, analytic tools.

    rths run SCENARIO [--set key=value ...] [--out DIR [--overwrite]] [--mode lockstep|realtime] [--composed] [--live]
    rths analyze RUN_DIR_OR_BAG [--out DIR] [--partial]   exit 3 for a run that did not complete, unless --partial
    rths analyze --gait RUN_DIR [RUN_DIR ...] [--out DIR]   gait metrics; several runs: reproducibility overlay
    rths vrths SCENARIO [--set ...] [--out DIR]      in-process virtual run (no ROS), same core objects
    rths margin SCENARIO [--set ...]                 phase margin / critical delay of the contact phase
    rths ilc-convergence SCENARIO [--set ...]              ILC convergence condition (eq. 6.18)
    rths compare SCENARIO --variant NAME:K=V,... | --preset chapter8|npc_kd|npc_gp   variants side by side
    rths check SCENARIO [--set ...]                  validate a scenario and print it fully resolved
    rths geometry SCENARIO [--set ...] [--json]      derived geometry of the platform: home legs, joint
                                                     angles, conditioning, reach per axis, safe pose
    rths reference SCENARIO [--set ...] [--out DIR] [--duration S] [--json]
                                                     the ideal-transfer-system reference solution, printed and plotted
    rths stability [--coupling displacement|force] [--phi P --kappa K --zeta-vir Z --zeta-exp Z] [--out DIR]
                                                     Bartl's (2019) stability maps: Pade delay map, Routh-Hurwitz P-loop
    rths interface-estimation [--rig {ts,beams}] [--q-force Q] [--r-scale R] [--duration S] [--seed N] [--out DIR] [--json]
                                                     Bartl 2019 §3.2: Kalman / inverse dynamics / projected forces
    rths aff-learning [--dt S,S,...] [--mu-id-rls M,M,...] [--out DIR]
                                                     Bartl 2019 §5.4.4's LMS vs RLS learning over sample times
    rths fxlms-transient [--n-theta N,N,...]         Bartl 2019 §5.5.2: FIR filtered-x LMS under random excitation
    rths aff-rigs cubic-spring|beams [--out DIR]        Bartl 2019 ch. 6: the cubic-spring rig and the coupled beams
    rths damper-rig qualify|test [--quick] [--out DIR]   du Bois et al. 2010: the damper rig's qualification and substructuring tests
    rths bench [summary] [--quick] [--only GROUPS]  every target of what users wait for, measured in one run
    rths bench core|loop|all|safety [SCENARIO]       per-step cost / loop timing / reaction to faults
    rths bench fe [--set runs=R steps=S ...]         per-step cost of the FE virtual parts (docs/fe_virtual_parts.md)
    rths stress [SCENARIO] --runs N [--out DIR]      N lockstep runs in a row: hangs, failures, differences
    rths params [--markdown]                         every scenario parameter with type, unit, range
    rths identify SCENARIO [--twin | --link [HOST:PORT] | --ros2-control | --bag DIR] [--out legs.yaml]
                  [--band-s S] [--spacing-hz HZ] [--f-max-hz HZ] [--bands N] [--amplitude-m M] [--fit-delay]
                                                     closed-loop leg identification (Table 4.1 models,
                                                     rths_ros/rig_cli.py, with qualify)
    rths commission SCENARIO [--set ...] [--amplitude-m M] [--speed-m-per-s V] [--twin | --link [HOST:PORT]]
                                                     jog each leg on the rig: order, signs, mapping
                                                     (docs/commissioning.md)
    rths list                                        the scenarios under config/scenarios/
    rths qualify SCENARIO [--set ...] [--out DIR]    stepped sine / PSD / process models of the transfer system
                                                     on the twin; tunes the TDC model and prediction horizon
    rths face SWEEP.yaml --out DIR [--workers N] [--reanalyse] [--cluster ADDRESS] [--set K=V ...]
              [--mode lockstep|realtime] [--plant sim|hardware|ros2_control] [--composed]
                                                     FACE fidelity sweep (docs/fidelity.md), also on a rig
    rths compare-twin RUN_DIR [--set K=V ...] [--twin-run DIR] [--out DIR]
                                                     a rig run against its digital twin: numbers, plots, verdict
    rths building-benchmark --case N [--earthquake E] [--runs R] [--convention paper|matlab]
                   [--controller module:Class] [--out DIR]
                                                     building benchmark J1-J9 (docs/benchmark_building.md)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from rths_ros import verbs
from rths_ros.analysis.analyze_command import EXIT_PARTIAL, cmd_analyze
from rths_ros.app import scenario as scn
from rths_ros.params import ParameterError


def _scenario_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", help="scenario name (see `rths list`) or path to a YAML file")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario value, e.g. --set numerical.contact_1d.d_num_kg_per_s=50")


def _default_out(name: str) -> Path:
    from rths_ros.launch_support import default_out
    return default_out(name)


def cmd_run(a) -> int:
    from rths_ros.analysis import figures
    with figures.disabled(a.no_plots):
        return _run(a)


def _run(a) -> int:
    from rths_ros.analysis.analyze_command import analyze as _analyze
    from rths_ros.runner import RunError, run_scenario
    from rths_ros.runtime.crash import stacks_on_sigusr1
    stacks_on_sigusr1()
    from rths_ros.runtime.two_hosts import Link
    s = scn.load(a.scenario, a.set + (["live.enabled=true"] if a.live else []), a.mode, a.plant)
    if a.set:   # the report's description must say what this run changed
        s = scn.replace(s, description=f"{s.description} [--set {' '.join(a.set)}]".strip())
    if s.ilc.enabled and s.loop.trials > 1:
        r = _ilc_prediction(s)
        if not r["converges"] and not a.force:
            print(f"rths run: error: this ILC series is predicted to diverge (eq. 6.18 peak {r['peak_db']:+.2f} dB "
                  f"at {r['peak_hz']:.2f} Hz, see `rths ilc-convergence`); lower ilc.beta_per_s or ilc.f_q_cut_hz, "
                  "or pass --force to run it anyway", file=sys.stderr)
            return 2
    out = Path(a.out) if a.out else _default_out(s.name)
    from rths_ros.launch_support import check_live_port, check_node_set, live_note, refuse_recorded_run
    check_node_set(s)
    check_live_port(s)
    refuse_recorded_run(out, "--out", overwrite=a.overwrite)
    if s.loop.mode == "realtime" and not a.composed:
        print("rths run: note: in realtime mode each inter-process hop costs ~0.4 ms; with separate processes "
              "the loop rarely closes within one step (docs/performance.md). --composed keeps the fast path in "
              "one process.", file=sys.stderr)
    print(f"rths run {s.name}: {len(s.run_nodes)} nodes {'in one process' if a.composed else 'as processes'}, "
          f"{s.loop.mode}, {s.steps} steps x {s.loop.trials} trial(s) -> {out}")
    if live_note(s, out):
        print(live_note(s, out))
    try:
        res = run_scenario(s, out, composed=a.composed, after_spawn=_prepare_analysis if not a.no_analyze else None,
                           link=None if a.two_hosts is None else Link.parse(a.two_hosts))
    except RunError as exc:
        print(f"rths run: error: {exc}", file=sys.stderr)
        return 2
    analyze = s.recording.enabled and not a.no_analyze and "recorder" in s.run_nodes and (out / "bag").exists()
    for w in res.warnings:
        print(f"rths run: warning: {w}", file=sys.stderr)
    if res.code != 0:
        # the details (the failed node's log tail, notes) first, the analysis of what was recorded next, and the
        # first cause last: the line a user reads
        head, _, details = res.message.partition("\n")
        if details.strip():
            print(details, file=sys.stderr)
        from rths_ros.app.run_status import read_events
        started = any(e.get("type") == "START" for e in read_events(out)["events"])
        if analyze and started:  # keep what was recorded: metrics and plots up to the failure (status in them)
            try:
                _analyze(out / "bag", out, partial=True)
            except Exception as exc:       # nothing to analyse must not hide the cause
                print(f"rths run: no analysis: {exc}", file=sys.stderr)
        print(f"rths run: FAILED: {head}", file=sys.stderr)
        return res.code
    print(f"run finished in {res.wall_s:.1f} s (ROS domain {res.domain_id})")
    if res.message:
        print(res.message)
    if analyze:
        code = _analyze(out / "bag", out)
        from rths_ros.runtime.startup import update_run_timing
        update_run_timing(out, analysis_done=time.time())
        return code
    return 0


def _prepare_analysis() -> None:
    """Import the analysis (scipy.signal, matplotlib: about a second) in a background thread at the lowest
    priority while the run goes on, so the metrics and plots follow the run's end without that wait."""
    import importlib
    import threading

    def work() -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except (OSError, AttributeError):
            pass
        from rths_ros.analysis import figures
        for module in ("rths_ros.analysis.run_analysis", "rths_ros.analysis.metrics", "rths_ros.analysis.report",
                       *(("rths_ros.analysis.plots",) if figures.enabled() else ())):
            importlib.import_module(module)
    threading.Thread(target=work, name="prepare-analysis", daemon=True).start()


def cmd_vrths(a) -> int:
    from rths_ros.app.vrths import run_virtual
    s = scn.load(a.scenario, a.set, "lockstep")
    out = Path(a.out) if a.out else _default_out(s.name + "-vrths")
    t0 = time.perf_counter()
    rec = run_virtual(s)
    wall = time.perf_counter() - t0
    out.mkdir(parents=True, exist_ok=True)
    import numpy as np
    np.savez(out / "vrths.npz", **{k: v for k, v in rec.items() if hasattr(v, "shape")})
    print(f"vRTHS {s.name}: {s.steps} steps in {wall:.2f} s ({s.steps * s.loop.dt_s / wall:.0f}x real time) "
          f"-> {out / 'vrths.npz'}")
    return 0


def cmd_margin(a) -> int:
    from rths_ros.core.methods.stability import contact_phase_margin
    s = scn.load(a.scenario, a.set)
    p = s.numerical.contact_1d
    r = contact_phase_margin(p)
    if a.json:
        print(json.dumps(r, indent=2))
        return 0
    print(f"contact-phase open loop F_o(s) = k_EXP / (m_NUM s^2 + d_NUM s + k_NUM)"
          f"  (m_NUM={p.m_num_kg:g} kg, d_NUM={p.d_num_kg_per_s:g} kg/s, k_NUM={p.k_num_n_per_m:g} N/m, "
          f"k_EXP={p.k_exp_n_per_m:g} N/m)")
    print(f"  gain crossover : {r['crossover_rad_s']:.3f} rad/s ({r['crossover_hz']:.3f} Hz)")
    print(f"  phase margin   : {r['phase_margin_deg']:.2f} deg")
    print(f"  critical delay : {r['tau_crit_s']:.4f} s")
    return 0


def _ilc_prediction(s) -> dict:
    from rths_ros.core.learning.ilc.convergence import ilc_convergence
    return ilc_convergence(s.numerical.contact_1d, s.sim_plant.legs, s.sim_plant.cascade, s.ilc)


def cmd_check_ilc(a) -> int:
    s = scn.load(a.scenario, a.set)
    r = _ilc_prediction(s)
    if a.json:
        print(json.dumps({k: v for k, v in r.items() if k != "curve"}, indent=2))
        return 0 if r["converges"] else 1
    il, c = s.ilc, s.sim_plant.cascade
    print("ILC convergence condition (Insam 2022 eq. 6.18): peak of |Q(1 + S_f,in L)| over 0..100 Hz")
    print(f"  models : leg 2 of Table 4.1, cascade {c.preset} (K_Pp={c.k_pp_per_s:g}, K_Pv={c.k_pv_a_s_per_m:g}, "
          f"K_Iv={c.k_iv_a_per_m:g}), contact-phase G_DYN with d_NUM={s.numerical.contact_1d.d_num_kg_per_s:g} kg/s")
    print(f"  ILC    : beta={il.beta_per_s:g} 1/s, gamma={il.gamma:g}, f_Q,cut={il.f_q_cut_hz:g} Hz "
          f"(order {il.q_order}, zero phase), injection={il.injection}")
    print(f"  peak   : {r['peak_db']:+.2f} dB at {r['peak_hz']:.2f} Hz   (DC {r['dc_db']:+.2f} dB)")
    print(f"  verdict: {'converges (peak < 0 dB)' if r['converges'] else 'predicted to DIVERGE (peak >= 0 dB)'}")
    return 0 if r["converges"] else 1


def cmd_compare(a) -> int:
    from rths_ros.analysis.compare import PRESETS, compare, parse_variant
    common = list(a.set)
    variants: dict[str, list[str]] = {}
    if a.preset:
        pre = PRESETS[a.preset]
        common = pre["base"] + common
        variants.update({k: [o.format(trials=a.trials) for o in v] for k, v in pre["variants"].items()})
    for text in a.variant:
        name, ov = parse_variant(text)
        variants[name] = ov
    if not variants:
        print("rths compare: error: give --variant NAME:KEY=VALUE,... (one or more) or --preset", file=sys.stderr)
        return 2
    out = Path(a.out) if a.out else _default_out(f"compare-{Path(a.scenario).stem}")
    print(f"rths compare {a.scenario}: {len(variants)} variants ({a.engine}) -> {out}")
    res = compare(a.scenario, variants, out, a.engine, common, a.jobs)
    print(res["table"])
    print(f"table: {out / 'compare.md'}")
    return 0


def cmd_reference(a) -> int:
    from rths_ros.analysis.reference import format_report, reference_report, write_reference
    s = scn.load(a.scenario, a.set)
    rep = reference_report(s, a.duration)
    out = Path(a.out) if a.out else _default_out(f"reference-{s.name}")
    paths = write_reference(rep, out)
    if a.json:
        print(paths["json"].read_text(), end="")
        return 0
    print(format_report(rep))
    print(f"  -> {paths['json']}, {paths['csv'].name}, {paths['png'].name}")
    return 0


LOOP_CONFIGS_DEFAULT = "lockstep-processes,lockstep-composed,realtime-processes,realtime-composed"


def cmd_bench(a) -> int:
    from rths_ros import bench
    if a.what == "summary":            # every target of what users wait for (rths_ros/bench/summary.py)
        return bench.cmd_summary(a)
    if a.what == "fe":                 # large FE virtual parts, Bartl 2019 §2.4.5 (rths_ros/bench/fe.py)
        from rths_ros.bench.fe import cmd_fe
        return cmd_fe(a)
    out = Path(a.out) if a.out else _default_out("bench")
    facts = bench.machine_facts()
    print(f"rths bench {a.what} on {facts['cores']} cores, kernel {facts['kernel']}, Python {facts['python']}, "
          f"{facts['ros']}")
    data = {"machine": facts}
    md = [f"Machine: {facts}", ""]
    if a.what in ("core", "all"):
        s = scn.load(a.scenario, a.set)
        data["core"] = bench.bench_core(s)
        md.append(bench.markdown_core(data["core"]))
        print(bench.markdown_core(data["core"]))
        if a.no_numba_compare is False:
            print("  ... the same with numba's JIT disabled (plain Python/numpy kernels)")
            data["core_without_numba"] = bench.bench_core_without_numba(a.scenario, a.set)
            md += ["", bench.markdown_core_compare(data["core"], data["core_without_numba"])]
            print(bench.markdown_core_compare(data["core"], data["core_without_numba"]))
    if a.what == "hops":               # the step split into its hops (rths_ros/bench/hops.py)
        from rths_ros.bench.hops import cmd_hops
        return cmd_hops(a)
    if a.what in ("loop", "all"):
        configs = [c for c in (a.configs or LOOP_CONFIGS_DEFAULT).split(",") if c]
        data["loop"] = bench.bench_loop(a.scenario, a.set, a.duration, configs, out)
        md += ["", bench.markdown_loop(data["loop"])]
        print(bench.markdown_loop(data["loop"]))
    if a.what == "launch":
        names = scn.scenario_names() if a.scenario == "all" else [a.scenario]
        out.mkdir(parents=True, exist_ok=True)
        data["launch"] = bench.bench_launch(names, out)
        md += ["", bench.markdown_launch(data["launch"])]
        print(bench.markdown_launch(data["launch"]))
        failed = [r["scenario"] for r in data["launch"] if r["exit_code"] != 0 or not r["metrics"]]
        bench.write(out, data, "\n".join(md))
        print(f"-> {out / 'bench.json'}, {out / 'bench.md'}")
        if failed:
            print(f"rths bench launch: FAILED for {', '.join(failed)} (logs in {out})", file=sys.stderr)
            return 1
        return 0
    if a.what == "flood":
        data["flood"] = bench.bench_flood(a.scenario, out, a.runs, a.duration if a.duration != 10.0 else 4.0,
                                          overrides=a.set, loop_hz=a.loop_rate)
        md += ["", bench.markdown_flood(data["flood"])]
        print(bench.markdown_flood(data["flood"]))
    if a.what == "link":
        from rths_ros.bench.link import bench_link, markdown_link
        data["link"] = bench_link(a.scenario, out, a.runs, a.duration if a.duration != 10.0 else 4.0,
                                  a.loop_rate or 250.0, overrides=a.set)
        md += ["", markdown_link(data["link"])]
        print(markdown_link(data["link"]))
    if a.what == "floor":               # what the machine allows a loop, without ROS (rths_ros/bench/floor.py)
        from rths_ros.bench.floor import bench_floor, markdown_floor
        rate = a.loop_rate or 1000.0
        for key, value, low, high in (("--duration", a.duration, 0.1, 600.0), ("--loop-rate", rate, 1.0, 10000.0)):
            if not low <= value <= high:
                print(f"rths bench floor: error: {key}: {value:g} is outside [{low:g}, {high:g}]", file=sys.stderr)
                return 2
        data["floor"] = bench_floor(a.duration, rate)
        md += ["", markdown_floor(data["floor"])]
        print(markdown_floor(data["floor"]))
    if a.what == "safety":
        data["safety"] = bench.bench_safety(a.scenario, out)
        md += ["", bench.markdown_safety(data["safety"])]
        print(bench.markdown_safety(data["safety"]))
    bench.write(out, data, "\n".join(md))
    print(f"-> {out / 'bench.json'}, {out / 'bench.md'}")
    return 0


def cmd_check(a) -> int:
    from rths_ros.launch_support import check_node_set
    s = scn.load(a.scenario, a.set)
    check_node_set(s)
    print(scn.dump(s), end="")
    print(f"# ok: {s.name} is valid: numerical.model = {s.numerical.model} (family {s.numerical.family}), "
          f"{scn.parameter_count(s)} parameters, {s.steps} steps per trial", file=sys.stderr)
    return 0


def cmd_params(a) -> int:
    rows = scn.parameter_table()
    if a.markdown:
        print("| key | type | default | unit | allowed | description |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(f"| `{r['key']}` | {r['type']} | `{r['default']}` | {r['unit']} | {r['allowed']} | {r['doc']} |")
    else:
        for r in rows:
            print(f"{r['key']:<52} {str(r['default']):<24} {r['unit']:<8} {r['allowed']}  -- {r['doc']}")
    return 0


def cmd_list(a) -> int:
    """The scenarios by name: this package's, then those of the installed packages that add some; the plugins
    that failed to load, with their errors."""
    from rths_ros.families import registry
    groups = [("", scn.scenario_folders(plugins=False)[0])] + registry.scenario_dirs()
    seen = set()
    for dist, folder in groups:
        if dist:
            print(f"\nfrom {dist} ({folder}):")
        for path in sorted(folder.glob("*.yaml")):
            name = path.stem
            if name in seen:
                print(f"{name:<24} (hidden by the scenario of the same name above)")
                continue
            seen.add(name)
            try:
                d = scn.load_data(name)
                print(f"{name:<24} {d.get('description', '')}")
            except ParameterError as exc:
                print(f"{name:<24} INVALID: {exc}")
    for err in registry.load_errors():
        print(f"plugin not loaded: {err}")
    return 0


def cmd_face(a) -> int:
    from rths_ros.analysis.face.cli import main as face_main
    argv = ([a.sweep] if a.sweep else []) + ["--out", a.out, "--workers", str(a.workers)]
    argv += (["--reanalyse"] if a.reanalyse else []) + (["--cluster", a.cluster] if a.cluster else [])
    argv += [x for s in a.set for x in ("--set", s)] + (["--mode", a.mode] if a.mode else [])
    argv += (["--plant", a.plant] if a.plant else []) + (["--composed"] if a.composed else [])
    argv += ["--retries", str(a.retries)] if a.retries else []
    return face_main(argv, prog="rths face")


def cmd_benchmark(a) -> int:
    from rths_ros.families.building.benchmark_report import run_cli
    return run_cli(a)


class _RthsParser(argparse.ArgumentParser):
    """The top-level parser: its help lists the verbs in sections (rths_ros.verbs.grouped_help)."""

    sub = None
    origin: dict = {}

    def format_help(self) -> str:
        return verbs.grouped_help(self, self.sub, self.origin)


def build_parser() -> argparse.ArgumentParser:
    p = _RthsParser(prog="rths", description="Real-time hybrid substructuring on ROS 2.")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND", parser_class=argparse.ArgumentParser)
    p.sub = sub
    r = sub.add_parser("run", help="run a scenario through the ROS graph (bag, metrics, plots)")
    _scenario_args(r)
    r.add_argument("--out", help="run directory (default runs/NAME-TIME); an existing run folder is refused")
    r.add_argument("--overwrite", action="store_true", help="replace the earlier run in --out (only a run folder)")
    r.add_argument("--mode", choices=("lockstep", "realtime"), help="clock mode (overrides loop.mode)")
    r.add_argument("--plant", choices=tuple(scn.PLANT_NODE_OF), help="simulated plant, hardware drivers or a "
                   "ros2_control rig")
    r.add_argument("--composed", action="store_true", help="all nodes in one process")
    r.add_argument("--live", action="store_true", help="the live view: a Foxglove WebSocket server streaming the run, "
                   "with the operator e-stop (live.enabled=true; docs/live.md)")
    r.add_argument("--two-hosts", nargs="?", const="", metavar="LINK", help="the rig side (plant, sensor, platform) "
                   "and the numerical side in two network namespaces joined by an emulated link, e.g. "
                   "delay_ms=0.2,jitter_ms=0.1,loss=0.02,cut_at_step=2000 (root; docs/distributed.md)")
    r.add_argument("--no-analyze", action="store_true", help="skip metrics/plots after the run")
    r.add_argument("--no-plots", action="store_true", help="the analysis without its figures: the same metrics.json "
                   "and report.md, about 2 s sooner (batches of runs whose numbers are what is read)")
    r.add_argument("--force", action="store_true", help="run an ILC series even if predicted to diverge")
    r.set_defaults(func=cmd_run)
    an = sub.add_parser("analyze", help="metrics, plots and report from a recorded bag")
    an.add_argument("target", nargs="+", help="run directory or bag directory (several with --gait)")
    an.add_argument("--gait", action="store_true", help="gait metrics of a prosthetic-foot run; with several runs "
                    "also the reproducibility overlay")
    an.add_argument("--out", help="where to write metrics.json, report.md and plots")
    an.add_argument("--no-plots", action="store_true", help="metrics.json and report.md without the figures")
    an.add_argument("--partial", action="store_true", help="accept a run that did not complete (aborted, "
                    f"interrupted, incomplete): exit 0 instead of {EXIT_PARTIAL}; the status is in the outputs either way")
    an.set_defaults(func=cmd_analyze)
    v = sub.add_parser("vrths", help="in-process virtual run of a scenario (no ROS)")
    _scenario_args(v)
    v.add_argument("--out")
    v.set_defaults(func=cmd_vrths)
    m = sub.add_parser("margin", help="phase margin and critical delay of the contact-phase loop")
    _scenario_args(m)
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_margin)
    ci = sub.add_parser("ilc-convergence", help="ILC convergence condition (Insam 2022 eq. 6.18) of a scenario")
    _scenario_args(ci)
    ci.add_argument("--json", action="store_true")
    ci.set_defaults(func=cmd_check_ilc)
    from rths_ros.analysis.compare import PRESETS
    co = sub.add_parser("compare", help="run variants of a scenario; one table and overlay plots")
    _scenario_args(co)
    co.add_argument("--variant", action="append", default=[], metavar="NAME:KEY=VALUE,...",
                    help="a variant: its name and its overrides (repeatable)")
    co.add_argument("--preset", choices=tuple(PRESETS), help="a predefined set of variants")
    co.add_argument("--trials", type=int, default=10, help="trials of the ILC variants of a preset")
    co.add_argument("--engine", choices=("vrths", "graph"), default="vrths",
                    help="in-process virtual run (default, parallel) or the ROS graph")
    co.add_argument("--jobs", type=int, default=2, help="parallel variants (vrths engine)")
    co.add_argument("--out")
    co.set_defaults(func=cmd_compare)
    b = sub.add_parser("bench", help="measure what users wait for (default: the summary of every target), the "
                       "loop and the per-step cost of the core objects")
    b.add_argument("what", nargs="?", default="summary",
                   choices=("summary", "core", "loop", "hops", "all", "safety", "flood", "link", "launch", "fe",
                            "floor"),
                   help="summary (default): every target in one run; or one of the detailed benches (hops: where a "
                   "step's time goes, per topic and node; link: one host beside two emulated hosts, docs/distributed.md; "
                   "floor: what this machine allows a real-time loop, without ROS: interruptions of each CPU and a "
                   "minimal chain through processes, --duration seconds each, at --loop-rate, default 1000 Hz)")
    b.add_argument("scenario", nargs="?", default="contact_1d",
                   help="scenario name (default contact_1d); with `launch`, `all` runs every scenario")
    b.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    b.add_argument("--duration", type=float, default=10.0, help="seconds of each loop run (flood, link: default 4)")
    b.add_argument("--runs", type=int, default=3, help="flood, link: runs of each case")
    b.add_argument("--loop-rate", type=float, help="flood: the loop's rate in Hz (default: the "
                   "scenario's); link: default 250")
    b.add_argument("--configs", default=None, help="comma-separated loop configurations (loop: lockstep-processes,"
                   "lockstep-composed,realtime-processes,realtime-composed; hops: lockstep-processes,realtime-processes)")
    b.add_argument("--run", metavar="DIR", help="hops: analyse this run (made with --set recording.hop_log=true)")
    b.add_argument("--no-numba-compare", action="store_true", help="skip the run with numba's JIT disabled")
    b.add_argument("--quick", action="store_true", help="summary: shortened workloads (labelled as such)")
    b.add_argument("--only", metavar="GROUPS", help="summary: comma-separated groups of "
                   "run,composed,vrths,face,realtime,tests (default all)")
    b.add_argument("--face-points", type=int, help="summary: FACE sweep points (default 200, quick 8)")
    b.add_argument("--no-cluster", action="store_true", help="summary: no FACE sweep on a Dask cluster started "
                   "from the command line (dask scheduler, dask worker)")
    b.add_argument("--rates", metavar="HZ,...", help="summary: realtime rates scanned from the highest "
                   "(default 1000,500,250,200,100)")
    b.add_argument("--rt-duration", type=float, help="summary: seconds of each realtime run (default 5, quick 1)")
    b.add_argument("--test-record", metavar="PATH", help="summary: the `make test` record (default "
                   "build/test_wall.json of the source tree)")
    b.add_argument("--out")
    b.set_defaults(func=cmd_bench)
    c = sub.add_parser("check", help="validate a scenario and print it fully resolved")
    _scenario_args(c)
    c.set_defaults(func=cmd_check)
    rf = sub.add_parser("reference", help="the ideal-transfer-system reference solution of a scenario: events "
                        "printed, signals plotted")
    _scenario_args(rf)
    rf.add_argument("--duration", type=float, help="seconds to solve (default: the scenario's loop.duration_s)")
    rf.add_argument("--out", help="directory for reference.json/.csv/.png (default runs/reference-NAME-TIME)")
    rf.add_argument("--json", action="store_true", help="print reference.json instead of the summary")
    rf.set_defaults(func=cmd_reference)
    pa = sub.add_parser("params", help="list every scenario parameter (type, unit, range)")
    pa.add_argument("--markdown", action="store_true")
    pa.set_defaults(func=cmd_params)
    fa = sub.add_parser("face", help="FACE fidelity sweep: run the points, fit q = h(e), extrapolate to e = 0")
    fa.add_argument("sweep", nargs="?", help="sweep YAML (e.g. config/sweeps/contact_1d_tau_add.yaml); with "
                    "--reanalyse optional (default OUT/sweep.yaml)")
    fa.add_argument("--out", required=True, help="output directory (points, face.json, report.md, plot)")
    fa.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="parallel processes (default: the number of cores)")
    fa.add_argument("--reanalyse", action="store_true", help="analyse the saved points again; nothing is run")
    fa.add_argument("--cluster", metavar="ADDRESS", help="run the points on a Dask distributed cluster: local:N "
                    "(N local worker processes) or a scheduler address such as tcp://host:8786")
    fa.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a scenario setting of every "
                    "point (plant=... and loop.mode=... set the sweep's plant and mode)")
    fa.add_argument("--mode", choices=("lockstep", "realtime"), help="clock mode of the graph runs")
    fa.add_argument("--plant", choices=tuple(scn.PLANT_NODE_OF), help="plant of the graph runs (a rig: realtime)")
    fa.add_argument("--composed", action="store_true", help="graph runs with every node in one process")
    fa.add_argument("--retries", type=int, default=0, metavar="N", help="run a point whose run aborts again, up to "
                    "N times (a realtime run on a rig)")
    fa.set_defaults(func=cmd_face)
    bm = sub.add_parser("building-benchmark", help="the vRTHS building benchmark control problem (Silva et al. 2020): "
                        "J1-J9 in process")
    bm.add_argument("--case", default="1", choices=("1", "2", "3", "4", "all"),
                    help="partitioning case (default 1; all = cases 1-4, one table each)")
    bm.add_argument("--earthquake", default="elcentro", choices=("elcentro", "kobe", "morgan"),
                    help="ground motion (default elcentro)")
    bm.add_argument("--runs", type=int, default=0, help="0 = the nominal plant; R > 0 = R seeded perturbed plants "
                    "(seeds 1..R), mean and std of J1-J9")
    bm.add_argument("--convention", choices=("paper", "matlab"), default="paper",
                    help="definition and order of J1-J9 (default paper)")
    bm.add_argument("--controller", metavar="MODULE:CLASS", help="a TrackingController subclass by import path "
                    "(default: the benchmark's PI + phase-lead controller)")
    bm.add_argument("--duration", type=float, default=0.0, help="simulated seconds (default 0 = whole record)")
    bm.add_argument("--out", help="directory for benchmark.json and benchmark.md (default runs/benchmark-TIME)")
    bm.set_defaults(func=cmd_benchmark)
    li = sub.add_parser("list", help="list the scenarios (this package's and those of installed packages)")
    li.set_defaults(func=cmd_list)
    p.origin = verbs.add_plugin_verbs(sub, _scenario_args)      # rths_ros.verbs: this package's and others'
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(verbs.rename(list(sys.argv[1:] if argv is None else argv)))
    try:
        return int(args.func(args) or 0)
    except ParameterError as exc:
        print(f"rths {args.cmd}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rths: interrupted", file=sys.stderr)
        return 130


def console_main() -> None:
    """The ``rths`` command.  ``rths run`` ends its process at once when it is done (node processes ended, files
    written and closed, output flushed): the interpreter's own teardown of numba, pinocchio, rclpy and
    matplotlib would add about 0.6 s to every run."""
    code = main()
    if sys.argv[1:2] == ["run"]:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise SystemExit(code)


if __name__ == "__main__":
    console_main()
