"""Model-order reduction of a virtual part (Bartl 2019 §2.2): ``q = R q~``, ``M~ = R^T M R``, ``D~ = R^T D R``,
``K~ = R^T K R``, ``G~ = G R`` (eq. 2.30).

* :func:`free_modes` -- the lowest free-interface modes ``(K - omega^2 M) phi = 0``, mass-normalised
  (``Phi^T M Phi = I``); rigid-body modes (``K phi = 0``, eq. 2.33) are recognised by their eigenvalue, set to
  ``omega = 0`` exactly and M-orthonormalised among themselves.  Shift-invert around a negative shift, so a
  singular ``K`` (free-free) is fine.
* :func:`modal_truncation` -- ``R = Phi``: ``M~ = I``, ``K~ = diag(omega_i^2)``, with Rayleigh damping
  ``D~ = diag(2 zeta_i omega_i)``.
* :func:`guyan` -- static condensation, ``R = [I; Psi_c]``, ``Psi_c = -K_ii^-1 K_ib``; ``q~ = q_b``.
* :func:`craig_bampton` -- ``R = [[I, 0], [Psi_c, Phi_i]]`` with ``N`` fixed-interface modes
  ``(K_ii - omega^2 M_ii) phi = 0``: ``M~`` has the identity in the modal block and ``K~ = blkdiag(K~_bb,
  omega_1^2 .. omega_N^2)`` (the thesis prints ``omega_i``; with mass-normalised modes it is ``omega_i^2``).

Boundary DoFs ``b`` are given by index; the interface matrix must act on them only (``G = [G_b 0]``), which holds
for the collocated models of :mod:`rths_ros.core.models.fe.matrices` when ``b`` contains their interface DoFs.
The reduced models are dense :class:`~rths_ros.core.models.fe.matrices.FEModel` objects with the basis ``R`` in
``info["R"]`` (``q = R q~`` recovers the full field); the integrators step them like the full model.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rths_ros.core.models.fe.matrices import FEModel

__all__ = ["free_modes", "modal_truncation", "guyan", "craig_bampton", "m_orthonormalise", "project"]


def _dense(A) -> np.ndarray:
    return A.toarray() if sp.issparse(A) else np.asarray(A, dtype=float)


def m_orthonormalise(Phi: np.ndarray, M) -> np.ndarray:
    """Columns of ``Phi`` made M-orthonormal (``Phi^T M Phi = I``) by a symmetric (Loewdin) transform, which keeps
    the spanned space and changes the columns as little as possible."""
    g = Phi.T @ (M @ Phi)
    w, V = np.linalg.eigh(0.5 * (g + g.T))
    if w.min() <= 1e-14 * w.max():
        raise ValueError("the vectors are (nearly) linearly dependent in the mass metric")
    return Phi @ (V @ np.diag(w ** -0.5) @ V.T)


def free_modes(M, K, n_modes: int, shift: float = -1.0, rigid_tol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Lowest ``n_modes`` eigenpairs of ``K phi = omega^2 M phi``: ``(omega (n_modes,) rad/s, Phi (n, n_modes))``,
    ascending, mass-normalised.  An eigenvalue below ``rigid_tol * max(eigenvalues)`` counts as a rigid-body mode
    (``omega = 0``).  ``shift`` (rad^2/s^2, negative) is the shift-invert point."""
    import scipy.linalg as sla
    import scipy.sparse.linalg as spla
    n = M.shape[0]
    if n_modes >= n - 1 or not sp.issparse(K):
        w, V = sla.eigh(_dense(K), _dense(M))
        w, V = w[:n_modes], V[:, :n_modes]
    else:
        # a fixed start vector: the same modes in every process (ARPACK's default start is random)
        w, V = spla.eigsh(sp.csc_matrix(K), k=n_modes, M=sp.csc_matrix(M), sigma=shift, which="LM",
                          v0=np.ones(n))
    order = np.argsort(w)
    w, V = w[order], V[:, order]
    rigid = w < rigid_tol * max(float(np.abs(w).max()), 1e-300)
    Phi = np.array(V, dtype=float)
    if rigid.any():
        Phi[:, rigid] = m_orthonormalise(Phi[:, rigid], M)
    norms = np.sqrt(np.einsum("ij,ij->j", Phi, M @ Phi))
    Phi /= norms
    # each mode's sign fixed (its largest entry positive), so a reduced model is the same bit for bit wherever it
    # is built (the ROS nodes and the in-process run build their own)
    big = np.argmax(np.abs(Phi), axis=0)
    Phi *= np.where(Phi[big, np.arange(Phi.shape[1])] < 0.0, -1.0, 1.0)
    omega = np.where(rigid, 0.0, np.sqrt(np.clip(w, 0.0, None)))
    return omega, Phi


def project(model: FEModel, R: np.ndarray, name: str, info: dict) -> FEModel:
    """Galerkin projection of ``model`` onto the basis ``R`` (eq. 2.30): dense reduced matrices."""
    M, D, K = (R.T @ (A @ R) for A in (model.M, model.D, model.K))
    G = np.asarray(model.G @ R)
    sym = lambda A: 0.5 * (A + A.T)
    return FEModel(sym(np.asarray(M)), sym(np.asarray(K)), sym(np.asarray(D)), G, name,
                   {**info, "R": R, "full_n": model.n_dof})


def modal_truncation(model: FEModel, n_modes: int, shift: float = -1.0) -> FEModel:
    """Reduce to the lowest ``n_modes`` free-interface modes (rigid-body modes included, at ``omega = 0``)."""
    omega, Phi = free_modes(model.M, model.K, n_modes, shift)
    red = project(model, Phi, f"{model.name}_modal{n_modes}", {"kind": "modal_truncation", "omega": omega})
    red.M = np.eye(n_modes)              # exact by construction
    red.K = np.diag(omega ** 2)
    return red


def _partition(model: FEModel, boundary) -> tuple[np.ndarray, np.ndarray]:
    b = np.unique(np.asarray(boundary, dtype=int))
    i = np.setdiff1d(np.arange(model.n_dof), b)
    G = sp.csr_matrix(model.G)
    if abs(G[:, i]).sum() > 0:
        raise ValueError("the interface matrix G acts on internal DoFs; add them to the boundary set")
    return b, i


def _blocks(A, b, i):
    A = sp.csc_matrix(A)
    return A[b][:, b], A[b][:, i], A[i][:, b], A[i][:, i]


def _constraint_modes(K, b, i):
    import scipy.sparse.linalg as spla
    _, _, K_ib, K_ii = _blocks(K, b, i)
    lu = spla.splu(sp.csc_matrix(K_ii))
    return -lu.solve(_dense(K_ib)), K_ii


def _basis(n, b, i, blocks_b, blocks_i) -> np.ndarray:
    R = np.zeros((n, blocks_b.shape[1]))
    R[b] = blocks_b
    R[i] = blocks_i
    return R


def guyan(model: FEModel, boundary) -> FEModel:
    """Static condensation on the boundary DoFs: ``q~ = q_b`` (in ascending DoF order)."""
    b, i = _partition(model, boundary)
    psi, _ = _constraint_modes(model.K, b, i)
    R = _basis(model.n_dof, b, i, np.eye(b.size), psi)
    return project(model, R, f"{model.name}_guyan", {"kind": "guyan", "boundary": b, "Psi_c": psi})


def craig_bampton(model: FEModel, boundary, n_modes: int) -> FEModel:
    """Craig-Bampton reduction: ``q~ = [q_b; eta]`` with ``n_modes`` fixed-interface modes (mass-normalised)."""
    b, i = _partition(model, boundary)
    psi, K_ii = _constraint_modes(model.K, b, i)
    M_ii = sp.csc_matrix(model.M)[i][:, i]
    omega_i, Phi_i = free_modes(M_ii, K_ii, n_modes, shift=0.0)
    R = _basis(model.n_dof, b, i, np.hstack([np.eye(b.size), np.zeros((b.size, n_modes))]), np.hstack([psi, Phi_i]))
    red = project(model, R, f"{model.name}_cb{n_modes}", {"kind": "craig_bampton", "boundary": b, "Psi_c": psi,
                                                        "omega_fixed": omega_i})
    nb = b.size
    red.M[nb:, nb:] = np.eye(n_modes)               # exact by construction (mass-normalised Phi_i)
    red.K[nb:, :nb] = 0.0                           # K-orthogonality of constraint and fixed-interface modes
    red.K[:nb, nb:] = 0.0
    red.K[nb:, nb:] = np.diag(omega_i ** 2)
    return red
