#!/usr/bin/env python3
"""Checks of the cvxpy shim against independent solutions.

Run: /usr/bin/python3 -m unittest discover -s scheduler/gavel/testdata/reference/shim -p 'test_*.py'
Needs numpy, scipy and cvxopt (Debian python3-numpy python3-scipy python3-cvxopt).
"""

import os
import sys
import unittest

import numpy as np
from scipy.optimize import linprog

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cvxpy as cp  # noqa: E402  (the shim)


def base_constraints(x, sf, num_workers):
    return [x >= 0,
            cp.sum(cp.multiply(sf, x), axis=0) <= num_workers,
            cp.sum(x, axis=1) <= 1]


def maxmin_highs(coef, sf, num_workers):
    """max t s.t. coef_i . x_i >= t, base constraints; by hand with linprog."""
    m, n = coef.shape
    nv = m * n + 1
    c = np.zeros(nv)
    c[-1] = -1
    rows, rhs = [], []
    for i in range(m):
        r = np.zeros(nv)
        r[i * n:(i + 1) * n] = -coef[i]
        r[-1] = 1
        rows.append(r)
        rhs.append(0)
    for j in range(n):
        r = np.zeros(nv)
        for i in range(m):
            r[i * n + j] = sf[i, j]
        rows.append(r)
        rhs.append(num_workers[j])
    for i in range(m):
        r = np.zeros(nv)
        r[i * n:(i + 1) * n] = 1
        rows.append(r)
        rhs.append(1)
    res = linprog(c, A_ub=np.array(rows), b_ub=np.array(rhs),
                  bounds=[(0, None)] * (m * n) + [(None, None)], method="highs")
    return -res.fun


class ShimTest(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(7)

    def problem(self, m=12, n=3):
        tput = self.rng.uniform(0.1, 10, size=(m, n))
        sf = np.repeat(self.rng.choice([1, 2, 4], size=(m, 1)), n, axis=1)
        return tput, sf, np.array([4, 6, 8])

    def test_maxmin_matches_linprog_both_backends(self):
        for trial in range(5):
            tput, sf, nw = self.problem()
            coef = tput * sf
            want = maxmin_highs(coef, sf, nw)
            for backend in ("cvxopt", "highs"):
                os.environ["GAVEL_SHIM_SOLVER"] = backend
                x = cp.Variable(tput.shape)
                prob = cp.Problem(cp.Maximize(cp.min(cp.sum(cp.multiply(coef, x), axis=1))),
                                  base_constraints(x, sf, nw))
                got = prob.solve(solver="ECOS")
                self.assertEqual(prob.status, "optimal")
                self.assertAlmostEqual(got, want, delta=1e-6 * max(1, abs(want)))
                xv = x.value
                # The allocation itself satisfies the constraints.
                self.assertTrue((xv >= -1e-7).all())
                self.assertTrue((xv.sum(axis=1) <= 1 + 1e-7).all())
                self.assertTrue(((sf * xv).sum(axis=0) <= nw + 1e-6).all())
                self.assertAlmostEqual((coef * xv).sum(axis=1).min(), want,
                                       delta=1e-5 * max(1, abs(want)))
        os.environ.pop("GAVEL_SHIM_SOLVER", None)

    def test_chol2_gives_the_ldl_point(self):
        # GAVEL_SHIM_KKT=chol2 is a speed-up only: the interior point it ends
        # at must be ldl's (the same central path), not merely an optimum.
        # One trial has agnostic rows (all throughputs 1), the degenerate
        # case where chol2 can stall (then the shim falls back to ldl).
        for trial in range(4):
            tput, sf, nw = self.problem(m=40)
            if trial == 3:
                tput = np.ones_like(tput)
            coef = tput * sf
            got = {}
            for kkt in ("ldl", "chol2"):
                os.environ["GAVEL_SHIM_KKT"] = kkt
                x = cp.Variable(tput.shape)
                prob = cp.Problem(cp.Maximize(cp.min(cp.sum(cp.multiply(coef, x), axis=1))),
                                  base_constraints(x, sf, nw))
                prob.solve(solver="ECOS")
                self.assertEqual(prob.status, "optimal", (trial, kkt))
                got[kkt] = x.value
            self.assertLess(np.abs(got["ldl"] - got["chol2"]).max(), 1e-6, trial)
        os.environ.pop("GAVEL_SHIM_KKT", None)

    def test_feasibility_lp_status(self):
        tput, sf, nw = self.problem(m=6)
        steps = self.rng.uniform(1e3, 1e5, size=6)
        for backend in ("cvxopt", "highs"):
            os.environ["GAVEL_SHIM_SOLVER"] = backend
            for T, want in ((1e9, "optimal"), (1e-3, "infeasible")):
                x = cp.Variable(tput.shape)
                cons = base_constraints(x, sf, nw)
                cons.append(cp.sum(cp.multiply(tput, x), axis=1) >= steps / T)
                prob = cp.Problem(cp.Maximize(1), cons)
                prob.solve()
                self.assertEqual(prob.status, want, (backend, T))
                self.assertEqual(x.value is None, want != "optimal")
        os.environ.pop("GAVEL_SHIM_SOLVER", None)

    def test_inv_pos_minmax_matches_bisection(self):
        # min max_i (a_i + r_i * inv_pos(t_i . x_i)) / e_i, base constraints;
        # checked against bisection on rho with LP feasibility (HiGHS).
        m, n = 8, 3
        tput, sf, nw = self.problem(m=m)
        a = self.rng.uniform(0, 1000, size=m)
        r = self.rng.uniform(1e3, 1e5, size=m)
        e = self.rng.uniform(1e3, 1e4, size=m)
        x = cp.Variable((m, n))
        terms = [(a[i] + r[i] * cp.inv_pos(cp.sum(cp.multiply(tput[i], x[i])))) / np.array([e[i]])
                 for i in range(m)]
        prob = cp.Problem(cp.Minimize(cp.maximum(*terms)), base_constraints(x, sf, nw))
        got = prob.solve()
        self.assertEqual(prob.status, "optimal")

        def feasible(rho):
            need = []
            for i in range(m):
                slack = rho * e[i] - a[i]
                if slack <= 0:
                    return False
                need.append(r[i] / slack)
            nv = m * n
            rows, rhs = [], []
            for i in range(m):
                row = np.zeros(nv)
                row[i * n:(i + 1) * n] = -tput[i]
                rows.append(row)
                rhs.append(-need[i])
            for j in range(n):
                row = np.zeros(nv)
                for i in range(m):
                    row[i * n + j] = sf[i, j]
                rows.append(row)
                rhs.append(nw[j])
            for i in range(m):
                row = np.zeros(nv)
                row[i * n:(i + 1) * n] = 1
                rows.append(row)
                rhs.append(1)
            res = linprog(np.zeros(nv), A_ub=np.array(rows), b_ub=np.array(rhs),
                          bounds=[(0, None)] * nv, method="highs")
            return res.status == 0

        lo, hi = 0.0, 1.0
        while not feasible(hi):
            hi *= 2
        for _ in range(60):
            mid = (lo + hi) / 2
            if feasible(mid):
                hi = mid
            else:
                lo = mid
        self.assertAlmostEqual(got, hi, delta=1e-5 * hi)
        # The returned x attains (about) that value.
        vals = [(a[i] + r[i] / (tput[i] @ x.value[i])) / e[i] for i in range(m)]
        self.assertAlmostEqual(max(vals), hi, delta=1e-4 * hi)

    def test_indexing_reshape_stack(self):
        x = cp.Variable((3, 2))
        x.value = np.arange(6.0).reshape(3, 2)
        np.testing.assert_allclose(x[1].value, [2, 3])
        np.testing.assert_allclose(x[[0, 2]].value, [[0, 1], [4, 5]])
        np.testing.assert_allclose(cp.sum(x, axis=0).value, [6, 9])
        np.testing.assert_allclose(cp.sum(x, axis=1).value, [1, 5, 9])
        self.assertEqual(cp.sum(x).value, 15)
        np.testing.assert_allclose(cp.reshape(x, (2, 3), order="C").value,
                                   np.arange(6.0).reshape(2, 3))
        np.testing.assert_allclose(cp.reshape(x, (2, 3)).value,
                                   np.arange(6.0).reshape(3, 2).reshape((2, 3), order="F"))
        np.testing.assert_allclose(cp.hstack([x[0, 0], x[2, 1]]).value, [0, 5])
        np.testing.assert_allclose((2 * x - 1)[2].value, [7, 9])
        np.testing.assert_allclose(cp.multiply(np.array([1, 10]), x)[1].value, [2, 30])

    def test_unsupported_is_loud(self):
        x = cp.Variable(2)
        with self.assertRaises(NotImplementedError):
            cp.Parameter()
        with self.assertRaises(NotImplementedError):
            cp.multiply(x, x)
        with self.assertRaises(NotImplementedError):
            cp.Problem(cp.Minimize(cp.min(x)), [x >= 0]).solve()


if __name__ == "__main__":
    unittest.main()
