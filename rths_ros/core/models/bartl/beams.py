"""Digital twin of the coupled-cantilever-beam experiment of Bartl 2019 (§6.1, Figs. 6.1-6.6, Table 6.1).

Geometry (global x along the beams, deflection z, rotation alpha = dz/dx; steel, E = 210 GPa, rho = 7850 kg/m^3):

* VIR  cantilever clamped at x = 0, 400 mm long, 40 mm x 4 mm section (l^VIR, h_y, h_z); excitation point P at
  x = d_p^VIR = 200 mm, coupling interface B at the free end x = 400 mm;
* EXP  cantilever clamped at x = 800 mm with its free end at B (x = 400 mm), 40 mm wide, stepped: 4 mm thick
  (h_z1) over the 150 mm next to its clamp and 2 mm (h_z2) over the l_d^EXP = 250 mm next to B.  The thesis's
  Fig. 6.3 is missing, so the placement of the step is this package's reading of Table 6.1;
* ACT  the rigid steel plate at B (100 x 40 x 6 mm: m = 0.1884 kg, theta_y = 1.576e-4 kg m^2) and two shakers in
  current control at x_B -+ d^ACT/2 (d^ACT = 80 mm), each a 1-DOF armature (moving mass, suspension; stingers
  rigid axially), driven by the force demand u (N).

Both beams are Euler-Bernoulli with cubic Hermite elements (10 mm), consistent mass, and Rayleigh damping for the
foam dampers (2 % at 20 Hz and 800 Hz; the thesis gives no value).  The clamps and washers are rigid (the thesis's
joint elements are calibrated to measured frequencies it does not print).  Each beam is reduced by Craig-Bampton
(:func:`rths_ros.core.models.fe.reduction.craig_bampton`) with 20 fixed-interface modes: the VIR on the boundary
{z_P, alpha_P, z_B, alpha_B} (excitation point and interface, "translation and rotation"), the EXP on
{z_B, alpha_B}.

Interface (eqs. 6.1-6.3): the coupled quantities are the displacements at the two actuator points,
``y = T [z_B; alpha_B]``, ``T = [[1, -d/2], [1, d/2]]``.  The interface force on the EXP beam comes from the rigid
plate model (6.3), ``lambda_EXP = T^T F_A - diag(m, theta) [z_B''; alpha_B'']`` with the stinger forces F_A
(impedance heads); the thesis's printed input matrix ``[[-1, 1], [d/2, d/2]]`` does not follow from (6.1), the
geometry gives ``T^T = [[1, 1], [-d/2, d/2]]``.  lambda_VIR = -lambda_EXP (6.2).

The loop runs at dt = 0.2 ms: the rig (EXP + plate + shakers, state of the reduced model) exactly with a zero-order
hold on u, the VIR by implicit Newmark (beta = 1/4, gamma = 1/2, the stepper of
:mod:`rths_ros.core.models.fe.integrators`, turned into its linear one-step map) with the interface force of the
same sample (eq. 2.48), the harmonic AFF (QR-RLS, simultaneous identification) per sample in one numba loop.
Sample 0 holds the rig at rest (u = 0); the AFF's first call, which starts its identification, is at sample 1,
and f_ext at the new level k+1 is taken at t = (k+1) dt.  The steps of the loop are small compiled functions
(:func:`rig_advance`, :func:`vir_advance`, ...) that the node graph's objects
(:mod:`rths_ros.core.models.bartl.beams_rths`) call too, so both give the same numbers bit for bit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
import scipy.sparse as sp

from rths_ros.core.learning.aff.harmonic import HarmonicAff, aff_step_kernel
from rths_ros.core.learning.aff.harmonic_params import HarmonicAffParams
from rths_ros.core.models.fe.integrators import NewmarkStepper
from rths_ros.core.models.fe.matrices import FEModel, beam_element, rayleigh, selection_matrix
from rths_ros.core.models.fe.reduction import craig_bampton
from rths_ros.params import param

__all__ = ["BeamRigParams", "BeamRig", "stepped_beam", "build_rig", "simulate_beams",
           "reference_receptance", "rig_advance", "vir_advance", "to_points", "force_at_points", "excitation_force"]


@dataclass(frozen=True)
class BeamRigParams:
    """Table 6.1 and this package's choices for what the thesis leaves open (docs/bartl_rigs.md)."""

    youngs_pa: float = param(210e9, "Pa", 1e9, 1e12, "Young's modulus (Table 6.1)")
    density_kg_m3: float = param(7850.0, "kg/m^3", 100.0, 1e5, "density (Table 6.1)")
    width_m: float = param(0.04, "m", 1e-3, 1.0, "beam width h_y (Table 6.1)")
    l_vir_m: float = param(0.4, "m", 0.05, 5.0, "virtual beam length l^VIR")
    h_vir_m: float = param(0.004, "m", 1e-4, 0.1, "virtual beam thickness h_z^VIR")
    d_p_m: float = param(0.2, "m", 0.01, 5.0, "position of the excitation point P from the virtual clamp (d_p^VIR)")
    l_exp_m: float = param(0.4, "m", 0.05, 5.0, "experimental beam length l^EXP")
    h_exp1_m: float = param(0.004, "m", 1e-4, 0.1, "experimental thickness next to its clamp (h_z1^EXP)")
    h_exp2_m: float = param(0.002, "m", 1e-4, 0.1, "experimental thickness next to B (h_z2^EXP)")
    l_thin_m: float = param(0.25, "m", 0.0, 5.0, "length of the thin part next to B (l_d^EXP; choice)")
    element_m: float = param(0.01, "m", 1e-3, 0.1, "element length")
    n_modes: int = param(20, "", 1, 100, "fixed-interface modes of each Craig-Bampton reduction (§6.1: 20)")
    zeta: float = param(0.02, "", 0.0, 0.5, "Rayleigh damping ratio at 20 Hz and 800 Hz (foam dampers; choice)")
    m_plate_kg: float = param(0.1884, "kg", 0.0, 10.0, "plate mass (100 x 40 x 6 mm steel)")
    theta_plate_kg_m2: float = param(1.576e-4, "kg m^2", 0.0, 1.0, "plate inertia about y")
    d_act_m: float = param(0.08, "m", 1e-3, 1.0, "shaker spacing d^ACT (Table 6.1)")
    m_shaker_kg: float = param(0.05, "kg", 0.0, 10.0, "moving mass per shaker, armature + head + stinger (choice)")
    k_shaker_n_per_m: float = param(5000.0, "N/m", 0.0, 1e8, "suspension stiffness per shaker (choice)")
    d_shaker_n_s_per_m: float = param(5.0, "N s/m", 0.0, 1e5, "suspension damping per shaker (choice)")
    dt_s: float = param(2e-4, "s", 1e-5, 0.01, "sample time of VIR, AFF and loop (§6.1: 0.2 ms)")


def stepped_beam(segments, p: BeamRigParams, clamp: str) -> tuple[sp.csc_matrix, sp.csc_matrix]:
    """Euler-Bernoulli beam of consecutive ``segments`` ((length, thickness), ...) along +x, clamped at the
    ``clamp`` end ('left' = first node, 'right' = last node).  DoFs [z_0, alpha_0, z_1, ...] without the clamped
    node.  (Same elements as :func:`rths_ros.core.models.fe.matrices.cantilever_beam`, which has one section only.)"""
    rows, cols, kv, mv = [], [], [], []
    e = 0
    for length, h in segments:
        n_el = max(1, int(round(length / p.element_m)))
        le = length / n_el
        ei = p.youngs_pa * p.width_m * h ** 3 / 12.0
        ra = p.density_kg_m3 * p.width_m * h
        ke, me = beam_element(ei, ra, le)
        for _ in range(n_el):
            idx = np.arange(2 * e, 2 * e + 4)
            rows.append(np.repeat(idx, 4))
            cols.append(np.tile(idx, 4))
            kv.append(ke.ravel())
            mv.append(me.ravel())
            e += 1
    n = 2 * (e + 1)
    r, c = np.concatenate(rows), np.concatenate(cols)
    K = sp.csc_matrix((np.concatenate(kv), (r, c)), shape=(n, n))
    M = sp.csc_matrix((np.concatenate(mv), (r, c)), shape=(n, n))
    keep = np.arange(2, n) if clamp == "left" else np.arange(0, n - 2)
    return K[keep][:, keep].tocsc(), M[keep][:, keep].tocsc()


def _rayleigh_ab(zeta: float, f1: float = 20.0, f2: float = 800.0) -> tuple[float, float]:
    w1, w2 = 2 * math.pi * f1, 2 * math.pi * f2
    return 2 * zeta * w1 * w2 / (w1 + w2), 2 * zeta / (w1 + w2)


def interface_map(d: float) -> np.ndarray:
    """T of eq. 6.1: actuator-point displacements from [z_B, alpha_B]."""
    return np.array([[1.0, -d / 2.0], [1.0, d / 2.0]])


@dataclass
class BeamRig:
    """The reduced components and the sampled maps of the loop (:func:`build_rig`)."""

    p: BeamRigParams
    vir: FEModel            # reduced VIR, G rows: z_P, z_B, alpha_B
    exp: FEModel            # reduced EXP, G rows: z_B, alpha_B
    T: np.ndarray           # eq. 6.1
    ad: np.ndarray          # rig state map (ZOH)
    bd: np.ndarray
    c_y: np.ndarray         # y_EXP = c_y x
    c_lam: np.ndarray       # lambda_EXP = c_lam x + d_lam u
    d_lam: np.ndarray
    av: np.ndarray          # VIR Newmark one-step map: s' = av s + bv [f_P, lam_z, lam_alpha], s = [q, q', q'']
    bv: np.ndarray
    c_v: np.ndarray         # [z_P, z_B, alpha_B] = c_v s


def _vir_model(p: BeamRigParams) -> FEModel:
    K, M = stepped_beam(((p.l_vir_m, p.h_vir_m),), p, "left")
    n_el = int(round(p.l_vir_m / p.element_m))
    k_p = int(round(p.d_p_m / p.element_m))
    # node j (1..n_el) has DoFs 2(j-1), 2(j-1)+1 after removing the clamped node 0
    zp, ap, zb, ab = 2 * (k_p - 1), 2 * (k_p - 1) + 1, 2 * (n_el - 1), 2 * (n_el - 1) + 1
    a, b = _rayleigh_ab(p.zeta)
    full = FEModel(M, K, rayleigh(M, K, a, b), selection_matrix([zp, zb, ab], M.shape[0]), "vir_beam")
    red = craig_bampton(full, [zp, ap, zb, ab], p.n_modes)
    return red


def _exp_model(p: BeamRigParams) -> FEModel:
    segs = ((p.l_thin_m, p.h_exp2_m), (p.l_exp_m - p.l_thin_m, p.h_exp1_m))   # from B (x = 0.4 m) to the clamp
    K, M = stepped_beam(segs, p, "right")
    a, b = _rayleigh_ab(p.zeta)
    full = FEModel(M, K, rayleigh(M, K, a, b), selection_matrix([0, 1], M.shape[0]), "exp_beam")
    return craig_bampton(full, [0, 1], p.n_modes)


def _newmark_map(model: FEModel, dt: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Newmark stepper of :mod:`rths_ros.core.models.fe.integrators` as a linear one-step map (probed column by
    column): s' = A s + B u, s = [q, q', q''], u the input of the new level."""
    st = NewmarkStepper.from_model(model, dt)
    n, m = model.n_dof, model.n_int
    A = np.zeros((3 * n, 3 * n))
    B = np.zeros((3 * n, m))
    for j in range(3 * n):
        s = np.zeros(3 * n)
        s[j] = 1.0
        st.set_state(s[:n], s[n:2 * n], s[2 * n:])
        st.step(np.zeros(m))
        A[:, j] = np.concatenate([st.q, st.qd, st.qdd])
    for j in range(m):
        st.reset()
        u = np.zeros(m)
        u[j] = 1.0
        st.step(u)
        B[:, j] = np.concatenate([st.q, st.qd, st.qdd])
    C = np.hstack([np.asarray(model.G), np.zeros((m, 2 * n))])
    return A, B, C


def build_rig(p: BeamRigParams = BeamRigParams()) -> BeamRig:
    """The reduced components and the sampled maps.  Built with one BLAS thread: the matrix exponential's products
    round differently with two OpenBLAS threads (last bits of ``ad``, ``bd``), and every process that runs the rig
    (the node graph's, the in-process run's) must get the same bits whatever its BLAS threading."""
    from threadpoolctl import threadpool_limits
    with threadpool_limits(limits=1):
        return _build_rig(p)


def _build_rig(p: BeamRigParams) -> BeamRig:
    from scipy.linalg import expm
    vir, exp = _vir_model(p), _exp_model(p)
    T = interface_map(p.d_act_m)
    n = exp.n_dof
    M, D, K = (np.array(x, dtype=float) for x in (exp.M, exp.D, exp.K))
    # plate at B (boundary DoFs 0, 1 of the Craig-Bampton coordinates) and shakers at the actuator points
    Mp = np.diag([p.m_plate_kg, p.theta_plate_kg_m2])
    M[:2, :2] += Mp + p.m_shaker_kg * T.T @ T
    D[:2, :2] += p.d_shaker_n_s_per_m * T.T @ T
    K[:2, :2] += p.k_shaker_n_per_m * T.T @ T
    Bu = np.zeros((n, 2))
    Bu[:2, :] = T.T
    Minv = np.linalg.inv(M)
    A = np.block([[np.zeros((n, n)), np.eye(n)], [-Minv @ K, -Minv @ D]])
    B = np.vstack([np.zeros((n, 2)), Minv @ Bu])
    big = np.zeros((2 * n + 2, 2 * n + 2))
    big[:2 * n, :2 * n] = A * p.dt_s
    big[:2 * n, 2 * n:] = B * p.dt_s
    e = expm(big)
    ad, bd = e[:2 * n, :2 * n].copy(), e[:2 * n, 2 * n:].copy()
    c_y = np.zeros((2, 2 * n))
    c_y[:, :2] = T
    # lambda_EXP = T^T F_A - Mp a_B, F_A = u - m_s z_A'' - d_s z_A' - k_s z_A (eq. 6.3 with the geometric T^T)
    acc_x, acc_u = A[n:, :], B[n:, :]                    # q'' = acc_x x + acc_u u
    sel_a = np.zeros((2, n))
    sel_a[:, :2] = np.eye(2)
    za_acc_x, za_acc_u = T @ sel_a @ acc_x, T @ sel_a @ acc_u
    za_x = np.hstack([T @ sel_a, np.zeros((2, n))])
    zad_x = np.hstack([np.zeros((2, n)), T @ sel_a])
    fa_x = -p.m_shaker_kg * za_acc_x - p.d_shaker_n_s_per_m * zad_x - p.k_shaker_n_per_m * za_x
    fa_u = np.eye(2) - p.m_shaker_kg * za_acc_u
    c_lam = T.T @ fa_x - Mp @ sel_a @ acc_x
    d_lam = T.T @ fa_u - Mp @ sel_a @ acc_u
    av, bv, c_v = _newmark_map(vir, p.dt_s)
    return BeamRig(p, vir, exp, T, ad, bd, c_y, c_lam, d_lam, av, bv, c_v)


@numba.njit(cache=True, nogil=True)
def rig_advance(ad, bd, c_y, c_lam, d_lam, x, u):
    """One sample of the rig with u held (ZOH): the new state, the actuator-point displacements y_EXP and the
    interface force lambda_EXP = [F_Bz, M_By] (eq. 6.3).  The loop and the node graph's twin both call this."""
    x = ad @ x + bd @ u
    return x, c_y @ x, c_lam @ x + d_lam @ u


@numba.njit(cache=True, nogil=True)
def vir_advance(av, bv, c_v, s, inp):
    """One Newmark step of the virtual beam: s' = av s + bv [f_P, lam_z, lam_alpha]; returns s' and
    [z_P, z_B, alpha_B]."""
    s = av @ s + bv @ inp
    return s, c_v @ s


@numba.njit(cache=True, nogil=True)
def to_points(T, zb):
    """Actuator-point displacements T [z_B; alpha_B] (eq. 6.1)."""
    return T @ zb


@numba.njit(cache=True, nogil=True)
def force_at_points(tinv_t, lam_e):
    """lambda_VIR at the actuator points, -T^-T lambda_EXP (power-conjugate to the gap g)."""
    return -(tinv_t @ lam_e)


@numba.njit(cache=True, nogil=True)
def excitation_force(tn, amp, f0, square, t_on):
    """f_ext at P at time tn: amp cos(2 pi f0 tn) (or its square wave) from t_on on, 0 before."""
    f = 0.0
    if tn >= t_on - 1e-12:
        c = math.cos(2.0 * math.pi * f0 * tn)
        if square:
            f = amp if c >= 0.0 else -amp
        else:
            f = amp * c
    return f


@numba.njit(cache=True, nogil=True)
def _beam_loop(n_steps, dt, every, amp, f0, square, t_on, limit, ad, bd, c_y, c_lam, d_lam, av, bv, c_v, T, tinv_t,
               out, omegas, ci, cf, ist, fs, rng, theta, theta_app, theta0, r_ad, p_tilde, r_id, p, g_prev, cs, x_ad, x_id,
               y_ad, y_id, row_ad, col_ad, row_id, col_id, u):
    x = np.zeros(ad.shape[0])
    sv = np.zeros(av.shape[0])
    se = np.zeros(av.shape[0])
    g = np.zeros(2)
    ge = np.zeros(2)
    lam = np.zeros(2)
    inp = np.zeros(3)
    y_exp = np.zeros(2)
    y_vir = np.zeros(2)
    zb = np.zeros(2)
    f = 0.0
    j = 0
    for r in range(2):
        u[r] = 0.0
    for k in range(n_steps):
        t = k * dt
        if k > 0:      # sample 0: the rig at rest, as every trial of the node graph starts
            aff_step_kernel(t, g, ge, lam, omegas, ci, cf, ist, fs, rng, theta, theta_app, theta0, r_ad, p_tilde,
                            r_id, p, g_prev, cs, x_ad, x_id, y_ad, y_id, row_ad, col_ad, row_id, col_id, u)
        if k % every == 0:
            out[j, 0] = t
            out[j, 1] = f
            out[j, 2] = u[0]
            out[j, 3] = u[1]
            out[j, 4] = y_exp[0]
            out[j, 5] = y_exp[1]
            out[j, 6] = y_vir[0]
            out[j, 7] = y_vir[1]
            out[j, 8] = g[0]
            out[j, 9] = g[1]
            out[j, 10] = zb[0]
            out[j, 11] = zb[1]
            j += 1
        x, y_exp, lam_e = rig_advance(ad, bd, c_y, c_lam, d_lam, x, u)
        f = excitation_force((k + 1) * dt, amp, f0, square, t_on)
        inp[0] = f
        inp[1] = -lam_e[0]
        inp[2] = -lam_e[1]
        sv, yv3 = vir_advance(av, bv, c_v, sv, inp)
        inp[1] = 0.0
        inp[2] = 0.0
        se, ye3 = vir_advance(av, bv, c_v, se, inp)
        zb[0] = yv3[1]
        zb[1] = yv3[2]
        y_vir = to_points(T, zb)
        for r in range(2):
            g[r] = y_exp[r] - y_vir[r]
            ge[r] = -(T[r, 0] * ye3[1] + T[r, 1] * ye3[2])
        lam = force_at_points(tinv_t, lam_e)
        if not (abs(g[0]) < limit and abs(g[1]) < limit):
            return j, k + 1
    return j, n_steps


def simulate_beams(aff: HarmonicAffParams, f0_hz: float, amp_n: float, t_end_s: float, square: bool = False,
                   rig: BeamRig | None = None, record_every: int = 1, divergence_limit_m: float = 0.01) -> dict:
    """One hybrid test of the beams with the harmonic AFF (module doc).  Excitation ``amp cos(2 pi f0 t)`` (or the
    square wave of that phase) at P, on from the end of the identification.  Returns the recorded signals
    ``t, f_ext, u (n, 2), y_exp (n, 2), y_vir (n, 2), g (n, 2), zb_vir (n, 2)`` [SI], ``t_on_s`` and the
    filter ``aff`` (e.g. its ``h_est``), ``diverged`` (a gap exceeded ``divergence_limit_m``; the run stops there and
    the rest of the record is NaN)."""
    if aff.n_int != 2:
        raise ValueError("the beam interface has two DOFs (n_int = 2)")
    rig = rig or build_rig()
    dt = rig.p.dt_s
    filt = HarmonicAff(aff)
    n = int(round(t_end_s / dt))
    every = max(1, int(record_every))
    out = np.full(((n + every - 1) // every, 12), np.nan)
    tinv_t = np.linalg.inv(rig.T).T
    arrs = filt._arrays()
    _, k_done = _beam_loop(n, dt, every, float(amp_n), float(f0_hz), bool(square), float(aff.t_id_s),
                           float(divergence_limit_m), rig.ad, rig.bd, rig.c_y, rig.c_lam, rig.d_lam, rig.av, rig.bv,
                           rig.c_v, rig.T, tinv_t, out, *arrs)
    return {"t": out[:, 0], "f_ext": out[:, 1], "u": out[:, 2:4], "y_exp": out[:, 4:6], "y_vir": out[:, 6:8],
            "g": out[:, 8:10], "zb_vir": out[:, 10:12], "t_on_s": aff.t_id_s, "dt_s": dt * every, "aff": filt,
            "f0_hz": f0_hz, "amp_n": amp_n, "square": square, "diverged": k_done < n}


def reference_receptance(rig: BeamRig, f_hz, discrete: bool = True) -> np.ndarray:
    """Receptance from the force at P to [z_B, alpha_B] of the coupled reference (VIR + EXP beams, no plate and no
    shakers), by primal assembly of the reduced models in the frequency domain.  ``discrete``: the VIR at the
    Newmark-prewarped frequency (2/dt) tan(w dt/2), which is what the sampled loop converges to."""
    f = np.atleast_1d(np.asarray(f_hz, dtype=float))
    vir, exp = rig.vir, rig.exp
    nv, ne = vir.n_dof, exp.n_dof
    # VIR reduced coordinates: boundary in ascending DoF order (z_P, alpha_P, z_B, alpha_B), then modes
    ib = [2, 3]
    n = nv + ne - 2
    L_v = np.eye(nv, n)
    L_e = np.zeros((ne, n))
    L_e[0, ib[0]] = 1.0
    L_e[1, ib[1]] = 1.0
    L_e[2:, nv:] = np.eye(ne - 2)
    out = np.zeros((f.size, 2), dtype=complex)
    for i, fi in enumerate(f):
        w = 2 * math.pi * fi
        wv = 2.0 / rig.p.dt_s * math.tan(w * rig.p.dt_s / 2.0) if discrete else w
        zv = np.asarray(vir.K) + 1j * wv * np.asarray(vir.D) - wv * wv * np.asarray(vir.M)
        ze = np.asarray(exp.K) + 1j * w * np.asarray(exp.D) - w * w * np.asarray(exp.M)
        Z = L_v.T @ zv @ L_v + L_e.T @ ze @ L_e
        rhs = L_v.T @ np.asarray(vir.G)[0]
        x = np.linalg.solve(Z, rhs)
        out[i] = x[ib]
    return out
