"""``rths interface-estimation``: Bartl 2019 §3.2's comparison of interface-force and -state estimators on the
transmission-simulator experiment (rths_ros.core.sysid.ts_experiment), printed, written and plotted."""
from __future__ import annotations

import json
from pathlib import Path

from rths_ros.core.sysid.ts_experiment import TSExperiment, simulate_experiment

__all__ = ["run_report"]

_F = ("F_Bx [N]", "F_By [N]", "M_B [N m]")
_Y = ("x_B [m]", "y_B [m]", "alpha_B [rad]")


def _table(r: dict) -> str:
    lines = ["interface force, RMS error against the truth after 0.1 s (truth RMS in the first row):",
             f"  {'':<18}" + "".join(f"{h:>14}" for h in _F),
             f"  {'truth (RMS)':<18}" + "".join(f"{v:>14.4g}" for v in r["rms_truth"])]
    for k, v in r["rms_error"].items():
        lines.append(f"  {k:<18}" + "".join(f"{x:>14.4g}" for x in v))
    lines += ["interface displacement, RMS error after 0.1 s / error at the end:",
              f"  {'':<18}" + "".join(f"{h:>14}" for h in _Y),
              f"  {'truth (RMS)':<18}" + "".join(f"{v:>14.4g}" for v in r["rms_y_truth"])]
    for k, v in r["rms_y_error"].items():
        lines.append(f"  {k:<18}" + "".join(f"{x:>14.4g}" for x in v))
    for k, v in r["final_y_error"].items():
        lines.append(f"  {k + ' (end)':<18}" + "".join(f"{x:>14.4g}" for x in v))
    return "\n".join(lines)


def _plot(r: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = r["t"]
    sel = t >= t[-1] - 0.06
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(9.0, 7.0))
    a1.plot(t[sel], r["truth"][sel, 1], "k", lw=2.0, label="truth")
    for name, est in r["estimates"].items():
        a1.plot(t[sel], est[sel, 1], lw=1.0, label=name)
    a1.set_ylabel("F_By [N]")
    a1.set_title("interface force F_By (last 60 ms)", fontsize=10)
    a1.legend(fontsize=8, ncol=4)
    for name, est in reversed(list(r["y_estimates"].items())):     # the Kalman estimate on top
        a2.plot(t, (est[:, 2] - r["y_true"][:, 2]) * 1e3, lw=0.8, label=name)
    a2.set_ylabel("error of alpha_B [mrad]")
    a2.set_xlabel("t [s]")
    a2.set_title("interface rotation alpha_B, estimate - truth (the integrated accelerations drift, the projected "
                 "displacements carry the sensor noise)", fontsize=9)
    a2.legend(fontsize=8, ncol=4)
    for a in (a1, a2):
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_report(p: TSExperiment, out: Path, as_json: bool = False) -> str:
    """Simulate, write interface_estimation.json and .png into ``out``; return the text to print."""
    r = simulate_experiment(p)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    doc = {"settings": {k: getattr(p, k) for k in p.__dataclass_fields__},
           "force": {"components": list(_F), "rms_truth": r["rms_truth"].tolist(),
                     "rms_error": {k: v.tolist() for k, v in r["rms_error"].items()}},
           "displacement": {"components": list(_Y), "rms_truth": r["rms_y_truth"].tolist(),
                            "rms_error": {k: v.tolist() for k, v in r["rms_y_error"].items()},
                            "final_error": {k: v.tolist() for k, v in r["final_y_error"].items()}}}
    (out / "interface_estimation.json").write_text(json.dumps(doc, indent=2) + "\n")
    _plot(r, out / "interface_estimation.png")
    if as_json:
        return json.dumps(doc, indent=2)
    head = (f"transmission simulator of Bartl 2019 §3.2: F_A1 = {p.amplitude_n:g} N sin(2 pi {p.frequency_hz:g} Hz t), "
            f"{p.duration_s:g} s at dt = {p.dt_s:g} s; noise c_nf = {p.c_nf:g} N, c_nd = {p.c_nd:g} m, "
            f"c_na = {p.c_na:g} m/s^2; Kalman q_force = {p.q_force:g} N^2/s")
    return f"{head}\n{_table(r)}\n  -> {out / 'interface_estimation.json'}, interface_estimation.png"
