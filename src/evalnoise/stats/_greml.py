r"""Restricted maximum likelihood (REML) for crossed and nested random effects, at the cells.

Model, one score per row: y = Xβ + Σ_k Z_k u_k + e, u_k ~ N(0, σ²_k I), e ~ N(0, σ²_e I).
Every random effect is constant within a design cell (a combination of facet levels), so
the scores reduce without loss to the cell means ȳ_c (n_c scores each) and the within-cell
sum of squares W ~ σ²_e χ²_{N−C}: the restricted likelihood of the scores is that of W plus
that of the cell means, Var(ȳ) = σ²_e H with

.. math::

    H = D + \sum_k \gamma_k Z_k Z_k',\qquad D = \mathrm{diag}(1/n_c + \gamma_{cell}),\qquad
    \gamma_k = \sigma^2_k/\sigma^2_e

(γ_cell: the effect whose levels are the cells, the top interaction when cells are
replicated). Profiling σ²_e out, the deviance to minimise over γ ≥ 0 is (Harville 1977;
Searle, Casella & McCulloch 1992, ch. 6)

.. math::

    d(\gamma) = (N-p)\log\hat\sigma^2_e + \log|H| + \log|X'H^{-1}X|,\qquad
    \hat\sigma^2_e = \frac{W + \bar y' P \bar y}{N - p},\qquad
    P = H^{-1} - H^{-1}X(X'H^{-1}X)^{-1}X'H^{-1},

with gradient ∂d/∂γ_k = tr(P Z_k Z_k') − ‖Z_k' P ȳ‖² / σ̂²_e. It is minimised by L-BFGS-B
with the exact gradient, the bounds γ_k ≥ 0 keeping every component non-negative (a
component at 0 is at the boundary, reported as such).

**Linear algebra.** With Λ = diag(√γ) over the levels of the random effects and
K = Z'D⁻¹Z, log|H| = log|D| + log|M̃| and H⁻¹ = D⁻¹ − D⁻¹ZΛM̃⁻¹ΛZ'D⁻¹ for
M̃ = I + ΛKΛ (the form lme4 uses, Bates et al. 2015, well defined at γ_k = 0). The levels
are split by one *cluster* facet (the task, as a rule): the levels of every effect that
contains it belong to one of its levels, so that block of M̃ is block-diagonal with one small
block per task, and the rest (time blocks, hosts, prompt variants: few levels) is a dense
block G. Block elimination through the Schur complement S = M̃_GG − M̃_GA M̃_AA⁻¹ M̃_AG costs
O(T·s³ + T·s²·g + g³) for T tasks of s levels each, so thousands of tasks cost milliseconds.
tr(Z_k'H⁻¹Z_k) = tr K_kk − tr(F_k'M̃⁻¹F_k) with F = ΛK is formed without dividing by γ_k,
so the gradient is exact at the boundary too.

References
----------
Bates, D., Mächler, M., Bolker, B. & Walker, S. (2015). Fitting linear mixed-effects models
using lme4. *Journal of Statistical Software* 67(1).
Harville, D. A. (1977). Maximum likelihood approaches to variance component estimation and
to related problems. *JASA* 72: 320–338.
Patterson, H. D. & Thompson, R. (1971). Recovery of inter-block information when block sizes
are unequal. *Biometrika* 58: 545–554.
Searle, S. R., Casella, G. & McCulloch, C. E. (1992). *Variance Components*. Wiley: ch. 6.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from .gdesign import CodedDesign

__all__ = ["RemlFit", "reml"]


@dataclass(frozen=True)
class RemlFit:
    """σ² of the effects fitted (in the order given) then the residual, and the fit's state."""

    sigma2: np.ndarray
    deviance: float
    converged: bool
    iterations: int
    message: str


class _Problem:
    def __init__(self, cd: CodedDesign, effects: Sequence[int]) -> None:
        self.cd = cd
        c = cd.n_cells
        self.c = c
        self.n = cd.count
        self.ybar = cd.mean
        self.x = cd.fixed_columns
        self.p = self.x.shape[1]
        self.n_obs = cd.n_obs
        self.w = cd.within_ss
        self.effects = list(effects)
        m = len(self.effects)
        self.m = m
        codes = [cd.cell_codes[k] for k in self.effects]
        levels = [cd.n_levels[k] for k in self.effects]
        self.codes, self.levels = codes, levels
        # the effect whose levels are the cells: a diagonal term of D
        self.diag = -1
        for i, (cc, lv) in enumerate(zip(codes, levels, strict=True)):
            if lv == c and np.unique(cc).size == c:
                self.diag = i
        rest = [i for i in range(m) if i != self.diag]
        # cluster facet: the one whose effects hold the most levels
        design = cd.design
        best, best_levels = None, 0
        for f in design.names:
            if design.facet(f).fixed:
                continue
            tot = sum(levels[i] for i in rest if f in cd.effects[self.effects[i]])
            if tot > best_levels:
                best, best_levels = f, tot
        self.clus = (
            [i for i in rest if best in cd.effects[self.effects[i]]] if best is not None else []
        )
        self.glob = [i for i in rest if i not in self.clus]
        if self.clus:
            cl_codes, n_cl = cd.effect_codes((best, *sorted(design.ancestors(best))))
        else:
            cl_codes, n_cl = np.zeros(c, dtype=np.int64), 1
        self.cl, self.t = cl_codes, n_cl
        # local positions of the cluster effects' levels within their cluster
        rows_cl, rows_eff, rows_lev = [], [], []
        for i in self.clus:
            lev_cl = np.zeros(levels[i], dtype=np.int64)
            lev_cl[codes[i]] = cl_codes
            rows_cl.append(lev_cl)
            rows_eff.append(np.full(levels[i], i))
            rows_lev.append(np.arange(levels[i]))
        if self.clus:
            all_cl = np.concatenate(rows_cl)
            all_eff = np.concatenate(rows_eff)
            all_lev = np.concatenate(rows_lev)
            order = np.argsort(all_cl, kind="stable")
            counts = np.bincount(all_cl, minlength=n_cl)
            start = np.concatenate([[0], np.cumsum(counts)[:-1]])
            local = np.empty(all_cl.size, dtype=np.int64)
            local[order] = np.arange(all_cl.size) - start[all_cl[order]]
            self.s = int(counts.max())
            self.eff_pos = np.full((n_cl, self.s), -1, dtype=np.int64)
            self.eff_pos[all_cl, local] = all_eff
            self.pos = {}
            for i in self.clus:
                sel = all_eff == i
                posmap = np.empty(levels[i], dtype=np.int64)
                posmap[all_lev[sel]] = local[sel]
                self.pos[i] = posmap[codes[i]]
        else:
            self.s = 0
            self.eff_pos = np.full((n_cl, 0), -1, dtype=np.int64)
            self.pos = {}
        offs = np.cumsum([0, *(levels[i] for i in self.glob)])
        self.g = int(offs[-1])
        self.gpos = {i: offs[j] + codes[i] for j, i in enumerate(self.glob)}
        self.eff_g = np.concatenate(
            [np.full(levels[i], i) for i in self.glob] or [np.zeros(0, dtype=np.int64)]
        ).astype(np.int64)
        s, g, t = self.s, self.g, self.t
        cells = np.arange(c)
        # bincount indices of K = Z'D⁻¹Z's blocks
        self.idx_aa = np.concatenate(
            [self.cl * s * s + self.pos[a] * s + self.pos[b] for a in self.clus for b in self.clus]
            or [np.zeros(0, dtype=np.int64)]
        )
        self.idx_ag = np.concatenate(
            [self.cl * s * g + self.pos[a] * g + self.gpos[b] for a in self.clus for b in self.glob]
            or [np.zeros(0, dtype=np.int64)]
        )
        self.idx_gg = np.concatenate(
            [self.gpos[a] * g + self.gpos[b] for a in self.glob for b in self.glob]
            or [np.zeros(0, dtype=np.int64)]
        )
        self.n_aa = len(self.clus) ** 2
        self.n_ag = len(self.clus) * len(self.glob)
        self.n_gg = len(self.glob) ** 2
        rows = [self.cl * s + self.pos[a] for a in self.clus]
        self.za = (
            sparse.csr_matrix(
                (np.ones(c * len(rows)), (np.concatenate(rows), np.tile(cells, len(rows)))),
                shape=(t * s, c),
            )
            if rows
            else sparse.csr_matrix((0, c))
        )
        grows = [self.gpos[b] for b in self.glob]
        self.zg = (
            sparse.csr_matrix(
                (np.ones(c * len(grows)), (np.concatenate(grows), np.tile(cells, len(grows)))),
                shape=(g, c),
            )
            if grows
            else sparse.csr_matrix((0, c))
        )
        self.ind = [
            sparse.csr_matrix((np.ones(c), (codes[i], cells)), shape=(levels[i], c))
            for i in range(m)
        ]

    # --- factorisation at γ -----------------------------------------------------------------

    def factor(self, gam: np.ndarray) -> dict:
        s, g, t = self.s, self.g, self.t
        d = 1.0 / self.n + (gam[self.diag] if self.diag >= 0 else 0.0)
        dinv = 1.0 / d
        theta = np.sqrt(np.maximum(gam, 0.0))
        th_a = np.where(self.eff_pos >= 0, theta[np.maximum(self.eff_pos, 0)], 0.0)
        th_g = theta[self.eff_g] if g else np.zeros(0)
        a = np.bincount(self.idx_aa, weights=np.tile(dinv, self.n_aa), minlength=t * s * s)
        a = a.reshape(t, s, s)
        b = np.bincount(self.idx_ag, weights=np.tile(dinv, self.n_ag), minlength=t * s * g)
        b = b.reshape(t, s, g)
        kgg = np.bincount(self.idx_gg, weights=np.tile(dinv, self.n_gg), minlength=g * g)
        kgg = kgg.reshape(g, g)
        if s:
            maa = th_a[:, :, None] * a * th_a[:, None, :]
            maa[:, np.arange(s), np.arange(s)] += 1.0
            chol = np.linalg.cholesky(maa)
            logdet_a = 2.0 * float(np.sum(np.log(np.diagonal(chol, axis1=1, axis2=2))))
            ainv = np.linalg.inv(maa)
            mag = th_a[:, :, None] * b * th_g[None, None, :]
            u = ainv @ mag
        else:
            logdet_a = 0.0
            ainv = np.zeros((t, 0, 0))
            mag = np.zeros((t, 0, g))
            u = mag
        if g:
            sch = th_g[:, None] * kgg * th_g[None, :] + np.eye(g)
            if s:
                sch -= np.einsum("tsg,tsh->gh", mag, u)
            cs = np.linalg.cholesky(sch)
            logdet_s = 2.0 * float(np.sum(np.log(np.diag(cs))))
            sinv = np.linalg.inv(sch)
            sinv = 0.5 * (sinv + sinv.T)
        else:
            logdet_s = 0.0
            sinv = np.zeros((0, 0))
        return {
            "dinv": dinv,
            "logdet_h": float(np.sum(np.log(d))) + logdet_a + logdet_s,
            "th_a": th_a,
            "th_g": th_g,
            "a": a,
            "b": b,
            "kgg": kgg,
            "ainv": ainv,
            "u": u,
            "sinv": sinv,
        }

    def hinv(self, f: dict, v: np.ndarray) -> np.ndarray:
        """H⁻¹ v for a (C, r) array."""
        dv = f["dinv"][:, None] * v
        t, s = self.t, self.s
        r = v.shape[1]
        wa = (self.za @ dv).reshape(t, s, r) * f["th_a"][:, :, None]
        wg = (self.zg @ dv) * f["th_g"][:, None]
        if self.g:
            rhs = wg - np.einsum("tsg,tsr->gr", f["u"], wa) if s else wg
            xg = f["sinv"] @ rhs
        else:
            xg = np.zeros((0, r))
        xa = (f["ainv"] @ wa - f["u"] @ xg[None, :, :]) if s else wa
        back = self.za.T @ (xa * f["th_a"][:, :, None]).reshape(t * s, r)
        back = back + self.zg.T @ (xg * f["th_g"][:, None])
        return dv - f["dinv"][:, None] * back

    # --- likelihood, score and average information ----------------------------------------

    def state(self, gam: np.ndarray) -> dict:
        """Everything the likelihood needs at γ: the factorisation, P_H ȳ, ȳ'P_H ȳ, logdets."""
        f = self.factor(gam)
        hr = self.hinv(f, np.column_stack([self.x, self.ybar]))
        hx, hy = hr[:, : self.p], hr[:, self.p]
        xhx = self.x.T @ hx
        cx = np.linalg.cholesky(xhx)
        f["logdet_x"] = 2.0 * float(np.sum(np.log(np.diag(cx))))
        f["xhx_inv"] = np.linalg.inv(xhx)
        beta = f["xhx_inv"] @ (self.x.T @ hy)
        f["hx"] = hx
        f["py"] = hy - hx @ beta
        f["q"] = float(self.ybar @ f["py"])
        return f

    def loglik(self, f: dict, sigma_e: float) -> float:
        """−2 × restricted log-likelihood (up to a constant) at (γ of ``f``, σ²_e)."""
        dof = self.n_obs - self.p
        return dof * np.log(sigma_e) + f["logdet_h"] + f["logdet_x"] + (self.w + f["q"]) / sigma_e

    def profiled(self, f: dict) -> tuple[float, float]:
        """(σ̂²_e, deviance) with σ²_e profiled out: σ̂²_e = (W + ȳ'P_Hȳ)/(N − p)."""
        sig = (self.w + f["q"]) / (self.n_obs - self.p)
        return sig, self.loglik(f, sig)

    def trace_p(self, f: dict) -> np.ndarray:
        """tr(P_H Z_k Z_k') for every effect."""
        t1 = self._traces(f)
        out = np.empty(self.m)
        for k in range(self.m):
            gk = self.ind[k] @ f["hx"]
            out[k] = t1[k] - float(np.sum((gk @ f["xhx_inv"]) * gk))
        return out

    def score_ai(self, f: dict, sigma2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Score of the restricted log-likelihood in (σ²_1 … σ²_m, σ²_e) and the average
        information matrix (Gilmour, Thompson & Cullis 1995): with V = σ²_e H,
        ∂ℓ/∂σ²_k = −½[tr(P V_k) − ȳ'P V_k P ȳ], AI_kl = ½ ȳ'P V_k P V_l P ȳ, V_k = Z_k Z_k'
        (V_e = diag(1/n_c) at the cells, plus the within-cell part)."""
        se = sigma2[-1]
        tp = self.trace_p(f)
        gam = sigma2[:-1] / se
        py = f["py"]
        m = self.m
        score = np.empty(m + 1)
        u = np.empty((self.c, m + 1))
        for k in range(m):
            zk = self.ind[k] @ py
            score[k] = -0.5 * (tp[k] / se - float(zk @ zk) / se**2)
            u[:, k] = (self.ind[k].T @ zk) / se
        d0py = py / self.n
        tr_e = (self.c - self.p) - float(np.sum(gam * tp))
        score[m] = -0.5 * (tr_e / se - float(py @ d0py) / se**2)
        score[m] -= 0.5 * ((self.n_obs - self.c) / se - self.w / se**2)
        u[:, m] = d0py / se
        hu = self.hinv(f, u)
        pu = hu - f["hx"] @ (f["xhx_inv"] @ (self.x.T @ hu))
        ai = 0.5 * (u.T @ pu) / se
        ai[m, m] += 0.5 * self.w / se**3
        return score, 0.5 * (ai + ai.T)

    def evaluate(self, gam: np.ndarray, grad: bool = True) -> tuple[float, np.ndarray]:
        """Profiled deviance d(γ) and its gradient (the L-BFGS-B fallback)."""
        f = self.state(gam)
        sig, dev = self.profiled(f)
        if not grad:
            return float(dev), np.zeros(self.m)
        tp = self.trace_p(f)
        g_out = np.empty(self.m)
        for k in range(self.m):
            uk = self.ind[k] @ f["py"]
            g_out[k] = tp[k] - float(uk @ uk) / sig
        return float(dev), g_out

    def _traces(self, f: dict) -> np.ndarray:
        """tr(Z_k'H⁻¹Z_k) for every effect, without dividing by γ_k."""
        out = np.zeros(self.m)
        s, g = self.s, self.g
        a, b, kgg = f["a"], f["b"], f["kgg"]
        ainv, u, sinv = f["ainv"], f["u"], f["sinv"]
        th_a, th_g = f["th_a"], f["th_g"]
        if s:
            minv_aa = ainv + (u @ sinv[None]) @ u.transpose(0, 2, 1) if g else ainv
            fa = th_a[:, :, None] * a
            quad = np.einsum("tap,tab,tbp->tp", fa, minv_aa, fa)
            if g:
                fg = th_g[None, :, None] * b.transpose(0, 2, 1)
                minv_ag = -(u @ sinv[None])
                quad += 2.0 * np.einsum("tap,tag,tgp->tp", fa, minv_ag, fg)
                quad += np.einsum("tgp,gh,thp->tp", fg, sinv, fg)
            t1 = np.diagonal(a, axis1=1, axis2=2) - quad
            valid = self.eff_pos >= 0
            out += np.bincount(self.eff_pos[valid], weights=t1[valid], minlength=self.m)
        if g:
            fag = th_a[:, :, None] * b if s else np.zeros((self.t, 0, g))
            quad_g = np.einsum("taj,tab,tbj->j", fag, ainv, fag) if s else np.zeros(g)
            v = np.einsum("tsg,tsj->gj", u, fag) if s else np.zeros((g, g))
            fgg = th_g[:, None] * kgg
            diff = v - fgg
            quad_g += np.einsum("gj,gh,hj->j", diff, sinv, diff)
            t1g = np.diag(kgg) - quad_g
            out += np.bincount(self.eff_g, weights=t1g, minlength=self.m)
        if self.diag >= 0:
            dinv = f["dinv"]
            q = np.zeros(self.c)
            cl = self.cl
            if s:
                minv_aa = ainv + (u @ sinv[None]) @ u.transpose(0, 2, 1) if g else ainv
                for i in self.clus:
                    for j in self.clus:
                        q += (
                            th_a[cl, self.pos[i]]
                            * th_a[cl, self.pos[j]]
                            * minv_aa[cl, self.pos[i], self.pos[j]]
                        )
                if g:
                    minv_ag = -(u @ sinv[None])
                    for i in self.clus:
                        for j in self.glob:
                            q += (
                                2.0
                                * th_a[cl, self.pos[i]]
                                * th_g[self.gpos[j]]
                                * minv_ag[cl, self.pos[i], self.gpos[j]]
                            )
            for i in self.glob:
                for j in self.glob:
                    q += th_g[self.gpos[i]] * th_g[self.gpos[j]] * sinv[self.gpos[i], self.gpos[j]]
            out[self.diag] = float(np.sum(dinv - dinv**2 * q))
        return out


def reml(
    cd: CodedDesign,
    effects: Sequence[int],
    start: np.ndarray | None = None,
    *,
    max_iter: int = 200,
) -> RemlFit:
    """REML estimates of the components of ``effects`` (indices into ``cd.effects``) and of
    the residual; ``start`` are starting values of σ² (effects then residual).

    Average-information Newton steps (Gilmour, Thompson & Cullis 1995) on (σ²_k, σ²_e),
    projected onto σ²_k ≥ 0 with the components at 0 whose score points outside held there
    (an active set) and the step halved until the likelihood rises; converged when the
    likelihood changes by less than 1e-13 (relative) and every step by less than 1e-11 of the
    total variance. Should that fail, L-BFGS-B on the profiled deviance finishes the job.
    """
    prob = _Problem(cd, effects)
    m = prob.m
    if start is None:
        sig0 = np.append(np.full(m, 0.1), 1.0)
    else:
        sig0 = np.nan_to_num(np.asarray(start, dtype=float), nan=0.0)
        if not sig0[-1] > 0:
            sig0[-1] = max(float(np.sum(np.maximum(sig0, 0.0))), 1e-8)
        sig0 = np.maximum(sig0, 0.0)
    scale = float(np.sum(sig0))
    phi = sig0.copy()
    f = prob.state(phi[:-1] / phi[-1])
    ll = prob.loglik(f, phi[-1])
    converged, it, message = m == 0, 0, "no random effect" if m == 0 else ""
    while not converged and it < max_iter:
        it += 1
        score, ai = prob.score_ai(f, phi)
        fixed = np.append((phi[:-1] <= 0.0) & (score[:-1] <= 0.0), False)
        free = ~fixed
        try:
            step = np.zeros(m + 1)
            step[free] = np.linalg.solve(ai[np.ix_(free, free)], score[free])
        except np.linalg.LinAlgError:
            message = "average information singular"
            break
        t = 1.0
        accepted = False
        for _ in range(30):
            new = phi + t * step
            new[:-1] = np.maximum(new[:-1], 0.0)
            if new[-1] > 0:
                fn = prob.state(new[:-1] / new[-1])
                lln = prob.loglik(fn, new[-1])
                if lln <= ll + 1e-12 * abs(ll):
                    accepted = True
                    break
            t *= 0.5
        if not accepted:
            message = "no step raised the likelihood"
            break
        moved = np.abs(new - phi)
        change = ll - lln
        phi, f, ll = new, fn, lln
        if change < 1e-13 * max(abs(ll), 1.0) and np.all(moved <= 1e-11 * max(scale, 1e-300)):
            converged, message = True, f"converged in {it} average-information steps"
    if not converged:
        from scipy import optimize  # only for the fallback: an import most fits never need

        gam0 = phi[:-1] / phi[-1]
        n_scale = max(float(prob.n_obs), 1.0)

        def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
            try:
                dev, grad = prob.evaluate(x)
            except np.linalg.LinAlgError:  # a ratio so large the factorisation fails
                return 1e300, np.zeros(m)
            return dev / n_scale, grad / n_scale

        res = optimize.minimize(
            fun, gam0, jac=True, method="L-BFGS-B", bounds=[(0.0, 1e8)] * m,
            options={"maxiter": 1000, "ftol": 1e-15, "gtol": 1e-10, "maxcor": 20},
        )  # fmt: skip
        gam = np.where(res.x < 1e-10, 0.0, res.x)
        f = prob.state(gam)
        sig, ll = prob.profiled(f)
        phi = np.append(gam * sig, sig)
        converged = bool(res.success)
        message = f"{message}; L-BFGS-B: {res.message}"
        it += int(res.nit)
    phi[:-1] = np.where(phi[:-1] < 1e-10 * phi[-1], 0.0, phi[:-1])
    return RemlFit(phi, float(ll), converged, it, message)
