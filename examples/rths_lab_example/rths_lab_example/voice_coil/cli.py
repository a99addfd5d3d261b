"""``rths voice-coil SCENARIO``: the voice-coil rig's derived numbers, a study verb the lab's package adds to
``rths`` (entry-point group ``rths_ros.verbs``)."""
from __future__ import annotations

import json
import math


def rig_numbers(s) -> dict:
    """The position loop's stiffness, natural frequency and damping ratio against the specimen, its static
    tracking ratio, and the coupled system's resonance with an ideal rig."""
    p = s.numerical.voice_coil
    k_loop = p.k_f_n_per_a * p.kp_a_per_m
    c_loop = p.k_f_n_per_a * p.kd_a_s_per_m
    k = k_loop + p.k_s_n_per_m
    wn = math.sqrt(k / p.m_a_kg)
    return {"scenario": s.name, "loop_stiffness_n_per_m": k_loop,
            "loop_natural_frequency_hz": wn / (2 * math.pi),
            "loop_damping_ratio": (c_loop + p.c_s_kg_per_s) / (2 * p.m_a_kg * wn),
            "static_tracking_ratio": k_loop / k,
            "coupled_resonance_hz": math.sqrt((p.k_n_n_per_m + p.k_s_n_per_m) / p.m_n_kg) / (2 * math.pi)}


def _cmd(a) -> int:
    from rths_ros.app import scenario as scn
    s = scn.load(a.scenario, a.set)
    if s.numerical.family != "voice_coil":
        print(f"rths voice-coil: {s.name} is a scenario of the {s.numerical.family} family, not of the voice-coil "
              "rig", flush=True)
        return 2
    r = rig_numbers(s)
    if a.json:
        print(json.dumps(r, indent=2))
        return 0
    print(f"{s.name}: position loop {r['loop_stiffness_n_per_m']:.4g} N/m, {r['loop_natural_frequency_hz']:.1f} Hz, "
          f"damping ratio {r['loop_damping_ratio']:.2f}; static tracking {r['static_tracking_ratio']:.4f}; coupled "
          f"resonance {r['coupled_resonance_hz']:.2f} Hz")
    return 0


def add_parsers(sub, scenario_args) -> None:
    v = sub.add_parser("voice-coil", help="the voice-coil rig's position loop and coupled resonance (example lab)")
    scenario_args(v)
    v.add_argument("--json", action="store_true", help="print the numbers as JSON")
    v.set_defaults(func=_cmd)
