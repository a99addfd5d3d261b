"""Families and models are plugins (rths_ros.families.registry): the example lab package registers a model and a
family from outside, a broken plugin is named and the rest still work, rths_ros never names the lab's additions,
and a scenario carries only the sections of its family and model."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from rths_ros.app import scenario as scn
from rths_ros.families import registry
from rths_ros.params import ParameterError

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "examples" / "rths_lab_example"
#: what the example lab package adds; none of it may be named anywhere in rths_ros
LAB_NAMES = ("rths_lab_example", "rths-lab-example", "voice_coil", "two_mass_contact", "lab_voice_coil",
             "lab_two_mass_contact", "VoiceCoil", "TwoMass")


def test_the_lab_package_registers_a_model_and_a_family_from_outside():
    assert registry.origin("voice_coil") == registry.origin("voice_coil_msd") == "rths-lab-example"
    assert registry.origin("two_mass_contact") == "rths-lab-example"
    assert registry.model("two_mass_contact").family == "interface_1d"      # a model of a shipped family
    assert registry.family("voice_coil").models.keys() == {"voice_coil_msd"}
    assert all(registry.origin(f) == "rths_ros" for f in ("interface_1d", "gait", "building", "linear_motor",
                                                           "damper_rig", "shaker_pair"))
    assert registry.load_errors() == []
    assert {"lab_voice_coil", "lab_two_mass_contact"} <= set(scn.scenario_names())
    assert "lab_voice_coil" not in scn.scenario_names(plugins=False)


def test_no_file_of_rths_ros_names_the_lab_package_its_model_or_its_family():
    files = subprocess.run(["git", "ls-files", "rths_ros", "config", "launch", "msg", "setup.py", "CMakeLists.txt",
                            "package.xml", "entry_points.txt", ".importlinter"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    assert files
    hits = [f"{f}:{n}" for f in files if (ROOT / f).is_file() and not f.endswith((".png", ".pyc"))
            for n, line in enumerate((ROOT / f).read_text(errors="replace").splitlines(), 1)
            if any(name in line for name in LAB_NAMES)]
    assert hits == []


def test_a_broken_plugin_is_named_with_its_error_and_the_rest_still_work(tmp_path):
    """Three broken registrations in a distribution of their own on the path: a family whose module does not
    import, a model of an unknown family, and a family that is not a Family object."""
    dist = tmp_path / "broken_lab-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-lab\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent("""\
        [rths_ros.families]
        missing = broken_lab_missing_module:FAMILY
        wrong = os:path
        [rths_ros.models]
        orphan = rths_lab_example.two_mass:MODEL_OF_NOTHING
        """))
    code = ("from rths_ros.families import registry\n"
            "print('FAMILIES', sorted(registry.families()))\n"
            "for e in registry.load_errors(): print('ERROR', e)\n"
            "from rths_ros.app import scenario as scn\n"
            "print('LOADS', scn.load('contact_1d').numerical.family)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "'interface_1d'" in out and "'voice_coil'" in out and "LOADS interface_1d" in out
    errors = [line for line in out.splitlines() if line.startswith("ERROR")]
    assert any("missing = broken_lab_missing_module:FAMILY (from broken-lab) failed to load: "
               "ModuleNotFoundError" in e for e in errors), errors
    assert any("wrong = os:path" in e and "not a rths_ros.families.Family" in e for e in errors), errors
    assert any("orphan" in e and "AttributeError" in e for e in errors), errors
    assert "rths_ros: family plugin missing" in p.stderr          # said once on standard error, too


def test_a_key_of_another_family_is_refused_naming_the_owner():
    with pytest.raises(ParameterError, match=r"numerical\.cubic_spring: not allowed with numerical\.model = "
                                             r"'contact_1d' .* belongs to model cubic_spring of family linear_motor"):
        scn.load("contact_1d", ["numerical.cubic_spring.seed=3"])
    with pytest.raises(ParameterError, match=r"numerical\.vpp: .* belongs to family gait"):
        scn.load("lab_voice_coil", ["numerical.vpp.m_kg=70"])


@pytest.mark.parametrize("name", ["contact_1d", "gait_vpp", "benchmark_building", "cubic_spring_pbc",
                                  "coupled_beams_aff", "lab_voice_coil", "lab_two_mass_contact"])
def test_a_scenario_carries_only_its_family_and_model_sections_and_reads_back(name):
    s = scn.load(name)
    num = scn.to_dict(s)["numerical"]
    assert set(num) == {"model"} | set(scn.numerical_sections(s.numerical.model))
    others = {sec for f, fam in registry.families().items() if f != s.numerical.family for sec in fam.sections}
    assert not set(num) & others
    assert scn.from_data(yaml.safe_load(scn.dump(s))) == s
    assert scn.parameter_count(s) < len(scn.parameter_table())


def test_rths_check_reports_the_family_and_the_parameter_count():
    p = subprocess.run([sys.executable, "-m", "rths_ros.cli", "check", "contact_1d"], capture_output=True,
                       text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    count = scn.parameter_count(scn.load("contact_1d"))
    assert f"family interface_1d), {count} parameters" in p.stderr
    assert "cubic_spring" not in p.stdout and "dubois_damper" not in p.stdout and "vpp:" not in p.stdout


def test_the_lab_chain_rests_under_its_own_weight_and_steps_exactly():
    """The example's 2-DoF chain: at rest with F_int = m_EXP g and no suspension motion it stays at rest; one step
    from a moving state equals the ODE integrated with the inputs held (scipy's DOP853)."""
    from rths_lab_example.two_mass import TwoMassChain, TwoMassParams
    from scipy.integrate import solve_ivp
    s = scn.load("lab_two_mass_contact", ["numerical.contact_1d.h0_m=0", "numerical.contact_1d.dz_max_m=0"])
    c, p = s.numerical.contact_1d, TwoMassParams()
    chain = TwoMassChain(p, c, 1e-3)
    for _ in range(500):
        z, v = chain.step(c.m_exp_kg * c.g_m_per_s2)
    assert abs(z) < 1e-15 and abs(v) < 1e-15
    chain.x[:] = [1e-3, -2e-3, 0.05, -0.02]
    x0, f = chain.x.copy(), 7.0

    def rhs(_, x):
        z1, z2, v1, v2 = x
        a1 = (p.k1_n_per_m * -z1 + p.d1_kg_per_s * -v1 - p.k2_n_per_m * (z1 - z2) - p.d2_kg_per_s * (v1 - v2)) / p.m1_kg
        a2 = (p.k2_n_per_m * (z1 - z2) + p.d2_kg_per_s * (v1 - v2) + c.m_exp_kg * c.g_m_per_s2 - f) / p.m2_kg
        return [v1, v2, a1, a2]
    chain.k = 0                                   # z_d(0) = z_d'(0) = 0 (held over the step)
    z, v = chain.step(f)
    ref = solve_ivp(rhs, (0.0, 1e-3), x0, method="DOP853", rtol=1e-12, atol=1e-15).y[:, -1]
    assert z == pytest.approx(ref[1], abs=1e-12) and v == pytest.approx(ref[3], abs=1e-10)


def test_the_lab_voice_coil_twin_settles_at_its_static_equilibrium():
    """Position control against the specimen spring: the rod settles where K_f K_p (x_d - x) = k_s x."""
    from rths_lab_example.voice_coil.rig import VoiceCoilTwin
    s = scn.load("lab_voice_coil", ["numerical.voice_coil.force_noise_std_n=0"])
    p = s.numerical.voice_coil
    twin = VoiceCoilTwin(p, s.loop.dt_s)
    twin.reset(0)
    for _ in range(500):
        out = twin.step([1e-3])
    k = p.k_f_n_per_a * p.kp_a_per_m
    assert out.lengths[0] == pytest.approx(k * 1e-3 / (k + p.k_s_n_per_m), rel=1e-6)
    assert out.wrench[0] == pytest.approx(p.k_s_n_per_m * out.lengths[0], rel=1e-6)


def test_a_scenario_extends_another_file(tmp_path):
    """A lab's rig file shared by its tests: `extends:` starts from another scenario (a name or a path relative to
    the file), the file's own keys laid over it section by section; a cycle and a missing base are refused."""
    rig = tmp_path / "rig.yaml"
    rig.write_text("extends: lab_voice_coil\nnumerical:\n  voice_coil: {k_s_n_per_m: 6000.0}\n")
    test = tmp_path / "tests" / "stiff.yaml"
    test.parent.mkdir()
    test.write_text("extends: ../rig.yaml\ndescription: stiffer specimen, 4 Hz\n"
                    "numerical:\n  voice_coil: {drive_frequency_hz: 4.0}\n")
    s = scn.load(str(test))
    base = scn.load("lab_voice_coil")
    assert s.name == "stiff" and s.description == "stiffer specimen, 4 Hz"
    assert s.numerical.voice_coil.k_s_n_per_m == 6000.0 and s.numerical.voice_coil.drive_frequency_hz == 4.0
    assert s.numerical.voice_coil.drive_amplitude_n == base.numerical.voice_coil.drive_amplitude_n
    assert s.safety.interface_limit_m == base.safety.interface_limit_m and s.loop == base.loop
    rig.write_text("extends: tests/stiff.yaml\n")
    with pytest.raises(ParameterError, match="the scenarios extend each other"):
        scn.load(str(test))
    rig.write_text("extends: no_such_scenario\n")
    with pytest.raises(ParameterError, match=r"extends: 'no_such_scenario' in .*rig.yaml"):
        scn.load(str(test))
