"""``rths identify`` and ``rths qualify``: identification and qualification of the transfer system (the
platform's legs) on the digital twin or over the platform link (Insam 2022 §4.3.1; docs/identify.md)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from rths_ros.app import scenario as scn
from rths_ros.params import ParameterError


def cmd_identify(a) -> int:
    """Closed-loop identification of the leg models (Insam 2022, §4.3.1) on the twin, over the platform link, on a
    ros2_control rig (position-command excitation, recorded as a bag) or from such a bag."""
    import re

    from rths_ros.core.sysid.legs import LinkRig, TwinNoiseParams, TwinRig, identify, sysid_params
    ros2_control = getattr(a, "ros2_control", False)
    replay = _identify_bag(a) if getattr(a, "bag", None) else None     # (refuses excitation options)
    s = _identify_ros2_control_scenario(a) if ros2_control else scn.load(a.scenario, a.set)
    sp = s.sim_plant
    changes = {}
    if ros2_control:
        changes["amplitude_a"] = a.amplitude_m if a.amplitude_m is not None else ROS2_CONTROL_AMPLITUDE_M
    if a.band_s is not None:
        changes["band_duration_s"] = a.band_s
    if a.spacing_hz is not None:
        changes["spacing_hz"] = a.spacing_hz
    if a.f_max_hz is not None:
        changes["f_max_hz"] = a.f_max_hz
    if getattr(a, "bands", None) is not None:
        changes["n_bands"] = a.bands
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
               "legs": "--legs", "fit_delay": "--fit-delay", "amplitude_a": "--amplitude-m", "n_bands": "--bands"}
    try:                               # ranges, whole periods per band, below Nyquist, lines per band, ...
        if replay is not None:         # the bag's excitation; --legs picks recorded legs, --fit-delay the fit
            params = replay.selected_params(changes)
        else:
            params = sysid_params(s.loop.dt_s, **changes)
        if ros2_control:
            _check_excitation_speed(params, s)
    except ParameterError as exc:      # name the options, not the fields behind them
        msg = re.sub(r"(?<![\w-])(" + "|".join(options) + r")(?!\w)", lambda m: options[m.group(1)], str(exc))
        raise ParameterError(msg) from None
    closers = []
    bag_out = None
    if replay is not None:
        rig = replay
        where = f"recording {replay.path} (position-command excitation over ros2_control)"
    elif ros2_control:
        rig, where, bag_out = _identify_ros2_control_rig(a, s, params, closers)
        if rig is None:
            return 2
    elif a.link is None:
        rig = TwinRig(sp.legs, sp.cascade, TwinNoiseParams(quantisation_m=sp.quantisation_m), s.loop.dt_s, sp.substeps)
        where = "digital twin (in process, noise on)"
    else:
        from rths_ros.app.emulated_rig import open_platform_link
        client, where = open_platform_link(s, a.link, closers)
        rig = LinkRig(client, s.loop.dt_s)
    bands = params.n_bands
    unit = "m rms on the position command" if ros2_control or replay is not None else "A rms"
    print(f"rths identify {s.name}: legs {', '.join(map(str, params.legs))} on the {where}; {bands} bands up to "
          f"{params.f_max_hz:g} Hz, spacing {params.spacing_hz:g} Hz, {params.band_duration_s:g} s per band, "
          f"{params.amplitude_a:g} {unit}")
    t0 = time.monotonic()

    def progress(leg, band, est):
        f = est.freq_hz
        print(f"  leg {leg} band {band + 1:>2}/{bands} [{f[0]:5.1f}, {f[-1]:5.1f}] Hz: min coherence "
              f"{float(est.coherence.min()):.3f}  ({time.monotonic() - t0:6.1f} s)", flush=True)
    try:
        import numpy as np
        with np.errstate(invalid="ignore", divide="ignore"):      # (bands a busy host left out are NaN)
            res = identify(rig, params, progress)
        if bag_out is not None:
            _write_identify_bag(bag_out, s, params, rig)
    except Exception as exc:
        from rths_ros.drivers.platform_link import PlatformLinkError
        if isinstance(exc, PlatformLinkError) or type(exc).__name__ in ("RigError", "RigCommandRefused"):
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
    text = res.to_yaml(base=sp.legs)
    if unit != "A rms":
        text = text.replace(f"{params.amplitude_a:g} A rms", f"{params.amplitude_a:g} {unit}", 1)
    out.write_text(text, encoding="utf-8")
    print(f"-> {out} (sim_plant.legs; merge into a scenario or load with rths_ros.core.sysid.legs.load_plant_config) "
          f"in {time.monotonic() - t0:.1f} s" + (f"; the excitation recorded in {bag_out} (rths identify "
                                                 f"{a.scenario} --bag {bag_out})" if bag_out is not None else ""))
    return 0


# -- identification over ros2_control and from its bag (docs/identify.md) ------------------------------------------
#: default RMS of the multisine added to the position command [m]: the default 10th band (90.5-100 Hz) then moves
#: the leg at up to 0.115 m/s, below the default leg speed limit 0.25 m/s
ROS2_CONTROL_AMPLITUDE_M = 1e-4


def _identify_ros2_control_scenario(a):
    """The scenario as the rig client loads it; the emulator reports the step-mean current as effort (the
    estimator needs the current that moves the leg) unless the settings say otherwise."""
    from rths_ros.runtime.ros2_control_rig import load_rig_scenario
    sets = list(a.set)
    if not any(x.split("=", 1)[0].strip() == "ros2_control.emulator_effort" for x in sets):
        sets.append("ros2_control.emulator_effort=mean")
    return load_rig_scenario(a.scenario, sets)


def _check_excitation_speed(params, s) -> None:
    """Refuse an amplitude whose multisine would move a leg faster than the leg speed limit (before anything
    moves; the rig client would refuse the band itself mid-run)."""
    import numpy as np

    from rths_ros.core.sysid.legs import segmented_multisine
    vmax = s.platform.geometry.leg_velocity_max_m_per_s
    for i, band in enumerate(segmented_multisine(params, s.loop.dt_s)):
        per = band.period
        v = float(np.max(np.abs(np.diff(np.concatenate([per, per[:1]]))))) / s.loop.dt_s
        if v > 0.9 * vmax:
            raise ParameterError(f"--amplitude-m: {params.amplitude_a!r} is not allowed; band {i + 1} "
                                 f"([{band.freq_hz[0]:g}, {band.freq_hz[-1]:g}] Hz) would move the leg at {v:.3f} m/s, "
                                 f"above 90 % of the leg speed limit {vmax:g} m/s "
                                 f"(platform.geometry.leg_velocity_max_m_per_s); expected at most "
                                 f"{params.amplitude_a * 0.9 * vmax / v:.3g} m")


def _identify_ros2_control_rig(a, s, params, closers):
    """The rig client and the position-command excitation on it; the bag directory next to --out."""
    from rths_ros.runtime.ros2_control_rig import Ros2ControlRig
    from rths_ros.runtime.ros2_control_sysid import PositionExcitationRig
    out = Path(a.out)
    bag_out = Path(a.bag_out) if getattr(a, "bag_out", None) else out.parent / f"{out.stem}_bag"
    if bag_out.exists():
        print(f"rths identify: error: --bag-out {str(bag_out)!r} exists; remove it or choose another --bag-out "
              "(or --out)", file=sys.stderr)
        return None, "", None
    rig = Ros2ControlRig(s)
    rig.start()
    closers.append(rig)
    rig.wait_ready()
    rc = s.ros2_control
    where = (f"ros2_control rig ({rc.command_topic} -> {rc.joint_state_topic}"
             + (", emulated" if rc.emulate else f", ROS domain {rig.domain_id}") + "; position-command excitation)")
    return PositionExcitationRig(rig, params), where, bag_out


def _write_identify_bag(path, s, params, excitation) -> None:
    from rths_ros.runtime.ros2_control_sysid import write_excitation_bag
    path.parent.mkdir(parents=True, exist_ok=True)
    write_excitation_bag(path, s, params, excitation, scn.dump(s))


def _identify_bag(a):
    """The replay rig of ``--bag``; excitation options are the bag's and refused here."""
    from rths_ros.runtime.ros2_control_sysid import BagExcitationReplay
    given = [o for o, v in (("--band-s", a.band_s), ("--spacing-hz", a.spacing_hz), ("--f-max-hz", a.f_max_hz),
                            ("--amplitude-m", a.amplitude_m), ("--bands", a.bands)) if v is not None]
    if given:
        raise ParameterError(f"{given[0]}: not allowed with --bag (the excitation is the recorded one)")
    try:
        return BagExcitationReplay(a.bag)
    except FileNotFoundError as exc:
        raise ParameterError(f"--bag: {exc}") from None


def _floats(text: str, what: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise ParameterError(f"{what}: {text!r} is not a comma-separated list of numbers") from None
    if not vals:
        raise ParameterError(f"{what}: {text!r} is empty")
    return vals


#: the record kind of a qualification session on a rig (rths_ros.runtime.rig_record)
QUALIFY_KIND = "rths qualify --ros2-control"


def cmd_qualify(a) -> int:
    """Stepped sine, Welch PSD and process-model fits of the transfer system (docs/methods.md §6) on the twin, or on a
    ros2_control rig (``--ros2-control``: the leg commands of the demand streamed to the rig, its joint states
    read back; the emulator in process with ``ros2_control.emulate=true``)."""
    from dataclasses import replace

    from rths_ros.analysis.twin_qualification import qualify
    from rths_ros.core.sysid.qualification import SteppedSineParams
    ros2_control = getattr(a, "ros2_control", False)
    replay = getattr(a, "bag", None)
    if replay is not None and ros2_control:
        raise ParameterError("--bag: not allowed with --ros2-control (the bag replaces the rig)")
    if ros2_control or replay is not None:
        from rths_ros.runtime.ros2_control_rig import load_rig_scenario
        s = load_rig_scenario(a.scenario, a.set)        # plant ros2_control, realtime
    else:
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
    if replay is not None:
        from rths_ros.analysis.twin_qualification import rig_interface_plant, without_coupling
        from rths_ros.runtime.rig_record import ReplayRig
        try:
            rig = ReplayRig(replay, QUALIFY_KIND)
        except (OSError, ValueError) as exc:
            raise ParameterError(f"--bag: {exc}") from None
        where, play = f"ros2_control rig recorded in {rig.path}", {}
        plant = rig_interface_plant(s if a.with_coupling else without_coupling(s), rig)
        try:
            r = qualify(s, sine, out, with_coupling=a.with_coupling, random_duration_s=a.random_s, tune=False,
                        plant=plant, where=where)
        except ValueError as exc:
            print(f"rths qualify: error: {exc}", file=sys.stderr)
            return 1
    elif ros2_control:
        from rths_ros.analysis.twin_qualification import rig_interface_plant, without_coupling
        from rths_ros.runtime.rig_record import RecordingRig
        from rths_ros.runtime.ros2_control_rig import Ros2ControlRig
        where = ("emulated " if s.ros2_control.emulate else "") + "ros2_control rig"
        if not a.no_tune:
            print("rths qualify: the in-loop tuning runs the twin's virtual run, not the rig: skipped with "
                  "--ros2-control (run `rths qualify` on the twin for it)")
        from rths_ros.runtime.ros2_control_rig import RigError
        try:
            with Ros2ControlRig(s) as rig:
                rig.wait_ready()
                recording = RecordingRig(rig, QUALIFY_KIND)
                plant = rig_interface_plant(s if a.with_coupling else without_coupling(s), recording)
                r = qualify(s, sine, out, with_coupling=a.with_coupling, random_duration_s=a.random_s, tune=False,
                            plant=plant, where=where)
                play = dict(rig.last_play, **rig.emulator_summary())
            bag_out = recording.write_bag(out / "rig_bag", s, scn.dump(s))
            print(f"rths qualify: the session on the rig -> {bag_out} (again without the rig: rths qualify "
                  f"{a.scenario} --bag {bag_out} with the same options)")
        except RigError as exc:           # no joint state, a refused command: nothing more was sent
            print(f"rths qualify: error: {exc}", file=sys.stderr)
            return 1
    else:
        where, play = "twin", {}
        r = qualify(s, sine, out, with_coupling=a.with_coupling, random_duration_s=a.random_s, tune=not a.no_tune)
    f = r.frf.frequencies_hz
    print(f"rths qualify {s.name}: interface FRF of the {'compensated chain' if a.with_coupling else 'transfer system'}"
          f" on the {where} ({f.shape[1]} frequencies x {f.shape[0]} amplitudes)")
    if play:
        print("  rig: " + ", ".join(f"{k} {v}" for k, v in play.items()) + " (last test)")
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
    idf = sub.add_parser("identify", help="closed-loop identification of the leg models (Insam 2022 Table 4.1)")
    scenario_args(idf)
    rig = idf.add_mutually_exclusive_group()
    rig.add_argument("--twin", action="store_true", help="identify the digital twin's legs in process (default)")
    rig.add_argument("--link", nargs="?", const="", default=None, metavar="HOST:PORT",
                     help="identify over the platform link; without HOST:PORT the scenario's hardware.platform_link "
                          "address, or the in-process emulator when hardware.emulate is true")
    rig.add_argument("--ros2-control", action="store_true",
                     help="identify the scenario's ros2_control rig (ros2_control.emulate: the emulator in process) "
                          "with the multisine added to the position command; records the excitation as a bag")
    rig.add_argument("--bag", metavar="RUN_OR_BAG_DIR", help="identify from the bag an --ros2-control "
                     "identification recorded")
    idf.add_argument("--out", default="legs.yaml", help="YAML with the identified sim_plant.legs (default legs.yaml)")
    idf.add_argument("--bag-out", metavar="DIR", help="--ros2-control: the bag of the excitation (default: next to "
                     "--out, named after it: legs_bag)")
    idf.add_argument("--amplitude-m", type=float, default=None, metavar="M",
                     help="--ros2-control: RMS of the multisine added to the position command (default 0.0001 m)")
    idf.add_argument("--band-s", type=float, default=None, metavar="SECONDS",
                     help="excitation time per band (default 200 s, the thesis's)")
    idf.add_argument("--legs", default="", metavar="1,2,...", help="legs to identify (default all six)")
    idf.add_argument("--spacing-hz", type=float, default=None, metavar="HZ",
                     help="multisine line spacing = 1 / period (default 0.5 Hz, the thesis's); 1/(spacing dt) must be "
                          "a whole number of samples")
    idf.add_argument("--f-max-hz", type=float, default=None, metavar="HZ",
                     help="highest excited line (default 100 Hz, the thesis's); a whole multiple of the spacing, "
                          "below the Nyquist frequency, at least one line per band (10 bands)")
    idf.add_argument("--bands", type=int, default=None, metavar="N",
                     help="number of bands the lines are split into (default 10, the thesis's)")
    idf.add_argument("--fit-delay", action="store_true",
                     help="also fit a pure delay e^(-s tau) per leg (printed and written as a comment; the twin "
                          "models none)")
    idf.set_defaults(func=cmd_identify)
    qu = sub.add_parser("qualify", help="stepped sine, PSD and process models of the transfer system on the twin "
                        "or a ros2_control rig")
    scenario_args(qu)
    qu.add_argument("--ros2-control", action="store_true", help="qualify the ros2_control rig (plant = "
                    "ros2_control, realtime; with --set ros2_control.emulate=true its emulator in process)")
    qu.add_argument("--bag", metavar="RUN_OR_BAG_DIR", help="qualify again from the bag a `qualify --ros2-control` "
                    "wrote (same settings: the recorded session is replayed, no rig needed)")
    qu.add_argument("--out", help="output directory (default runs/qualify-NAME-TIME)")
    qu.add_argument("--freqs", help="test frequencies in Hz, comma-separated (default 0.2 ... 40 Hz, 12 points)")
    qu.add_argument("--amplitudes", help="demand amplitudes in m, comma-separated (default 0.0003,0.0008)")
    qu.add_argument("--random-s", type=float, default=8.0, help="duration of the random-demand test [s]")
    qu.add_argument("--with-coupling", action="store_true", help="keep the scenario's command shaping on (FRF of "
                    "the compensated chain)")
    qu.add_argument("--no-tune", action="store_true", help="skip the in-loop tuning of the TDC model and the "
                    "prediction horizon")
    qu.set_defaults(func=cmd_qualify)
