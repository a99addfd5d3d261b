"""Digital twin of the 1-D contact test (Insam 2022 §4.2-4.3): legs, specimen, simulated plant."""
import numpy as np
import pytest

from rths_ros.core.plant.legs import CASCADE_PRESETS, LegCascade, LegCascadeParams, LegPlantParams, closed_loop_frf
from rths_ros.core.plant.sim_plant import SimPlant, SimPlantParams
from rths_ros.core.plant.specimen import Specimen1D, Specimen1DParams
from rths_ros.core.platform.interface import InterfaceMap
from rths_ros.core.platform.stewart import StewartKinematics
from rths_ros.params import ParameterError, build

DT = 1e-3
M_EXP, K_EXP, H0, G = 0.38, 8650.0, 0.01, 9.81
WEIGHT = M_EXP * G

# : closed loop of leg 2 at 5 Hz (|T|, phase lag in ms)
LEG2_5HZ = {
    ("PPI1", False): (0.485, None),
    ("PPI1", True): (0.903, None),
    ("PPI2", False): (0.909, None),
    ("PPI2", True): (1.07, 3.5),
}


# ------------------------------------------------------------------------------------------- legs

def test_table_a1_presets_and_table_4_1_defaults():
    assert LegCascadeParams.PPI1().gains == (20.0, 0.2, 1.0)
    assert LegCascadeParams.PPI2().gains == (50.0, 0.2, 5.0)
    assert build(LegCascadeParams, {"preset": "PPI2"}).gains == CASCADE_PRESETS["PPI2"]
    assert build(LegCascadeParams, {"preset": "custom", "k_pp_per_s": 35.0}).gains == (35.0, 0.2, 1.0)
    with pytest.raises(ParameterError, match="k_pp_per_s"):
        build(LegCascadeParams, {"preset": "PPI2", "k_pp_per_s": 35.0})
    legs = LegPlantParams()
    assert legs.gain_num == (1011.0, 1053.1, 1123.5, 780.9, 988.1, 1070.9)
    assert legs.omega_c_rad_per_s == (122.9, 55.5, 54.7, 55.3, 66.2, 59.0)


@pytest.mark.parametrize("preset,vff", list(LEG2_5HZ))
def test_analytic_closed_loop_matches_the_thesis_leg_model(preset, vff):
    mag, _ = LEG2_5HZ[(preset, vff)]
    t = closed_loop_frf(5.0, 1, cascade=LegCascadeParams(preset=preset), vff=vff)
    assert abs(t) == pytest.approx(mag, abs=0.005)


def test_analytic_low_frequency_lag():
    # Insam 2022 §2.3: PPI1 feedback only lag ~ 1/K_Pp = 50 ms; with VFF ~1.4 ms at 0.25 Hz
    w = 2 * np.pi * 0.25
    t_fb = closed_loop_frf(0.25, 1, cascade=LegCascadeParams.PPI1())
    t_vff = closed_loop_frf(0.25, 1, cascade=LegCascadeParams.PPI1(), vff=True)
    assert -np.angle(t_fb) / w == pytest.approx(0.050, rel=0.05)
    assert -np.angle(t_vff) / w == pytest.approx(0.0014, rel=0.05)


def _sine_response(cascade, vff, f_hz=5.0, amp=1e-3, t_end=2.6, t_fit=2.0):
    """Simulated sine test of all six legs; returns complex gains B'/B (6,)."""
    legs = LegCascade(LegPlantParams(), cascade, DT, substeps=10)
    b0 = np.full(6, 0.7)
    legs.reset(b0)
    n = int(round(t_end / DT))
    w = 2 * np.pi * f_hz
    y = np.empty((n, 6))
    for k in range(n):
        tm = (k + 0.5) * DT            # command held over [t_k, t_k+1]: sample at the midpoint
        legs.step(b0 + amp * np.sin(w * tm), np.full(6, amp * w * np.cos(w * tm) if vff else 0.0))
        y[k] = legs.length - b0
    t = (np.arange(n) + 1) * DT
    sel = t >= t_fit
    basis = np.column_stack([np.sin(w * t[sel]), np.cos(w * t[sel])])
    coef, *_ = np.linalg.lstsq(basis, y[sel], rcond=None)
    return (coef[0] + 1j * coef[1]) / amp


@pytest.mark.parametrize("preset,vff", list(LEG2_5HZ))
def test_simulated_sine_test_matches_closed_loop(preset, vff):
    cascade = LegCascadeParams(preset=preset)
    gains = _sine_response(cascade, vff)
    mag, lag_ms = LEG2_5HZ[(preset, vff)]
    assert abs(gains[1]) == pytest.approx(mag, abs=0.01)          # leg 2, the thesis's number
    if lag_ms is not None:
        assert -np.angle(gains[1]) / (2 * np.pi * 5.0) * 1e3 == pytest.approx(lag_ms, abs=0.2)
    for leg in range(6):                                           # every leg vs its continuous closed loop
        ref = closed_loop_frf(5.0, leg, cascade=cascade, vff=vff)
        assert abs(gains[leg] - ref) < 0.01 * abs(ref)


def test_legs_track_a_constant_command_without_steady_state_error():
    legs = LegCascade(dt_s=DT)
    legs.reset(np.full(6, 0.7))
    for _ in range(3000):
        legs.step(np.full(6, 0.701), np.zeros(6))
    np.testing.assert_allclose(legs.length, 0.701, atol=1e-9)
    np.testing.assert_allclose(legs.velocity, 0.0, atol=1e-8)
    np.testing.assert_allclose(legs.current, 0.0, atol=1e-6)   # no load in the identified model


# --------------------------------------------------------------------------------------- specimen

def _drive(spec, p_traj):
    f, u, c = [], [], []
    for a, b in zip(p_traj[:-1], p_traj[1:]):
        f.append(spec.step(a, b))
        u.append(spec.position)
        c.append(spec.in_contact)
    return np.array(f), np.array(u), np.array(c)


@pytest.mark.parametrize("model", ["penalty", "cor", "sticky", "quasi_static"])
def test_specimen_rest_and_static_contact_force(model):
    spec = Specimen1D(Specimen1DParams(contact_model=model, restitution=0.73 if model == "cor" else 0.0), DT)
    f, u, c = _drive(spec, np.zeros(200))
    assert np.all(f == -WEIGHT) and np.all(u == 0.0) and not c.any()
    p_hold = H0 + 0.002
    traj = np.concatenate([np.linspace(0.0, p_hold, 601), np.full(400, p_hold)])
    f, u, c = _drive(spec, traj)
    n_static = K_EXP * (p_hold - H0)
    np.testing.assert_allclose(f[-100:], -(WEIGHT + n_static), rtol=1e-5)
    assert c[-100:].all()
    assert spec.contact_force == pytest.approx(n_static, rel=1e-4)


def test_penalty_needs_enough_substeps():
    with pytest.raises(ParameterError, match="substeps"):
        Specimen1D(Specimen1DParams(substeps=20), DT)


def test_specimen_reset_to_static_contact():
    spec = Specimen1D(Specimen1DParams(contact_model="cor"), DT)
    spec.reset(H0 + 1e-3)
    assert spec.in_contact and spec.contact_force == pytest.approx(K_EXP * 1e-3)
    for _ in range(50):
        assert spec.step(H0 + 1e-3, H0 + 1e-3) == pytest.approx(-(WEIGHT + K_EXP * 1e-3))
    assert spec.position == H0


P_JUMP = H0 + 3e-4


def _impact_speed_ratios(model, restitution, n=3):
    """The mass rests 0.2 mm below the plate; the platform jumps up by 0.5 mm so the mass swings into the
    plate (impact speed about w * 0.4 mm = 0.06 m/s).  Returns the ratios rebound / impact speed of the
    first ``n`` impacts, taken from the last free sample before and the first free sample after each
    contact episode on a 10 us grid."""
    dt = 1e-5
    spec = Specimen1D(Specimen1DParams(contact_model=model, restitution=restitution, substeps=10), dt)
    spec.reset(H0 - 2e-4)
    spec.step(H0 - 2e-4, P_JUMP)
    v_in = None
    ratios = []
    for _ in range(20000):
        spec.step(P_JUMP, P_JUMP)
        u, v = spec.position, spec.velocity
        if u < H0 and not spec.in_contact:
            if v > 0.0:
                v_in = v
            elif v < 0.0 and v_in is not None:
                ratios.append(-v / v_in)
                v_in = None
        elif u == H0 and v == 0.0 and v_in is not None:      # came to rest on the plate
            ratios.append(0.0)
            v_in = None
        if len(ratios) >= n:
            break
    return np.array(ratios), spec


def test_cor_bounce_follows_restitution_then_rests():
    ratios, spec = _impact_speed_ratios("cor", 0.73)
    np.testing.assert_allclose(ratios, 0.73, rtol=0.01)
    for _ in range(20000):   # the bounce sequence ends: the spring pushes the mass onto the plate
        spec.step(P_JUMP, P_JUMP)
    assert spec.in_contact and spec.position == H0 and spec.velocity == 0.0
    assert spec.sensor_force == pytest.approx(-(WEIGHT + K_EXP * (P_JUMP - H0)))


@pytest.mark.parametrize("model,restitution", [("cor", 0.0), ("sticky", 0.73)])
def test_plastic_impact_sticks_at_once(model, restitution):
    ratios, spec = _impact_speed_ratios(model, restitution, n=1)
    assert ratios[0] == 0.0
    assert spec.in_contact
    for _ in range(100):
        spec.step(P_JUMP, P_JUMP)
        assert spec.position == H0 and spec.in_contact


def test_penalty_contact_is_stable_and_dissipative():
    # 1e9 N/m on 0.38 kg: the d_g = 500 kg/s damper (zeta = 0.0128) gives an effective restitution of
    # about exp(-pi zeta) = 0.96; the exact sub-step maps must neither blow up nor inject energy
    ratios, spec = _impact_speed_ratios("penalty", 0.0, n=3)
    assert np.all((ratios > 0.9) & (ratios < 0.99))
    for _ in range(50000):
        spec.step(P_JUMP, P_JUMP)
    assert spec.in_contact
    assert spec.sensor_force == pytest.approx(-(WEIGHT + K_EXP * (P_JUMP - H0)), abs=0.05)


# ---------------------------------------------------------------------------------------- sim plant

@pytest.fixture(scope="module")
def kin():
    return StewartKinematics()


@pytest.fixture(scope="module")
def imap(kin):
    return InterfaceMap(None, kin)


def _plant(kin, imap, **kw):
    return SimPlant(build(SimPlantParams, kw), kin, imap, DT)


def test_plant_at_rest_stays_at_rest(kin, imap):
    plant = _plant(kin, imap, force_noise_std_n=0.0)
    home = kin.home_lengths
    out = plant.measure()
    assert out.step == 0
    for _ in range(300):
        out = plant.step(home, np.zeros(6))
    assert out.step == 300
    np.testing.assert_array_equal(out.lengths, home)
    np.testing.assert_array_equal(out.velocities, 0.0)
    np.testing.assert_array_equal(out.wrench, [0.0, 0.0, -WEIGHT, 0.0, 0.0, 0.0])
    assert out.platform_z_m == 0.0 and not out.in_contact


def test_quantisation_of_measured_lengths(kin, imap):
    q = 2.4e-6
    plant = _plant(kin, imap, force_noise_std_n=0.0)
    exact = _plant(kin, imap, force_noise_std_n=0.0, quantisation_m=0.0)
    home = kin.home_lengths
    cmd = home + np.array([3.7e-6, -5.0e-6, 1.1e-6, 12.3e-6, 0.0, -0.4e-6])
    for _ in range(2000):
        out = plant.step(cmd, np.zeros(6))
        out_exact = exact.step(cmd, np.zeros(6))
    np.testing.assert_array_equal(out_exact.lengths, out_exact.true_lengths)
    steps = (out.lengths - home) / q
    np.testing.assert_allclose(steps, np.round(steps), atol=1e-6)
    assert np.all(np.abs(out.lengths - out.true_lengths) <= q / 2 + 1e-12)
    np.testing.assert_allclose(out.true_lengths, cmd, atol=1e-9)
    np.testing.assert_allclose(out.lengths, home + q * np.round((cmd - home) / q), atol=1e-12)


def _z_ramp_commands(imap, z_end=-0.012, n_ramp=1500, n_hold=700):
    zs = np.concatenate([z_end * np.linspace(0.0, 1.0, n_ramp), np.full(n_hold, z_end)])
    return [imap.leg_commands(np.array([z]), np.array([0.0]))[0] for z in zs]


def test_command_delay_shifts_the_response(kin, imap):
    cmds = _z_ramp_commands(imap, z_end=-0.005, n_ramp=200, n_hold=50)
    d = 3
    p0 = _plant(kin, imap, force_noise_std_n=0.0)
    pd = _plant(kin, imap, force_noise_std_n=0.0, command_delay_steps=d)
    a = np.array([p0.step(c, np.zeros(6)).true_lengths for c in cmds])
    b = np.array([pd.step(c, np.zeros(6)).true_lengths for c in cmds])
    np.testing.assert_allclose(b[:d], kin.home_lengths[None, :].repeat(d, 0), atol=0)
    np.testing.assert_allclose(b[d:], a[:-d], atol=1e-15)


def test_noise_bias_and_determinism(kin, imap):
    bias = [0.1, -0.2, 0.3, 0.01, -0.02, 0.03]
    home = kin.home_lengths

    def run(seed):
        plant = _plant(kin, imap, noise_seed=seed, force_bias=bias)
        return np.array([plant.step(home, np.zeros(6)).wrench for _ in range(3000)])

    w1, w2, w3 = run(7), run(7), run(8)
    np.testing.assert_array_equal(w1, w2)
    assert not np.array_equal(w1, w3)
    nominal = np.array([0.0, 0.0, -WEIGHT, 0.0, 0.0, 0.0]) + bias
    np.testing.assert_allclose(w1.mean(axis=0), nominal, atol=0.002)
    np.testing.assert_allclose(w1[:, :3].std(axis=0), 0.02, rtol=0.1)
    np.testing.assert_array_equal(w1[:, 3:], np.broadcast_to(bias[3:], (3000, 3)))   # no moment noise
    # reset restarts the noise sequence
    plant = _plant(kin, imap, noise_seed=7, force_bias=bias)
    first = [plant.step(home, np.zeros(6)).wrench for _ in range(5)]
    plant.reset()
    again = [plant.step(home, np.zeros(6)).wrench for _ in range(5)]
    np.testing.assert_array_equal(first, again)


@pytest.mark.parametrize("model", ["penalty", "cor", "sticky"])
def test_plant_contact_force_when_platform_pushed_beyond_h0(kin, imap, model):
    plant = _plant(kin, imap, cascade={"preset": "PPI1"}, specimen={"contact_model": model})
    outs = [plant.step(c, np.zeros(6)) for c in _z_ramp_commands(imap)]
    fz = np.array([o.wrench[2] for o in outs])
    pz = np.array([o.platform_z_m for o in outs])
    contact = np.array([o.in_contact for o in outs])
    assert not contact[pz < H0 - 1e-4].any() and contact[-300:].all()
    hold = slice(-300, None)
    assert pz[hold].mean() == pytest.approx(0.012, abs=1e-4)
    expected = -(WEIGHT + K_EXP * (pz[hold] - H0))
    assert np.mean(fz[hold] - expected) == pytest.approx(0.0, abs=0.005)    # 0.02 N noise / sqrt(300)
    assert np.std(fz[hold] - expected) == pytest.approx(0.02, rel=0.25)
    # in flight the sensor sees the weight (plus the small inertia forces of the mass)
    flight = pz < H0 - 1e-3
    assert np.abs(fz[flight] + WEIGHT).max() < 0.2


def test_true_velocity_option_and_difference_quotient(kin, imap):
    cmds = _z_ramp_commands(imap, z_end=-0.004, n_ramp=400, n_hold=10)
    pd = _plant(kin, imap, force_noise_std_n=0.0, quantisation_m=0.0)
    pt = _plant(kin, imap, force_noise_std_n=0.0, quantisation_m=0.0, velocity_estimate="true")
    prev = pd.measure().lengths
    for c in cmds:
        od = pd.step(c, np.zeros(6))
        ot = pt.step(c, np.zeros(6))
        np.testing.assert_allclose(od.velocities, (od.lengths - prev) / DT, rtol=1e-12, atol=1e-15)
        prev = od.lengths
    # near-constant speed at the end of the ramp: the two estimates agree closely
    np.testing.assert_allclose(od.velocities, ot.velocities, atol=2e-4)


def test_sim_plant_parameter_ranges():
    with pytest.raises(ParameterError, match="substeps"):
        build(SimPlantParams, {"substeps": 5})
    with pytest.raises(ParameterError, match="velocity_estimate"):
        build(SimPlantParams, {"velocity_estimate": "kalman"})
    with pytest.raises(ParameterError, match="specimen.contact_model"):
        build(SimPlantParams, {"specimen": {"contact_model": "hertz"}})


def test_the_discrete_maps_computed_once_are_the_same_numbers_and_each_caller_gets_its_own_copy():
    """The legs' and the specimen's matrix exponentials are computed once per process for the same numbers
    (``_step_map``, ``_mode_map``): a second construction gets equal maps bit for bit, in arrays of its own, and other
    numbers give other maps."""
    from rths_ros.core.plant.legs import _step_map, _step_map_cached
    from rths_ros.core.plant.specimen import _mode_map, _mode_map_cached
    args = (1011.0, 122.9, 50.0, 0.2, 5.0, 1e-3, 10)
    _step_map_cached.cache_clear()
    first = _step_map(*args)
    first[0][0, 0] = 99.0                               # a caller writing into its maps changes no one else's
    second = _step_map(*args)
    assert _step_map_cached.cache_info().hits == 1
    _step_map_cached.cache_clear()
    fresh = _step_map(*args)                            # computed again from nothing
    for a, b in zip(second, fresh):
        assert np.array_equal(a, b) and a is not b and a.flags.writeable
    assert not np.array_equal(_step_map(1011.0, 122.9, 20.0, 0.2, 1.0, 1e-3, 10)[0], fresh[0])
    margs = (2.0e4, 1.2, 0.002, 1e6, 50.0, 1e-4)
    _mode_map_cached.cache_clear()
    m1 = _mode_map(*margs, contact=True)
    m1[0, 0] = 99.0
    m2 = _mode_map(*margs, contact=True)
    _mode_map_cached.cache_clear()
    assert np.array_equal(m2, _mode_map(*margs, contact=True)) and m2.flags.c_contiguous
    assert not np.array_equal(m2, _mode_map(*margs, contact=False))
    a = LegCascade(dt_s=1e-3)
    b = LegCascade(dt_s=1e-3)
    assert np.array_equal(a._m, b._m) and a._m is not b._m
