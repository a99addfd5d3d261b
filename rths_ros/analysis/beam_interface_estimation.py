"""``rths interface-estimation --rig beams``: the interface force and moment of Bartl's (2019) beam rig (§6.1) through its
transmission simulator, estimated by projected forces, inverse dynamics and the augmented-state Kalman filter
(rths_ros.core.models.bartl.beam_estimation), with the Kalman filter over a grid of Q and R; JSON, Markdown table
and plot."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np

from rths_ros.core.models.bartl.beam_estimation import CHANNELS, BeamEstimationParams, estimate_beam_interface
from rths_ros.params import ParameterError

__all__ = ["DEFAULT_Q_FORCES", "DEFAULT_R_SCALES", "params_from_flags", "check_grid", "format_tables",
           "run_beam_report"]

DEFAULT_Q_FORCES = (1.0, 10.0, 100.0, 1e3, 1e4)
DEFAULT_R_SCALES = (0.1, 1.0, 10.0)
_NAMES = {"kalman": "augmented-state Kalman", "inverse_dynamics": "inverse dynamics", "projected": "projected forces"}


def params_from_flags(flags: dict) -> BeamEstimationParams:
    """``{flag: (key, value)}`` -> BeamEstimationParams; a bad value raises a ParameterError that names the flag,
    the value and the allowed range (taken from the parameter's declaration).  ``None`` values keep the default."""
    fields = {f.name: f for f in dataclasses.fields(BeamEstimationParams)}
    kw = {}
    for flag, (key, v) in flags.items():
        if v is None:
            continue
        meta = fields[key].metadata
        if meta.get("choices"):
            if v not in meta["choices"]:
                raise ParameterError(f"{flag}: {v!r} is not allowed; expected one of {', '.join(meta['choices'])}")
        else:
            lo, hi, unit = meta["lo"], meta["hi"], meta.get("unit") or ""
            if not (isinstance(v, (int, float)) and math.isfinite(v) and lo <= v <= hi):
                raise ParameterError(f"{flag}: {v!r} is out of range; expected a number in [{lo:g}, {hi:g}]"
                                     + (f" {unit}" if unit else ""))
        kw[key] = v
    p = BeamEstimationParams(**kw)
    try:
        p.validate()
    except ParameterError as exc:
        names = {key: flag for flag, (key, _v) in flags.items()}
        msg = str(exc)
        for key, flag in names.items():
            msg = msg.replace(f"{key}:", f"{flag}:").replace(f"{key} =", f"{flag} =")
        raise ParameterError(msg) from None
    return p


def check_grid(flag: str, values: tuple, lo: float, hi: float) -> tuple:
    """A sweep list from the command line: non-empty, each value in ``[lo, hi]`` (else an error naming ``flag``)."""
    if not values:
        raise ParameterError(f"{flag}: empty; expected a comma-separated list of numbers in [{lo:g}, {hi:g}]")
    for v in values:
        if not (math.isfinite(v) and lo <= v <= hi):
            raise ParameterError(f"{flag}: {v!r} is out of range; expected numbers in [{lo:g}, {hi:g}]")
    return tuple(values)


def _doc(r: dict) -> dict:
    p = r["params"]
    return {"rig": "beams (Bartl 2019 §6.1)", "settings": {f.name: getattr(p, f.name) for f in dataclasses.fields(p)},
            "channels": list(CHANNELS), "rms_truth": r["rms_truth"].tolist(),
            "rel_rms_error": {k: v.tolist() for k, v in r["rel_rms_error"].items()},
            "hf_noise": {k: v.tolist() for k, v in r["hf_noise"].items()},
            "lag_s": {k: v.tolist() for k, v in r["lag_s"].items()},
            "sweep": r["sweep"]}


def format_tables(doc: dict) -> str:
    """The Markdown tables of a report's JSON document."""
    ch = doc["channels"]
    s = doc["settings"]
    lines = [f"Errors relative to the truth's RMS after {s['skip_s']:g} s (truth RMS: "
             + ", ".join(f"{c} {v:.4g}" for c, v in zip(ch, doc["rms_truth"])) + "); noise: the error's part above "
             "1 kHz, same scale.", "",
             "| estimator | " + " | ".join(f"{c} error" for c in ch) + " | " + " | ".join(f"{c} noise" for c in ch)
             + " |", "|---|" + "---|" * (2 * len(ch))]
    for k in ("kalman", "inverse_dynamics", "projected"):
        label = _NAMES[k] + (f" (q_force {s['q_force']:g}, R scale {s['r_scale']:g})" if k == "kalman" else "")
        lines.append(f"| {label} | " + " | ".join(f"{v:.4f}" for v in doc["rel_rms_error"][k]) + " | "
                     + " | ".join(f"{v:.4f}" for v in doc["hf_noise"][k]) + " |")
    lines += ["", "Kalman filter over Q (q_force, N^2/s; the moment's density is q_force x "
              f"{s['moment_scale_m']:g}^2 m^2) and R (factor on c^2/3):", "",
              "| q_force | R scale | " + " | ".join(f"{c} error" for c in ch) + " | "
              + " | ".join(f"{c} noise" for c in ch) + f" | {ch[0].split()[0]} lag [ms] |",
              "|---|---|" + "---|" * (2 * len(ch) + 1)]
    for row in doc["sweep"]:
        lines.append(f"| {row['q_force']:g} | {row['r_scale']:g} | "
                     + " | ".join(f"{v:.4f}" for v in row["rel_rms_error"]) + " | "
                     + " | ".join(f"{v:.4f}" for v in row["hf_noise"]) + f" | {row['lag_s'][0] * 1e3:.3f} |")
    return "\n".join(lines)


def _plot(r: dict, doc: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t, lam = r["sim"]["t"], r["sim"]["lam"]
    sel = t >= t[-1] - 0.02
    fig, axes = plt.subplots(3, 1, figsize=(9.0, 10.0))
    for c, ax in enumerate(axes[:2]):
        ax.plot(t[sel], lam[sel, c], "k", lw=2.0, label="truth")
        for k in ("inverse_dynamics", "kalman", "projected"):
            ax.plot(t[sel], r["estimates"][k][sel, c], lw=1.0, ls="--" if k == "projected" else "-",
                    label=_NAMES[k])
        lim = 1.6 * float(np.max(np.abs(lam[sel, c])))
        ax.set_ylim(-lim, lim)
        ax.set_ylabel(CHANNELS[c])
        ax.set_title(f"{CHANNELS[c].split()[0]} on the plate, last 20 ms (projected forces clipped)", fontsize=9)
        ax.legend(fontsize=8, ncol=4)
    ax = axes[2]
    rs = sorted({row["r_scale"] for row in doc["sweep"]})
    for v in rs:
        rows = sorted((row for row in doc["sweep"] if row["r_scale"] == v), key=lambda x: x["q_force"])
        ax.loglog([x["q_force"] for x in rows], [x["rel_rms_error"][0] for x in rows], "o-", label=f"Kalman, R x {v:g}")
    ax.axhline(doc["rel_rms_error"]["inverse_dynamics"][0], color="k", ls=":", label="inverse dynamics")
    ax.set_xlabel("q_force [N^2/s]")
    ax.set_ylabel(f"{CHANNELS[0].split()[0]} error / truth RMS")
    ax.set_title("Kalman error over Q and R: too small a Q lags, too large a Q passes the noise", fontsize=9)
    ax.legend(fontsize=8)
    for a in axes:
        a.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_beam_report(p: BeamEstimationParams, out: Path, q_forces=DEFAULT_Q_FORCES, r_scales=DEFAULT_R_SCALES,
                    as_json: bool = False, progress=None) -> str:
    """Simulate, estimate, write beam_interface_estimation.json/.md/.png into ``out``; return the text to print."""
    say = progress or (lambda _m: None)
    say(f"beam rig (Bartl 2019 §6.1): {p.duration_s:g} s at 0.2 ms, TS '{p.ts_model}', {p.excitation} excitation; "
        f"then the Kalman filter over {len(q_forces)} Q x {len(r_scales)} R ...")
    r = estimate_beam_interface(p, q_forces=tuple(q_forces), r_scales=tuple(r_scales), progress=say)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    doc = _doc(r)
    (out / "beam_interface_estimation.json").write_text(json.dumps(doc, indent=2) + "\n")
    tables = format_tables(doc)
    (out / "beam_interface_estimation.md").write_text(tables + "\n")
    _plot(r, doc, out / "beam_interface_estimation.png")
    if as_json:
        return json.dumps(doc, indent=2)
    exc = (f"sines {p.amp_low_n:g} N at {p.f_low_hz:g} Hz + {p.amp_high_n:g} N at {p.f_high_hz:g} Hz per shaker"
           if p.excitation == "sine" else f"band-limited noise, {p.random_rms_n:g} N RMS below {p.random_band_hz:g} Hz")
    head = (f"beam rig of Bartl 2019 §6.1, TS '{p.ts_model}': {exc}; noise c_nf = {p.c_nf:g} N, c_nd = {p.c_nd:g} m, "
            f"c_na = {p.c_na:g} m/s^2")
    return (f"{head}\n{tables}\n  -> {out / 'beam_interface_estimation.json'}, beam_interface_estimation.md, "
            "beam_interface_estimation.png")
