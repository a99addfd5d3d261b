"""The voice-coil rig's analysis of a run: tracking and reference error, forces, current; metrics.json, report.md
and a plot (rths_ros's helpers of the single-actuator rigs write the files and apply the run's status)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from rths_ros.analysis.rig_run import last_trial, report_head, write_outputs
from rths_ros.analysis.run_analysis import record_from_bag


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x)))) if x.size else math.nan


def voice_coil_metrics(tr: dict, s, aborted: bool, reason: str) -> dict:
    """Metrics of one trial's rows ``tr`` (the record layout of rths_ros.families.records.empty_record)."""
    from rths_lab_example.voice_coil.family import reference
    z_cmd, z_ach = np.asarray(tr["z_cmd"], float), np.asarray(tr["z_ach"], float)
    ref = reference(s.numerical, z_cmd.size, s.loop.dt_s)["z"]
    e = z_cmd - z_ach
    finite = bool(np.all(np.isfinite(z_cmd)) and np.all(np.isfinite(z_ach)))
    m = {"scenario": s.name, "model": s.numerical.model, "n_rows": int(z_cmd.size),
         "aborted": bool(aborted), "abort_reason": reason,
         "e_track_rel": _rms(e) / _rms(z_cmd) if _rms(z_cmd) > 0 else math.nan,
         "max_abs_tracking_error_m": float(np.max(np.abs(e))) if e.size else math.nan,
         "e_ref_rel": _rms(z_cmd - ref) / _rms(ref) if _rms(ref) > 0 else math.nan,
         "amplitude_cmd_mm": 1e3 * float(np.max(np.abs(z_cmd))) if z_cmd.size else math.nan,
         "amplitude_ref_mm": 1e3 * float(np.max(np.abs(ref))) if ref.size else math.nan,
         "peak_force_n": float(np.max(np.abs(tr["f_meas"]))) if z_cmd.size else math.nan,
         "peak_current_a": float(np.max(np.abs(tr["current"][:, 0]))) if z_cmd.size else math.nan}
    limit = s.safety.interface_limit_m
    bounded = finite and (not z_cmd.size or float(np.max(np.abs(z_cmd))) <= limit)
    m["stable"] = bool(bounded and not aborted)
    m["stability_reason"] = (f"aborted: {reason}" if aborted else
                             "the command is finite and within safety.interface_limit_m" if bounded else
                             "the command left safety.interface_limit_m or is not finite")
    return m


def _plot(tr: dict, ref: np.ndarray, out: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = np.asarray(tr["t"], float)
    fig, ax = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    ax[0].plot(t, 1e3 * np.asarray(tr["z_cmd"]), label="command z (numerical part)")
    ax[0].plot(t, 1e3 * np.asarray(tr["z_ach"]), "--", label="rod x (measured)")
    ax[0].plot(t, 1e3 * ref, ":", label="coupled system, ideal rig")
    ax[0].set_ylabel("mm")
    ax[0].legend(fontsize=8)
    ax[1].plot(t, np.asarray(tr["f_meas"]), label="specimen force (sensor)")
    ax[1].set_ylabel("N")
    ax[1].set_xlabel("t (s)")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    path = out / "voice_coil.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


def analyze_voice_coil(rec: dict, s, out: Path) -> dict:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tr, n_trials, aborted, reason = last_trial(rec, s)
    m = voice_coil_metrics(tr, s, aborted, reason)
    m["n_trials"] = n_trials
    from rths_lab_example.voice_coil.family import reference
    plots = _plot(tr, reference(s.numerical, len(tr["t"]), s.loop.dt_s)["z"], out)

    def report(mm: dict) -> list[str]:
        return report_head("voice-coil rig", s, mm, f"numerical.model = {s.numerical.model}, "
                           f"{mm['n_rows']} rows of the last trial") + [
            "| measure | value |", "|---|---|",
            f"| tracking error rms(z - x) / rms(z) | {mm['e_track_rel']:.4g} |",
            f"| max abs tracking error | {1e3 * mm['max_abs_tracking_error_m']:.4f} mm |",
            f"| error against the ideal coupled system | {mm['e_ref_rel']:.4g} |",
            f"| amplitude: command / ideal coupled system | {mm['amplitude_cmd_mm']:.4f} / "
            f"{mm['amplitude_ref_mm']:.4f} mm |",
            f"| peak specimen force / coil current | {mm['peak_force_n']:.3f} N / {mm['peak_current_a']:.3f} A |", ""]

    summary = [f"e_track_rel={m['e_track_rel']:.4g}  e_ref_rel={m['e_ref_rel']:.4g}  "
               f"max|e|={1e3 * m['max_abs_tracking_error_m']:.4f} mm  peak force {m['peak_force_n']:.3f} N"]
    return write_outputs(rec, m, out, report, plots, summary, "")


def analyze_bag(bag: Path, out: Path) -> dict:
    """The family's bag analysis (``Family.analyzer``)."""
    rec, scenario, _ = record_from_bag(Path(bag))
    return analyze_voice_coil(rec, scenario, out)
