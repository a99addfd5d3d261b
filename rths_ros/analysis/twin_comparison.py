"""Twin versus rig: the same scenario run on the rig and on its digital twin, signal against signal.

FACE (Insam 2022, ch. 11-13) degrades the transfer system step by step and extrapolates to a perfect one; it can
be run on the rig itself (docs/fidelity.md, "FACE on your rig") or, at no cost to the rig, on its twin.  The twin
is good enough for FACE when it reproduces what FACE reads from a test: the interface tracking (command ``z`` against
achieved ``z'``, whose error and equivalent delay are FACE's e), the interface force and the achieved motion (whose
features are q).  :func:`compare_records` puts a rig record and a twin record of the same scenario side by side:

per signal (``z_cmd`` interface command, ``z_ach`` achieved, ``e_track`` = z - z' tracking error, ``f_int``
interface force), over the samples both records have:

* ``nrmse`` = RMS(x_rig - x_twin) / RMS(x_twin - mean x_twin) (the difference against the twin signal's own
  variation; for the tracking error the twin's tracking error itself);
* ``peak_diff_rel`` = (max|x_rig| - max|x_twin|) / max|x_twin| (signed) and ``peak_diff`` in the signal's unit
  (the peak force difference in N);
* ``correlation``: Pearson's r of the two signals;
* ``lag_s``: the time shift of the rig signal against the twin's that minimises their mean square difference
  (mean-removed, within ``max_lag_s``, parabolic sub-sample refinement); positive: the rig is late;

and per run the tracking measures of each (``e_track_rel``, eq. 10.1; the adapted equivalent delay ``tau_fei_s``,
§11.3.1, :func:`rths_ros.analysis.measures.fei`) and their differences.

:func:`verdict` judges them against :class:`ComparisonThresholds` (the thresholds are a choice of this package, not
the thesis's; the report states them): the twin is good enough for FACE when its equivalent delay is within
``max_tau_fei_diff_s`` of the rig's, its tracking error within ``max_nrmse_tracking`` of the rig's (normalised),
its achieved motion and force within ``max_nrmse_motion`` / ``max_nrmse_force``, its peak force within
``max_peak_force_diff_rel``, its force correlated to at least ``min_correlation_force`` and its achieved motion not
shifted by more than ``max_lag_s``; and the rig run completed.

How the twin runs (:func:`run_twin`): the run's resolved scenario (``RUN_DIR/scenario.yaml``) with ``plant: sim``,
the driver's wrench topic cleared (the twin publishes its own raw wrench), any ``overrides`` (``--set``) applied, in
the run's mode, step and duration.  A realtime run's twin runs through the ROS graph in realtime
(:func:`rths_ros.runner.run_scenario`; composed when the rig run was), so both carry the same middleware and
scheduling; a lockstep run's twin is the in-process virtual run (:func:`rths_ros.app.vrths.run_virtual`), which
the lockstep graph reproduces to floating-point accuracy (test/graph/test_contact1d_graph.py).
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import yaml

from rths_ros.analysis import measures as ms
from rths_ros.app import scenario as scn
from rths_ros.params import ParameterError, build, param

__all__ = ["ComparisonThresholds", "SIGNALS", "load_run", "twin_scenario", "run_twin", "compare_records",
           "verdict", "plot_comparison", "write_outputs", "compare_run"]

#: compared signals: key -> (label, unit)
SIGNALS = {"z_cmd": ("interface command z", "m"), "z_ach": ("achieved displacement z'", "m"),
           "e_track": ("tracking error z - z'", "m"), "f_int": ("interface force F", "N")}


@dataclass(frozen=True)
class ComparisonThresholds:
    """When the twin is good enough for FACE (a choice of this package; docs/fidelity.md, "Twin versus rig")."""

    max_tau_fei_diff_s: float = param(0.003, "s", 0.0, 1.0, "largest |tau_FEI(rig) - tau_FEI(twin)|: the "
                                      "transfer system's equivalent delay, FACE's error measure (at least one "
                                      "step loop.dt_s: the twin places a delay in whole steps)")
    max_nrmse_tracking: float = param(0.6, "", 0.0, 100.0, "largest RMS difference of the tracking errors "
                                      "z - z' over the twin's RMS tracking error (a realtime rig's scheduling "
                                      "jitter alone leaves about 0.4 on a loaded two-core machine)")
    max_nrmse_motion: float = param(0.1, "", 0.0, 100.0, "largest RMS difference of the achieved displacements "
                                    "over the twin's (mean-removed) RMS")
    max_nrmse_force: float = param(0.2, "", 0.0, 100.0, "largest RMS difference of the interface forces over the "
                                   "twin's (mean-removed) RMS")
    max_peak_force_diff_rel: float = param(0.1, "", 0.0, 100.0, "largest |peak force difference| relative to the "
                                           "twin's peak force")
    min_correlation_force: float = param(0.95, "", -1.0, 1.0, "smallest correlation of the interface forces")
    max_lag_s: float = param(0.003, "s", 0.0, 1.0, "largest |time shift| of the achieved displacement (at least "
                             "one step loop.dt_s)")


def load_run(run_dir: str | Path) -> tuple[dict, scn.Scenario]:
    """(record, scenario) of a finished run: the record from ``RUN_DIR/bag`` (rths_ros.analysis.run_analysis), the
    scenario from ``RUN_DIR/scenario.yaml`` (the resolved scenario the nodes ran; the bag's copy if it is missing)."""
    from rths_ros.analysis.run_analysis import record_from_bag
    run = Path(run_dir)
    bag = run / "bag"
    if not bag.exists():
        raise ParameterError(f"RUN_DIR: {str(run)!r} has no bag/ (expected a directory written by `rths run`)")
    rec, s_bag, _ = record_from_bag(bag)
    path = run / "scenario.yaml"
    s = scn.from_data(yaml.safe_load(path.read_text())) if path.exists() else s_bag
    return rec, s


def twin_scenario(s: scn.Scenario, overrides: Sequence[str] = ()) -> scn.Scenario:
    """The rig run's scenario on the twin: ``plant: sim``, no external wrench topic (the twin's own raw wrench),
    then ``overrides`` (``KEY=VALUE``; e.g. the twin's own leg gains when the rig's differ)."""
    data = scn.to_dict(s)
    data["plant"] = "sim"
    data.setdefault("standard_interfaces", {})["wrench_input_topic"] = ""
    data["description"] = f"twin of: {s.description}".strip()
    return scn.from_data(data, list(overrides))


def was_composed(run_dir: str | Path) -> bool:
    """The run's nodes shared one process (``rths run --composed``: its log is logs/composed.log)."""
    return (Path(run_dir) / "logs" / "composed.log").exists()


def run_twin(twin: scn.Scenario, out_dir: str | Path, composed: bool = False) -> tuple[dict, str]:
    """Run the twin scenario; (record, how).  Realtime: the ROS graph in ``out_dir`` (record read back from its
    bag); lockstep: the in-process virtual run (equivalent to the lockstep graph)."""
    if twin.loop.mode == "realtime":
        from rths_ros.analysis.run_analysis import record_from_bag
        from rths_ros.runner import RunError, run_scenario
        out = Path(out_dir)
        try:
            res = run_scenario(twin, out, composed=composed, progress=False, log=lambda *_: None)
        except RunError as exc:
            raise ParameterError(f"twin run: did not start: {exc}") from None
        if not (out / "bag").exists():
            raise ParameterError(f"twin run: no bag recorded ({res.message})")
        rec, _, _ = record_from_bag(out / "bag")
        how = (f"ROS graph, realtime{', composed' if composed else ', separate processes'} "
               f"(rths_ros.runner.run_scenario, {out})")
        if res.code != 0:
            rec["aborted"] = True
            rec["abort_reason"] = rec.get("abort_reason") or res.message.splitlines()[0]
        return rec, how
    from rths_ros.app.vrths import run_virtual
    return run_virtual(twin), "in-process virtual run (rths_ros.app.vrths.run_virtual; = the lockstep graph)"


def _signals(rec: Mapping, n: int) -> dict[str, np.ndarray]:
    z = np.asarray(rec["z_cmd"], dtype=float)[:n]
    za = np.asarray(rec["z_ach"], dtype=float)[:n]
    return {"z_cmd": z, "z_ach": za, "e_track": z - za, "f_int": np.asarray(rec["f_int"], dtype=float)[:n]}


def _lag(a: np.ndarray, b: np.ndarray, dt: float, max_lag_s: float) -> float:
    """Shift of ``a`` against ``b`` [s] (positive: ``a`` is late): the shift L that minimises the mean square
    difference of ``a[k + L]`` and ``b[k]`` over their overlap (both mean-removed), refined between samples by a
    parabola.  (The peak of the plain cross-correlation is biased by the shrinking overlap for the slow signals of a
    test; the least-squares shift is not.)"""
    a = a - a.mean()
    b = b - b.mean()
    m = max(1, min(int(round(max_lag_s / dt)), a.size // 4))
    if not (np.any(a) and np.any(b)):
        return 0.0
    lags = np.arange(-m, m + 1)
    n = a.size
    c = np.array([np.mean((a[max(L, 0):n + min(L, 0)] - b[max(-L, 0):n - max(L, 0)]) ** 2) for L in lags])
    i = int(np.argmin(c))
    shift = float(lags[i])
    if 0 < i < c.size - 1:                 # parabola through the minimum and its neighbours
        den = c[i - 1] - 2 * c[i] + c[i + 1]
        if den > 0:
            shift += 0.5 * (c[i - 1] - c[i + 1]) / den
    return shift * dt


def _tau_fei(z: np.ndarray, za: np.ndarray, dt: float) -> float:
    try:
        return float(ms.fei(z, za, dt, mode="adapted").tau_s)
    except (ParameterError, ValueError, FloatingPointError):
        return math.nan


def compare_records(rig: Mapping, twin: Mapping, dt: float, max_lag_s: float = 0.05) -> dict:
    """The numbers of the module doc for a rig record and a twin record (JSON-ready)."""
    n = int(min(np.asarray(rig["z_cmd"]).size, np.asarray(twin["z_cmd"]).size))
    if n < 10:
        raise ParameterError(f"records: {n} common samples; expected at least 10 (did a run end at once?)")
    r, t = _signals(rig, n), _signals(twin, n)
    signals = {}
    for key, (label, unit) in SIGNALS.items():
        a, b = r[key], t[key]
        scale = ms.rms(b) if key == "e_track" else ms.rms(b - b.mean())
        pa, pb = float(np.max(np.abs(a))), float(np.max(np.abs(b)))
        sa, sb = float(np.std(a)), float(np.std(b))
        signals[key] = {
            "label": label, "unit": unit,
            "rms_rig": ms.rms(a), "rms_twin": ms.rms(b), "rms_diff": ms.rms(a - b),
            "nrmse": ms.rms(a - b) / scale if scale > 0 else math.nan,
            "peak_rig": pa, "peak_twin": pb, "peak_diff": pa - pb,
            "peak_diff_rel": (pa - pb) / pb if pb > 0 else math.nan,
            "correlation": float(np.corrcoef(a, b)[0, 1]) if sa > 0 and sb > 0 else math.nan,
            "lag_s": _lag(a, b, dt, max_lag_s),
        }
    tracking = {}
    for who, x in (("rig", r), ("twin", t)):
        tracking[who] = {"e_track_rel": ms.e_track_rel(x["z_cmd"], x["z_ach"], norm="max"),
                         "tau_fei_s": _tau_fei(x["z_cmd"], x["z_ach"], dt),
                         "max_abs_error_m": float(np.max(np.abs(x["e_track"])))}
    tracking["tau_fei_diff_s"] = tracking["rig"]["tau_fei_s"] - tracking["twin"]["tau_fei_s"]
    tracking["e_track_rel_diff"] = tracking["rig"]["e_track_rel"] - tracking["twin"]["e_track_rel"]
    return {"samples": n, "dt_s": dt, "signals": signals, "tracking": tracking,
            "rig_aborted": bool(np.asarray(rig.get("aborted", False))),
            "twin_aborted": bool(np.asarray(twin.get("aborted", False))),
            "rig_abort_reason": str(rig.get("abort_reason", "") or ""),
            "twin_abort_reason": str(twin.get("abort_reason", "") or "")}


def verdict(cmp: Mapping, th: ComparisonThresholds | None = None, twin_command_delay_steps: int = 0) -> dict:
    """Whether the twin is good enough for FACE (module doc), with every check, its value and threshold, and a
    ``hint`` where the equivalent delays differ (``twin_command_delay_steps``: the twin's own
    ``sim_plant.command_delay_steps``, to which a suggested correction adds)."""
    th = th or ComparisonThresholds()
    sig, tr = cmp["signals"], cmp["tracking"]
    dt = float(cmp["dt_s"])
    tau_limit, lag_limit = max(th.max_tau_fei_diff_s, dt), max(th.max_lag_s, dt)     # not finer than a step
    checks = [
        ("both runs completed", not (cmp["rig_aborted"] or cmp["twin_aborted"]), None, None, "=="),
        ("|tau_FEI rig - tau_FEI twin| [s]", abs(tr["tau_fei_diff_s"]), tau_limit, None, "<="),
        ("tracking error z - z': nrmse", sig["e_track"]["nrmse"], th.max_nrmse_tracking, None, "<="),
        ("achieved displacement z': nrmse", sig["z_ach"]["nrmse"], th.max_nrmse_motion, None, "<="),
        ("interface force: nrmse", sig["f_int"]["nrmse"], th.max_nrmse_force, None, "<="),
        ("interface force: |peak difference| / peak", abs(sig["f_int"]["peak_diff_rel"]), th.max_peak_force_diff_rel,
         None, "<="),
        ("interface force: correlation", sig["f_int"]["correlation"], th.min_correlation_force, None, ">="),
        ("achieved displacement z': |lag| [s]", abs(sig["z_ach"]["lag_s"]), lag_limit, None, "<="),
    ]
    rows = []
    for name, value, limit, _, op in checks:
        if op == "==":
            passed = bool(value)
        elif value is None or not math.isfinite(float(value)):
            passed = False
        else:
            passed = float(value) <= limit if op == "<=" else float(value) >= limit
        rows.append({"name": name, "value": value if op != "==" else bool(value), "threshold": limit, "op": op,
                     "passed": bool(passed)})
    ok = all(c["passed"] for c in rows)
    failed = [c["name"] for c in rows if not c["passed"]]
    text = ("twin good enough for FACE: every check passed" if ok
            else "twin NOT good enough for FACE: " + "; ".join(failed) + " outside the threshold")
    hint = ""
    d_tau = tr["tau_fei_diff_s"]
    if math.isfinite(d_tau) and abs(d_tau) > tau_limit:
        steps = int(round(d_tau / dt))
        if d_tau > 0:
            hint = (f"the rig lags the twin by {1e3 * d_tau:.1f} ms of equivalent delay (about "
                    f"{d_tau / dt:.1f} steps): give the twin the rig's extra latency, e.g. --set "
                    f"sim_plant.command_delay_steps={twin_command_delay_steps + max(1, steps)}, or "
                    "identify the legs again (rths identify)")
        else:
            fewer = (f"--set sim_plant.command_delay_steps={max(0, twin_command_delay_steps + steps)} (it has "
                     f"{twin_command_delay_steps}), or " if twin_command_delay_steps > 0 else "")
            hint = (f"the twin lags the rig by {-1e3 * d_tau:.1f} ms of equivalent delay (about {-d_tau / dt:.1f} "
                    f"steps): {fewer}identify the twin's legs again (rths identify): they are slower than the rig's")
    return {"good_enough": ok, "text": text, "checks": rows, "thresholds": asdict(th), "hint": hint}


def plot_comparison(rig: Mapping, twin: Mapping, dt: float, out: Path, title: str = "") -> list[Path]:
    """signals.png (command and achieved, tracking error, force, force difference; rig against twin) and
    tracking.png (synchronisation subspace z' against z of both)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    n = int(min(np.asarray(rig["z_cmd"]).size, np.asarray(twin["z_cmd"]).size))
    r, t = _signals(rig, n), _signals(twin, n)
    time = np.arange(n) * dt
    fig, ax = plt.subplots(4, 1, figsize=(9, 10), sharex=True)
    ax[0].plot(time, 1e3 * t["z_cmd"], color="C0", lw=1.0, label="z twin")
    ax[0].plot(time, 1e3 * r["z_cmd"], color="C0", lw=1.0, ls="--", label="z rig")
    ax[0].plot(time, 1e3 * t["z_ach"], color="C3", lw=1.0, label="z' twin")
    ax[0].plot(time, 1e3 * r["z_ach"], color="C3", lw=1.0, ls="--", label="z' rig")
    ax[0].set_ylabel("displacement [mm]")
    ax[1].plot(time, 1e3 * t["e_track"], color="C2", lw=1.0, label="twin")
    ax[1].plot(time, 1e3 * r["e_track"], color="k", lw=1.0, ls="--", label="rig")
    ax[1].set_ylabel("z - z' [mm]")
    ax[2].plot(time, t["f_int"], color="C1", lw=1.0, label="twin")
    ax[2].plot(time, r["f_int"], color="k", lw=1.0, ls="--", label="rig")
    ax[2].set_ylabel("interface force [N]")
    ax[3].plot(time, r["f_int"] - t["f_int"], color="C4", lw=1.0, label="force rig - twin")
    ax[3].plot(time, 1e3 * (r["z_ach"] - t["z_ach"]) * 10.0, color="C5", lw=1.0, label="z' rig - twin [0.1 mm]")
    ax[3].set_ylabel("difference")
    ax[3].set_xlabel("time t [s]")
    for a in ax:
        a.grid(True, alpha=0.3)
        a.legend(fontsize=8, loc="best")
    ax[0].set_title(title or "rig against twin")
    fig.tight_layout()
    p1 = out / "signals.png"
    fig.savefig(p1, dpi=110)
    plt.close(fig)
    fig, axs = plt.subplots(figsize=(5.5, 5))
    ms.plot_ssp(t["z_cmd"], t["z_ach"], ax=axs, label="twin")
    ms.plot_ssp(r["z_cmd"], r["z_ach"], ax=axs, label="rig")
    axs.set_title("tracking: z' against z")
    fig.tight_layout()
    p2 = out / "tracking.png"
    fig.savefig(p2, dpi=110)
    plt.close(fig)
    return [p1, p2]


def _fmt(v, unit: str = "") -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return f"{v:.4g}{(' ' + unit) if unit else ''}"


def write_outputs(result: Mapping, out: Path) -> dict:
    """twin_comparison.json and report.md (the plots are written by :func:`plot_comparison`)."""
    out.mkdir(parents=True, exist_ok=True)

    def safe(x):
        if isinstance(x, dict):
            return {k: safe(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [safe(v) for v in x]
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, (np.floating, np.integer, np.bool_)):
            return x.item()
        return x
    (out / "twin_comparison.json").write_text(json.dumps(safe(dict(result)), indent=1))
    v, c, tr = result["verdict"], result["comparison"], result["comparison"]["tracking"]
    lines = [f"# Twin versus rig: {result['scenario']}", "", f"**Verdict: {v['text']}**", "",
             f"- rig run: `{result['run_dir']}` (plant `{result['rig_plant']}`, {result['mode']}, "
             f"{c['samples']} samples of {1e3 * c['dt_s']:g} ms)",
             f"- twin: {result['twin_how']}" + (f"; overrides {', '.join(result['overrides'])}"
                                                 if result["overrides"] else ""), "",
             "| run | e_track_rel | tau_FEI (adapted) | max \\|z - z'\\| |", "|---|---|---|---|"]
    for who in ("rig", "twin"):
        lines.append(f"| {who} | {_fmt(tr[who]['e_track_rel'])} | {_fmt(1e3 * tr[who]['tau_fei_s'], 'ms')} | "
                     f"{_fmt(1e3 * tr[who]['max_abs_error_m'], 'mm')} |")
    lines += ["", "| signal | nrmse | peak rig | peak twin | peak difference | correlation | lag (rig late) |",
              "|---|---|---|---|---|---|---|"]
    for s in c["signals"].values():
        unit = s["unit"]
        lines.append(f"| {s['label']} | {_fmt(s['nrmse'])} | {_fmt(s['peak_rig'], unit)} | "
                     f"{_fmt(s['peak_twin'], unit)} | {_fmt(s['peak_diff'], unit)} ({_fmt(100 * s['peak_diff_rel'])} %) "
                     f"| {_fmt(s['correlation'])} | {_fmt(1e3 * s['lag_s'], 'ms')} |")
    lines += ["", "| check | value | threshold | passed |", "|---|---|---|---|"]
    for ch in v["checks"]:
        thr = "" if ch["threshold"] is None else f"{ch['op']} {_fmt(ch['threshold'])}"
        lines.append(f"| {ch['name']} | {_fmt(ch['value'])} | {thr} | {'yes' if ch['passed'] else 'no'} |")
    if v.get("hint"):
        lines += ["", f"Hint: {v['hint']}."]
    lines += ["", "nrmse: RMS(rig - twin) over the twin's RMS (mean-removed; the tracking error: its RMS).",
              "", "![signals](signals.png)", "", "![tracking](tracking.png)", ""]
    (out / "report.md").write_text("\n".join(lines))
    return {"json": out / "twin_comparison.json", "report": out / "report.md"}


def thresholds_from(settings: Sequence[str]) -> ComparisonThresholds:
    """:class:`ComparisonThresholds` with ``NAME=VALUE`` settings (validated; a wrong name or value names it)."""
    data = {}
    for text in settings:
        if "=" not in text:
            raise ParameterError(f"--threshold {text!r}: expected NAME=VALUE, e.g. max_tau_fei_diff_s=0.002")
        k, v = text.split("=", 1)
        try:
            data[k.strip()] = float(v)
        except ValueError:
            raise ParameterError(f"--threshold {k.strip()}: {v!r} is not a number") from None
    return build(ComparisonThresholds, data, section="threshold")


def compare_run(run_dir: str | Path, out_dir: str | Path | None = None, overrides: Sequence[str] = (),
                thresholds: ComparisonThresholds | None = None, twin_run: str | Path | None = None,
                composed: bool | None = None) -> dict:
    """Load the rig run, run (or load, ``twin_run``) its twin, compare, judge, plot and write the outputs in
    ``out_dir`` (default ``RUN_DIR/compare-twin``); returns the result (verdict, comparison, how the twin ran)."""
    run = Path(run_dir).resolve()
    out = Path(out_dir) if out_dir is not None else run / "compare-twin"
    rig_rec, s = load_run(run)
    twin = twin_scenario(s, overrides)
    if twin_run is not None:
        twin_rec, s_twin = load_run(twin_run)
        if s_twin.plant != "sim":
            raise ParameterError(f"--twin-run: {str(twin_run)!r} ran on plant {s_twin.plant!r}; expected a run on "
                                 "the twin (plant: sim)")
        for key in ("mode", "dt_s", "duration_s", "trials"):
            if getattr(s_twin.loop, key) != getattr(s.loop, key):
                raise ParameterError(f"--twin-run: loop.{key} = {getattr(s_twin.loop, key)!r} differs from the rig "
                                     f"run's {getattr(s.loop, key)!r}")
        for key in ("numerical", "platform", "sim_plant", "ft_sensor", "passivity", "ilc", "aff"):
            if getattr(s_twin, key) != getattr(twin, key):
                raise ParameterError(f"--twin-run: its {key} section differs from the rig run's twin (the run's "
                                     f"scenario with plant: sim{' and --set' if overrides else ''}); expected the "
                                     "same test on the twin")
        how = f"the twin run {Path(twin_run).resolve()} (given)"
    else:
        comp = was_composed(run) if composed is None else composed
        twin_rec, how = run_twin(twin, out / "twin_run", comp)
    cmp = compare_records(rig_rec, twin_rec, s.loop.dt_s)
    th = thresholds or ComparisonThresholds()
    result = {"scenario": s.name, "run_dir": str(run), "rig_plant": s.plant, "mode": s.loop.mode,
              "twin_how": how, "overrides": list(overrides), "comparison": cmp,
              "verdict": verdict(cmp, th, int(twin.sim_plant.command_delay_steps))}
    out.mkdir(parents=True, exist_ok=True)
    plots = plot_comparison(rig_rec, twin_rec, s.loop.dt_s, out, f"{s.name}: rig ({s.plant}) against twin")
    result["files"] = [str(p) for p in plots] + [str(p) for p in write_outputs(result, out).values()]
    return result
