"""``rths identify`` and ``rths qualify``: identification and qualification of the transfer system (the
platform's legs) on the digital twin or over the platform link (seed 000 §4.3.1; docs/identify.md)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from rths_ros.app import scenario as scn
from rths_ros.params import ParameterError


def cmd_identify(a) -> int:
    """Closed-loop identification of the leg models (seed 000 §4.3.1) on the twin or over the platform link."""
    import re
    from dataclasses import replace

    from rths_ros.core.sysid.legs import LinkRig, TwinNoiseParams, TwinRig, identify, sysid_params
    s = scn.load(a.scenario, a.set)
    sp = s.sim_plant
    changes = {}
    if a.band_s is not None:
        changes["band_duration_s"] = a.band_s
    if a.spacing_hz is not None:
        changes["spacing_hz"] = a.spacing_hz
    if a.f_max_hz is not None:
        changes["f_max_hz"] = a.f_max_hz
    if a.fit_delay:
        changes["fit_delay"] = True
    if a.legs:
        try:
            changes["legs"] = tuple(int(v) for v in a.legs.split(",") if v.strip())
        except ValueError:
            raise ParameterError(f"--legs: {a.legs!r} is not allowed; expected leg numbers 1..6, e.g. 1,2,3") from None
    if changes.get("legs") and not all(1 <= v <= 6 for v in changes["legs"]):
        raise ParameterError(f"--legs: {a.legs!r} is not allowed; expected leg numbers 1..6")
    options = {"spacing_hz": "--spacing-hz", "f_max_hz": "--f-max-hz", "band_duration_s": "--band-s",
               "legs": "--legs", "fit_delay": "--fit-delay"}
    try:                               # ranges, whole periods per band, below Nyquist, lines per band, ...
        params = sysid_params(s.loop.dt_s, **changes)
    except ParameterError as exc:      # name the options, not the fields behind them
        msg = re.sub(r"(?<![\w-])(" + "|".join(options) + r")(?!\w)", lambda m: options[m.group(1)], str(exc))
        raise ParameterError(msg) from None
    closers = []
    if a.link is None:
        rig = TwinRig(sp.legs, sp.cascade, TwinNoiseParams(quantisation_m=sp.quantisation_m), s.loop.dt_s, sp.substeps)
        where = "digital twin (in process, noise on)"
    else:
        from rths_ros.drivers.platform_link import PlatformLinkClient
        lp = s.hardware.platform_link
        if a.link:
            host, _, port = a.link.rpartition(":")
            if not host or not port.isdigit():
                print(f"rths identify: error: --link {a.link!r}: expected HOST:PORT", file=sys.stderr)
                return 2
            lp = replace(lp, host=host, port=int(port))
        elif s.hardware.emulate:      # no address and hardware.emulate: the platform emulator, in process
            from rths_ros.app import factory
            from rths_ros.app.emulated_rig import PlatformEmulator
            emu = PlatformEmulator(factory.build_plant(s), "lockstep", s.hardware.emulator_watchdog_s,
                                   seed=factory.plant_seed(s, 0))
            closers.append(emu)
            from rths_ros.drivers.hardware import emulated_link_params
            lp = emulated_link_params(s.hardware, emu.port)
        client = PlatformLinkClient(lp)
        closers.append(client)
        rig = LinkRig(client, s.loop.dt_s)
        where = f"platform controller at {lp.host}:{lp.port}" + (" (emulator)" if not a.link and
                                                                   s.hardware.emulate else "")
    bands = params.n_bands
    print(f"rths identify {s.name}: legs {', '.join(map(str, params.legs))} on the {where}; {bands} bands up to "
          f"{params.f_max_hz:g} Hz, spacing {params.spacing_hz:g} Hz, {params.band_duration_s:g} s per band, "
          f"{params.amplitude_a:g} A rms")
    t0 = time.monotonic()

    def progress(leg, band, est):
        f = est.freq_hz
        print(f"  leg {leg} band {band + 1:>2}/{bands} [{f[0]:5.1f}, {f[-1]:5.1f}] Hz: min coherence "
              f"{float(est.coherence.min()):.3f}  ({time.monotonic() - t0:6.1f} s)", flush=True)
    try:
        res = identify(rig, params, progress)
    except Exception as exc:
        from rths_ros.drivers.platform_link import PlatformLinkError
        if isinstance(exc, PlatformLinkError):
            print(f"rths identify: error: {exc}", file=sys.stderr)
            return 1
        raise
    finally:
        for c in closers:
            c.close()
    print(f"{'':3}  {'k_i w_c,i [m/(A s^2)]':^30}   {'w_c,i [rad/s]':^30}")
    print(f"{'leg':>3}  {'identified':>10} {'scenario':>9} {'error':>9}   {'identified':>10} {'scenario':>9} "
          f"{'error':>9}  {'lines':>5} {'min coh.':>8}" + (f" {'delay [ms]':>10}" if params.fit_delay else ""))
    for fit in res.fits:
        i = fit.leg - 1
        num0, wc0 = sp.legs.gain_num[i], sp.legs.omega_c_rad_per_s[i]
        print(f"{fit.leg:>3}  {fit.gain_num:10.2f} {num0:9.2f} {100 * (fit.gain_num / num0 - 1):+7.2f} %   "
              f"{fit.omega_c_rad_per_s:10.3f} {wc0:9.3f} {100 * (fit.omega_c_rad_per_s / wc0 - 1):+7.2f} %  "
              f"{fit.n_lines:5d} {fit.min_coherence:8.3f}" + (f" {fit.delay_s * 1e3:10.3f}" if params.fit_delay
                                                               else ""))
    out = Path(a.out)
    if out.parent != Path("."):
        out.parent.mkdir(parents=True, exist_ok=True)
    res.write_yaml(out, base=sp.legs)
    print(f"-> {out} (sim_plant.legs; merge into a scenario or load with rths_ros.core.sysid.legs.load_plant_config) "
          f"in {time.monotonic() - t0:.1f} s")
    return 0


def _floats(text: str, what: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise ParameterError(f"{what}: {text!r} is not a comma-separated list of numbers") from None
    if not vals:
        raise ParameterError(f"{what}: {text!r} is empty")
    return vals


def cmd_qualify(a) -> int:
    """Stepped sine, Welch PSD and process-model fits of the transfer system on the twin (seed 004 §2-3)."""
    from dataclasses import replace

    from rths_ros.analysis.twin_qualification import qualify
    from rths_ros.core.sysid.qualification import SteppedSineParams
    s = scn.load(a.scenario, a.set)
    sine = None
    if a.freqs or a.amplitudes:
        sine = SteppedSineParams(dt_s=s.loop.dt_s, settle_time_s=0.5, settle_periods=1, measure_periods=2,
                                 min_measure_time_s=0.5)
        if a.freqs:
            sine = replace(sine, frequencies_hz=_floats(a.freqs, "--freqs"))
        sine = replace(sine, amplitudes=_floats(a.amplitudes, "--amplitudes") if a.amplitudes else (0.0003, 0.0008))
        sine.validate()
    out = Path(a.out) if a.out else Path("runs") / f"qualify-{s.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    t0 = time.monotonic()
    r = qualify(s, sine, out, with_coupling=a.with_coupling, random_duration_s=a.random_s, tune=not a.no_tune)
    f = r.frf.frequencies_hz
    print(f"rths qualify {s.name}: interface FRF of the {'compensated chain' if a.with_coupling else 'transfer system'}"
          f" on the twin ({f.shape[1]} frequencies x {f.shape[0]} amplitudes)")
    print(f"{'f [Hz]':>8} " + " ".join(f"{'A=' + format(amp, 'g'):>20}" for amp in r.frf.amplitudes))
    for j in range(f.shape[1]):
        cells = " ".join(f"{r.frf.gain[i, j]:8.4f} {r.frf.phase_deg[i, j]:8.2f} deg" for i in range(f.shape[0]))
        print(f"{f[0, j]:8.3f} {cells}")
    print("fitted process models (rms complex error):")
    for label, fits in (("free", r.fits), ("K = 1, demand-weighted", r.unit_fits)):
        for k, v in fits.items():
            m = v.model
            shape = f"tau_p {m.tau_p_s * 1e3:.2f} ms" if m.order == 1 else f"zeta {m.zeta:.3f}, w0 {m.omega0_rad_s:.2f} rad/s"
            print(f"  {k:<4} {label:<24} K/static {m.static_gain:.4f}, {shape}, delay "
                  f"{m.effective_delay_s * 1e3:.2f} ms  rms {v.rms_error:.4f}")
    if r.loop:
        print(f"in the loop (virtual run), e_track_rel: feedback only {r.loop['feedback_only']['e_track_rel']:.5f}")
        for k, v in r.loop["tdc"].items():
            print(f"  tdc {k:<12} " + (f"{v['e_track_rel']:.5f}" if not v["aborted"] else f"aborted: {v['aborted']}"))
        for k, v in r.loop["prediction"].items():
            print(f"  prediction horizon {k:>5} s " + (f"{v['e_track_rel']:.5f}" if not v["aborted"]
                                                     else f"aborted: {v['aborted']}"))
        print(f"best: tdc {r.loop.get('best_tdc', '-')}, prediction horizon {r.loop.get('best_prediction', '-')} s")
    print(f"-> {out} ({', '.join(Path(p).name for p in r.files)}) in {time.monotonic() - t0:.1f} s")
    return 0


def add_parsers(sub, scenario_args) -> None:
    """The two subcommands, on the ``rths`` parser's ``sub``; ``scenario_args`` adds SCENARIO and --set."""
    idf = sub.add_parser("identify", help="closed-loop identification of the leg models (seed 000 Table 4.1)")
    scenario_args(idf)
    rig = idf.add_mutually_exclusive_group()
    rig.add_argument("--twin", action="store_true", help="identify the digital twin's legs in process (default)")
    rig.add_argument("--link", nargs="?", const="", default=None, metavar="HOST:PORT",
                     help="identify over the platform link; without HOST:PORT the scenario's hardware.platform_link "
                          "address, or the in-process emulator when hardware.emulate is true")
    idf.add_argument("--out", default="legs.yaml", help="YAML with the identified sim_plant.legs (default legs.yaml)")
    idf.add_argument("--band-s", type=float, default=None, metavar="SECONDS",
                     help="excitation time per band (default 200 s, the thesis's)")
    idf.add_argument("--legs", default="", metavar="1,2,...", help="legs to identify (default all six)")
    idf.add_argument("--spacing-hz", type=float, default=None, metavar="HZ",
                     help="multisine line spacing = 1 / period (default 0.5 Hz, the thesis's); 1/(spacing dt) must be "
                          "a whole number of samples")
    idf.add_argument("--f-max-hz", type=float, default=None, metavar="HZ",
                     help="highest excited line (default 100 Hz, the thesis's); a whole multiple of the spacing, "
                          "below the Nyquist frequency, at least one line per band (10 bands)")
    idf.add_argument("--fit-delay", action="store_true",
                     help="also fit a pure delay e^(-s tau) per leg (printed and written as a comment; the twin "
                          "models none)")
    idf.set_defaults(func=cmd_identify)
    qu = sub.add_parser("qualify", help="stepped sine, PSD and process models of the transfer system on the twin")
    scenario_args(qu)
    qu.add_argument("--out", help="output directory (default runs/qualify-NAME-TIME)")
    qu.add_argument("--freqs", help="test frequencies in Hz, comma-separated (default 0.2 ... 40 Hz, 12 points)")
    qu.add_argument("--amplitudes", help="demand amplitudes in m, comma-separated (default 0.0003,0.0008)")
    qu.add_argument("--random-s", type=float, default=8.0, help="duration of the random-demand test [s]")
    qu.add_argument("--with-coupling", action="store_true", help="keep the scenario's command shaping on (FRF of "
                    "the compensated chain)")
    qu.add_argument("--no-tune", action="store_true", help="skip the in-loop tuning of the TDC model and the "
                    "prediction horizon")
    qu.set_defaults(func=cmd_qualify)
