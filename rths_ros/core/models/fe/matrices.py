"""Finite-element matrices of the large virtual parts (Bartl 2019 §2.2, §2.4.5): ``M q'' + D q' + K q = G^T lam``,
``y = G q``.

* :func:`cantilever_beam` -- Euler-Bernoulli beam, cubic Hermite elements (deflection and slope per node), clamped
  at ``x = 0``; consistent mass.  Assembled here (a few lines); the static tip deflection ``F L^3 / (3 E I)`` is exact
  and the eigenfrequencies converge to ``(beta_k L)^2 sqrt(E I / (rho A L^4))``.
* :func:`aluminium_plate` -- the benchmark's thin aluminium plate as a flat shell: Kirchhoff bending with
  scikit-fem's Morley triangle (deflection at the vertices, normal slope at the edge midpoints) plus plane-stress
  membrane with linear triangles (two in-plane displacements per vertex).  Bending and membrane are uncoupled in a
  flat plate, so both are assembled separately and stacked (bending DoFs first).  Free-free it has six rigid-body
  modes, as the thesis's plate (N_L = 11 = 6 rigid + 5 elastic).  The 36 x 36 grid gives 8067 DoFs (the thesis:
  8066; the Morley-plus-membrane count ``6 nx ny + 4 (nx + ny) + 3`` is odd, so 8066 itself is not reachable).
  Inputs/outputs: forces normal to the plate at three vertices and the deflections there (collocated).
* :func:`load_npz`, :func:`load_mtx`, :func:`save_npz` -- matrices from files (``.npz`` with ``M``, ``K``,
  optional ``D`` and ``G``; Matrix Market via :mod:`scipy.io`).

Damping is Rayleigh, ``D = a M + b K`` (:func:`rayleigh`): it keeps the modal equations decoupled, which the IIR
filters of :mod:`rths_ros.core.models.fe.filters` need.  All values in SI units.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

__all__ = ["FEModel", "PlateParams", "BeamParams", "aluminium_plate", "cantilever_beam", "beam_element", "rayleigh", "load_npz",
           "load_mtx", "save_npz", "selection_matrix", "beam_frequencies_hz", "plate_rigid_body_modes"]


@dataclass
class FEModel:
    """A linear second-order model with collocated interface: ``M q'' + D q' + K q = G^T lam``, ``y = G q``.

    ``M``, ``D``, ``K``: (n, n) sparse (CSC) or dense; ``G``: (n_int, n) sparse (CSR) or dense.  ``info`` holds
    what the builder chose (geometry, material, mesh, damping, the interface DoFs)."""

    M: sp.spmatrix | np.ndarray
    K: sp.spmatrix | np.ndarray
    D: sp.spmatrix | np.ndarray
    G: sp.spmatrix | np.ndarray
    name: str = "model"
    info: dict = field(default_factory=dict)

    @property
    def n_dof(self) -> int:
        return int(self.M.shape[0])

    @property
    def n_int(self) -> int:
        return int(self.G.shape[0])

    @property
    def B(self):
        """Input matrix ``G^T`` (n, n_int)."""
        return self.G.T

    def with_damping(self, D) -> FEModel:
        return FEModel(self.M, self.K, D, self.G, self.name, dict(self.info))


def rayleigh(M, K, a: float, b: float):
    """Rayleigh damping ``D = a M + b K``: modal damping ``2 delta_i = a + b omega_i^2``, i.e.
    ``zeta_i = a / (2 omega_i) + b omega_i / 2``; rigid-body modes get ``delta = a / 2``."""
    if sp.issparse(M):
        return (a * M + b * K).tocsc()
    return a * np.asarray(M) + b * np.asarray(K)


def selection_matrix(dofs, n: int) -> sp.csr_matrix:
    """Boolean interface matrix ``G`` (len(dofs), n) picking the given DoFs."""
    dofs = np.asarray(dofs, dtype=int)
    return sp.csr_matrix((np.ones(dofs.size), (np.arange(dofs.size), dofs)), shape=(dofs.size, n))


# --------------------------------------------------------------------------------------------------- beam
def beam_element(ei: float, rho_a: float, le: float) -> tuple[np.ndarray, np.ndarray]:
    """Stiffness and consistent mass (4 x 4) of an Euler-Bernoulli element of length ``le``, bending stiffness
    ``ei`` and mass per length ``rho_a``; DoFs ``[w_1, theta_1, w_2, theta_2]`` (Hermite cubics)."""
    ke = ei / le ** 3 * np.array([[12, 6 * le, -12, 6 * le],
                                  [6 * le, 4 * le ** 2, -6 * le, 2 * le ** 2],
                                  [-12, -6 * le, 12, -6 * le],
                                  [6 * le, 2 * le ** 2, -6 * le, 4 * le ** 2]])
    me = rho_a * le / 420.0 * np.array([[156, 22 * le, 54, -13 * le],
                                        [22 * le, 4 * le ** 2, 13 * le, -3 * le ** 2],
                                        [54, 13 * le, 156, -22 * le],
                                        [-13 * le, -3 * le ** 2, -22 * le, 4 * le ** 2]])
    return ke, me


@dataclass(frozen=True)
class BeamParams:
    """Steel cantilever of Bartl 2019 Table B.2 (E, length, width, height); density 7850 kg/m^3 (§6.1 material)."""

    length_m: float = 0.5
    width_m: float = 0.05
    height_m: float = 0.008
    youngs_pa: float = 210e9
    density_kg_m3: float = 7850.0
    n_elements: int = 20
    rayleigh_a: float = 0.0        # 1/s
    rayleigh_b: float = 2e-5       # s


def cantilever_beam(p: BeamParams = BeamParams(), io_nodes=None) -> FEModel:
    """Euler-Bernoulli cantilever clamped at ``x = 0``; DoFs ``[w_1, theta_1, ..., w_N, theta_N]`` (node 0 removed).
    ``io_nodes``: nodes (1..N) whose deflection is an interface DoF (default: the tip)."""
    n_el = int(p.n_elements)
    le = p.length_m / n_el
    area = p.width_m * p.height_m
    ei = p.youngs_pa * p.width_m * p.height_m ** 3 / 12.0
    ke, me = beam_element(ei, p.density_kg_m3 * area, le)
    n_all = 2 * (n_el + 1)
    rows, cols, kv, mv = [], [], [], []
    for e in range(n_el):
        idx = np.arange(2 * e, 2 * e + 4)
        rows.append(np.repeat(idx, 4))
        cols.append(np.tile(idx, 4))
        kv.append(ke.ravel())
        mv.append(me.ravel())
    r, c = np.concatenate(rows), np.concatenate(cols)
    K = sp.csc_matrix((np.concatenate(kv), (r, c)), shape=(n_all, n_all))[2:, 2:].tocsc()
    M = sp.csc_matrix((np.concatenate(mv), (r, c)), shape=(n_all, n_all))[2:, 2:].tocsc()
    nodes = [n_el] if io_nodes is None else list(io_nodes)
    if any(not 1 <= k <= n_el for k in nodes):
        raise ValueError(f"io_nodes must lie in 1..{n_el} (node 0 is clamped)")
    dofs = [2 * (k - 1) for k in nodes]
    info = {"kind": "cantilever_beam", "params": p.__dict__.copy(), "io_dofs": dofs, "io_nodes": nodes,
            "EI": ei, "rhoA": p.density_kg_m3 * area}
    return FEModel(M, K, rayleigh(M, K, p.rayleigh_a, p.rayleigh_b), selection_matrix(dofs, M.shape[0]),
                   "cantilever_beam", info)


# --------------------------------------------------------------------------------------------------- plate
@dataclass(frozen=True)
class PlateParams:
    """Free-free aluminium plate of the real-time benchmark (Bartl 2019 §2.4.5 gives only '8066-DOF aluminium plate,
    3 inputs / 3 outputs'; everything else here is this package's choice, see docs/fe_virtual_parts.md)."""

    length_m: float = 0.6            # along x
    width_m: float = 0.4             # along y
    thickness_m: float = 0.008
    youngs_pa: float = 70e9
    poisson: float = 0.33
    density_kg_m3: float = 2700.0
    nx: int = 36
    ny: int = 36
    support: str = "free"            # "free" or "simply_supported" (deflection zero on the edges)
    points_m: tuple = ((0.10, 0.10), (0.50, 0.15), (0.30, 0.30))   # force / deflection points (snapped to vertices)
    rayleigh_a: float = 2.0          # 1/s   (rigid-body modes: delta = 1/s)
    rayleigh_b: float = 4e-5         # s     (zeta = 1.5 % at the first elastic mode, 4.6 % at the sixth)


def aluminium_plate(p: PlateParams = PlateParams()) -> FEModel:
    """Flat-shell plate (module doc); DoFs ``[bending (Morley) | membrane (P1, u_x and u_y)]``."""
    from skfem import Basis, BilinearForm, ElementTriMorley, ElementTriP1, ElementVector, MeshTri, asm
    from skfem.helpers import dd, ddot, dot, sym_grad, trace

    if p.support not in ("free", "simply_supported"):
        raise ValueError("support must be 'free' or 'simply_supported'")
    mesh = MeshTri.init_tensor(np.linspace(0.0, p.length_m, p.nx + 1), np.linspace(0.0, p.width_m, p.ny + 1))
    bend = Basis(mesh, ElementTriMorley())
    memb = Basis(mesh, ElementVector(ElementTriP1()))
    E, nu, h, rho = p.youngs_pa, p.poisson, p.thickness_m, p.density_kg_m3
    d_bend = E * h ** 3 / (12.0 * (1.0 - nu ** 2))
    d_memb = E * h / (1.0 - nu ** 2)

    @BilinearForm
    def k_bend(u, v, w):   # D [(1 - nu) kappa:kappa + nu tr(kappa) tr(kappa)], kappa = grad grad w
        return d_bend * ((1.0 - nu) * ddot(dd(u), dd(v)) + nu * trace(dd(u)) * trace(dd(v)))

    @BilinearForm
    def m_bend(u, v, w):
        return rho * h * u * v

    @BilinearForm
    def k_memb(u, v, w):   # plane stress: E h / (1 - nu^2) [(1 - nu) eps:eps + nu tr(eps) tr(eps)]
        return d_memb * ((1.0 - nu) * ddot(sym_grad(u), sym_grad(v)) + nu * trace(sym_grad(u)) * trace(sym_grad(v)))

    @BilinearForm
    def m_memb(u, v, w):
        return rho * h * dot(u, v)

    K = sp.block_diag((asm(k_bend, bend), asm(k_memb, memb)), format="csc")
    M = sp.block_diag((asm(m_bend, bend), asm(m_memb, memb)), format="csc")
    vert = bend.nodal_dofs[0]                      # deflection DoF of each vertex
    xy = mesh.p
    dofs, snapped = [], []
    for (x, y) in p.points_m:
        k = int(np.argmin((xy[0] - x) ** 2 + (xy[1] - y) ** 2))
        dofs.append(int(vert[k]))
        snapped.append((float(xy[0, k]), float(xy[1, k])))
    n = M.shape[0]
    D = rayleigh(M, K, p.rayleigh_a, p.rayleigh_b)
    fixed = np.array([], dtype=int)
    if p.support == "simply_supported":
        on_edge = ((np.isclose(xy[0], 0.0)) | (np.isclose(xy[0], p.length_m))
                   | (np.isclose(xy[1], 0.0)) | (np.isclose(xy[1], p.width_m)))
        fixed = np.concatenate([vert[on_edge], bend.N + memb.nodal_dofs[:, on_edge].ravel()])
    keep = np.setdiff1d(np.arange(n), fixed)
    if fixed.size:
        if set(dofs) & set(fixed.tolist()):
            raise ValueError("an interface point lies on a supported edge")
        M, K, D = (A[keep][:, keep].tocsc() for A in (M, K, D))
        dofs = [int(np.searchsorted(keep, d)) for d in dofs]
    info = {"kind": "aluminium_plate", "params": {k: v for k, v in p.__dict__.items()}, "io_dofs": dofs,
            "io_points_m": snapped, "n_bending": int(bend.N), "n_membrane": int(memb.N),
            "bending_rigidity": d_bend, "mass_kg": rho * h * p.length_m * p.width_m,
            "vertex_dofs": vert, "membrane_dofs": bend.N + memb.nodal_dofs, "kept_dofs": keep}
    return FEModel(M, K, D, selection_matrix(dofs, M.shape[0]), "aluminium_plate", info)


def plate_rigid_body_modes(model: FEModel) -> np.ndarray:
    """The six rigid motions of the free plate (:func:`aluminium_plate`) as DoF vectors (n, 6): deflection
    ``1, x, y`` (Morley vertex values and edge normal slopes) and membrane ``u_x = 1``, ``u_y = 1``, rotation
    ``(-y, x)``.  Used to check that ``K`` has exactly this null space."""
    from skfem import Basis, ElementTriMorley, MeshTri

    p = PlateParams(**{k: v for k, v in model.info["params"].items()})
    if p.support != "free":
        raise ValueError("rigid-body modes exist only for the free plate")
    mesh = MeshTri.init_tensor(np.linspace(0.0, p.length_m, p.nx + 1), np.linspace(0.0, p.width_m, p.ny + 1))
    bend = Basis(mesh, ElementTriMorley())
    out = np.zeros((model.n_dof, 6))
    fields = (lambda x: 1.0 + 0.0 * x[0], lambda x: x[0], lambda x: x[1])
    for j, f in enumerate(fields):
        out[:bend.N, j] = bend.project(f)
    md = model.info["membrane_dofs"]
    x, y = mesh.p
    out[md[0], 3] = 1.0
    out[md[1], 4] = 1.0
    out[md[0], 5] = -y
    out[md[1], 5] = x
    return out


# --------------------------------------------------------------------------------------------------- files
def _model_from_arrays(M, K, D, G, name: str, source: str) -> FEModel:
    M, K = sp.csc_matrix(M), sp.csc_matrix(K)
    if M.shape != K.shape or M.shape[0] != M.shape[1]:
        raise ValueError(f"M {M.shape} and K {K.shape} must be square and of one size")
    D = sp.csc_matrix((M.shape[0], M.shape[0])) if D is None else sp.csc_matrix(D)
    if D.shape != M.shape:
        raise ValueError(f"D {D.shape} does not match M {M.shape}")
    if G is None:
        raise ValueError("the interface matrix G (n_int x n) is needed (G, or io_dofs)")
    G = sp.csr_matrix(G)
    if G.shape[1] != M.shape[0]:
        raise ValueError(f"G {G.shape} does not match n = {M.shape[0]}")
    return FEModel(M, K, D, G, name, {"kind": "file", "source": source})


def load_npz(path, io_dofs=None) -> FEModel:
    """Matrices from an ``.npz`` (dense arrays or :func:`save_npz` output): ``M``, ``K``, optional ``D`` and
    ``G``; without ``G``, ``io_dofs`` selects the interface DoFs."""
    path = Path(path)
    with np.load(path, allow_pickle=False) as z:
        def get(key):
            if key in z.files:
                return z[key]
            if f"{key}_data" in z.files:
                return sp.csc_matrix((z[f"{key}_data"], z[f"{key}_indices"], z[f"{key}_indptr"]),
                                     shape=tuple(z[f"{key}_shape"]))
            return None
        M, K, D, G = get("M"), get("K"), get("D"), get("G")
    if M is None or K is None:
        raise ValueError(f"{path} lacks M or K")
    if G is None and io_dofs is not None:
        G = selection_matrix(io_dofs, M.shape[0])
    return _model_from_arrays(M, K, D, G, path.stem, str(path))


def save_npz(model: FEModel, path) -> None:
    """Write ``M``, ``K``, ``D``, ``G`` as sparse CSC parts into one ``.npz`` (readable by :func:`load_npz`)."""
    parts = {}
    for key in ("M", "K", "D", "G"):
        a = sp.csc_matrix(getattr(model, key))
        parts.update({f"{key}_data": a.data, f"{key}_indices": a.indices, f"{key}_indptr": a.indptr,
                      f"{key}_shape": np.array(a.shape)})
    np.savez(path, **parts)


def load_mtx(m_path, k_path, d_path=None, g_path=None, io_dofs=None) -> FEModel:
    """Matrices from Matrix Market files (``scipy.io.mmread``); ``G`` from ``g_path`` or ``io_dofs``."""
    M, K = scipy.io.mmread(m_path), scipy.io.mmread(k_path)
    D = scipy.io.mmread(d_path) if d_path else None
    G = scipy.io.mmread(g_path) if g_path else (selection_matrix(io_dofs, M.shape[0]) if io_dofs is not None else None)
    return _model_from_arrays(M, K, D, G, Path(m_path).stem, str(m_path))


def beam_frequencies_hz(p: BeamParams, n: int) -> np.ndarray:
    """Analytic cantilever eigenfrequencies ``(beta_k L)^2 / (2 pi) sqrt(E I / (rho A L^4))`` (first ``n``), with
    ``cos(bL) cosh(bL) = -1`` solved by bisection."""
    roots = []
    for k in range(n):
        lo, hi = (k + 0.5) * math.pi - 1.0, (k + 0.5) * math.pi + 1.0
        f = lambda x: math.cos(x) * math.cosh(x) + 1.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if f(lo) * f(mid) <= 0:
                hi = mid
            else:
                lo = mid
        roots.append(0.5 * (lo + hi))
    ei = p.youngs_pa * p.width_m * p.height_m ** 3 / 12.0
    rho_a = p.density_kg_m3 * p.width_m * p.height_m
    return np.array([r ** 2 * math.sqrt(ei / (rho_a * p.length_m ** 4)) / (2 * math.pi) for r in roots])
