"""A small stand-in for the part of cvxpy that Gavel's policies use.

Our own code (synergy project), written so that Gavel's original simulator
can run unmodified on a machine without PyPI: Debian ships numpy, scipy and
cvxopt but not cvxpy or ECOS.  It is not cvxpy; it implements only what
Gavel's non-packed policies need:

  Variable, Maximize, Minimize, Problem(...).solve(solver=...), .status,
  Variable.value, sum (axis None/0/1), multiply, min (reduction, concave),
  maximum (of scalar convex terms), inv_pos (of an affine scalar), reshape,
  hstack, vstack, indexing, +, -, * and / by constants, and the comparisons
  >=, <= and == that make constraints.

Supported problem shapes (the ones Gavel builds):
  * Maximize/Minimize an affine scalar or a constant (an LP or a
    feasibility LP: min_total_duration's Maximize(1));
  * Maximize(min(affine vector)): epigraph LP (max_min_fairness*);
  * Minimize(maximum(f_1, ..., f_k)) or Minimize(f) where each f is affine
    plus non-negative multiples of inv_pos(affine scalar): an SOCP, each
    inv_pos through a rotated second-order cone (finish_time_fairness*).

Solvers.  ECOS, which Gavel uses by default, is a primal-dual interior-point
method: on an LP with many optimal solutions it returns a point near the
middle of the optimal face, not a vertex.  The default backend here is
therefore cvxopt's conic interior-point solver (cvxopt.solvers.conelp, the
same family), with ECOS's default tolerances (1e-8).  Setting
GAVEL_SHIM_SOLVER=highs solves LPs with scipy's HiGHS (dual simplex, a
vertex) instead; SOCPs always go to cvxopt.  Anything outside the shapes
above raises NotImplementedError naming the construct.
"""

import os

import builtins as _builtins

import numpy as np
import scipy.sparse as sp

__version__ = "0.0-synergy-shim"

OPTIMAL = "optimal"
OPTIMAL_INACCURATE = "optimal_inaccurate"
INFEASIBLE = "infeasible"
UNBOUNDED = "unbounded"
SOLVER_ERROR = "solver_error"

ECOS = "ECOS"
SCS = "SCS"
GUROBI = "GUROBI"

_next_id = [0]

# Counters a driver may read to report how many problems were solved.
stats = {"lp": 0, "socp": 0, "seconds": 0.0, "status": {}, "kkt": {"chol2": 0, "ldl fallback": 0}}


def _shape_of(shape):
    if shape is None or shape == ():
        return ()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def _size(shape):
    return int(np.prod(shape)) if shape else 1


def _const(c):
    a = np.asarray(c, dtype=float)
    return a


class _Unsupported(NotImplementedError):
    pass


class Expression:
    """An affine expression: value = sum_v A_v @ vec(v) + const (C order)."""

    # Make numpy defer to our reflected operators (ndarray * expr etc.).
    __array_ufunc__ = None

    def __init__(self, shape, terms, const):
        self.shape = _shape_of(shape)
        self.terms = terms  # id -> (Variable, csr matrix size x var.size)
        self.const = np.asarray(const, dtype=float).reshape(-1)
        assert self.const.size == self.size

    @property
    def size(self):
        return _size(self.shape)

    @property
    def ndim(self):
        return len(self.shape)

    def is_scalar(self):
        return self.size == 1

    # -- structural helpers -------------------------------------------------
    def _select(self, idx, shape):
        """Rows idx (flat C indices of self) arranged in shape."""
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        terms = {k: (v, m[idx]) for k, (v, m) in self.terms.items()}
        return Expression(shape, terms, self.const[idx])

    def _broadcast(self, shape):
        shape = _shape_of(shape)
        if shape == self.shape:
            return self
        base = np.arange(self.size).reshape(self.shape)
        idx = np.broadcast_to(base, shape)
        return self._select(idx, shape)

    def _scale_rows(self, c):
        """Elementwise product with a constant array c of self's shape."""
        c = np.asarray(c, dtype=float).reshape(-1)
        d = sp.diags(c)
        terms = {k: (v, (d @ m).tocsr()) for k, (v, m) in self.terms.items()}
        return Expression(self.shape, terms, self.const * c)

    def __getitem__(self, key):
        base = np.arange(self.size).reshape(self.shape)
        idx = base[key]
        return self._select(idx, np.shape(idx))

    @property
    def T(self):
        base = np.arange(self.size).reshape(self.shape).T
        return self._select(base, base.shape)

    # -- arithmetic ------------------------------------------------------------
    def __add__(self, other):
        if isinstance(other, _Convex):
            return other.__add__(self)
        if not isinstance(other, Expression):
            c = _const(other)
            shape = np.broadcast_shapes(self.shape, c.shape)
            e = self._broadcast(shape)
            return Expression(shape, e.terms,
                              e.const + np.broadcast_to(c, shape).reshape(-1))
        shape = np.broadcast_shapes(self.shape, other.shape)
        a, b = self._broadcast(shape), other._broadcast(shape)
        terms = dict(a.terms)
        for k, (v, m) in b.terms.items():
            if k in terms:
                terms[k] = (v, (terms[k][1] + m).tocsr())
            else:
                terms[k] = (v, m)
        return Expression(shape, terms, a.const + b.const)

    __radd__ = __add__

    def __neg__(self):
        return self._scale_rows(-np.ones(self.size))

    def __sub__(self, other):
        return self + (-other if isinstance(other, (Expression, _Convex))
                       else -_const(other))

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        if isinstance(other, (Expression, _Convex)):
            raise _Unsupported("shim: product of two expressions")
        c = _const(other)
        if c.size == 1:
            return self._scale_rows(np.full(self.size, float(c.reshape(-1)[0])))
        return multiply(c, self)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, (Expression, _Convex)):
            raise _Unsupported("shim: division by an expression")
        return self * (1.0 / _const(other))

    def __matmul__(self, other):
        raise _Unsupported("shim: matrix product")

    # -- constraints -------------------------------------------------------------
    def __le__(self, other):
        return Constraint(self - other, "<=")

    def __ge__(self, other):
        if isinstance(other, _Convex):
            return other.__le__(self)
        return Constraint(-(self - other), "<=")

    def __eq__(self, other):
        return Constraint(self - other, "==")

    __hash__ = object.__hash__

    # -- value ---------------------------------------------------------------------
    @property
    def value(self):
        out = self.const.copy()
        for v, m in self.terms.values():
            if v.value is None:
                return None
            out = out + m @ np.asarray(v.value, dtype=float).reshape(-1)
        return out.reshape(self.shape) if self.shape else float(out[0])


class Variable(Expression):
    def __init__(self, shape=(), name=None, **kwargs):
        if kwargs:
            raise _Unsupported("shim: Variable attributes %s" % sorted(kwargs))
        shape = _shape_of(shape)
        n = _size(shape)
        _next_id[0] += 1
        self.id = _next_id[0]
        self.name = name
        self._value = None
        Expression.__init__(self, shape,
                            {self.id: (self, sp.identity(n, format="csr"))},
                            np.zeros(n))

    @property
    def value(self):
        return self._value

    @value.setter
    def value(self, v):
        self._value = None if v is None else np.asarray(v, dtype=float).reshape(self.shape)


class Parameter:
    def __init__(self, *args, **kwargs):
        raise _Unsupported(
            "shim: cvxpy.Parameter (used only by Gavel's water-filling "
            "policies) is not implemented")


class Constant(Expression):
    def __init__(self, value):
        c = _const(value)
        Expression.__init__(self, c.shape, {}, c.reshape(-1))


def _as_expr(x):
    if isinstance(x, Expression):
        return x
    if isinstance(x, _Convex):
        return x
    return Constant(x)


class _Convex:
    """Scalar convex: aff + sum_k coef_k * inv_pos(g_k), coef_k >= 0."""

    __array_ufunc__ = None

    def __init__(self, aff, invs, shape=()):
        self.aff = aff          # affine Expression of size 1
        self.invs = invs        # list of (coef, Expression size 1)
        self.shape = _shape_of(shape)

    def _map(self, scale, add=None):
        aff = self.aff * scale
        if add is not None:
            aff = aff + add
        return _Convex(aff, [(c * scale, g) for c, g in self.invs], self.shape)

    def __add__(self, other):
        if isinstance(other, _Convex):
            return _Convex(self.aff + other.aff, self.invs + other.invs,
                           np.broadcast_shapes(self.shape, other.shape))
        o = _as_expr(other)
        if o.size != 1:
            raise _Unsupported("shim: convex scalar plus a non-scalar")
        return _Convex(self.aff + _flat1(o), list(self.invs),
                       np.broadcast_shapes(self.shape, o.shape))

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, _Convex):
            raise _Unsupported("shim: difference of convex expressions")
        return self + (-_as_expr(other))

    def __mul__(self, other):
        if isinstance(other, (Expression, _Convex)):
            raise _Unsupported("shim: product with a convex expression")
        c = _const(other)
        if c.size != 1 or float(c.reshape(-1)[0]) < 0:
            raise _Unsupported("shim: convex expression times a negative or "
                               "non-scalar constant")
        return _Convex(self.aff * float(c.reshape(-1)[0]),
                       [(k * float(c.reshape(-1)[0]), g) for k, g in self.invs],
                       np.broadcast_shapes(self.shape, c.shape))

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, (Expression, _Convex)):
            raise _Unsupported("shim: division by an expression")
        c = _const(other)
        if c.size != 1 or float(c.reshape(-1)[0]) <= 0:
            raise _Unsupported("shim: convex expression divided by a "
                               "non-positive or non-scalar constant")
        out = self * (1.0 / float(c.reshape(-1)[0]))
        out.shape = np.broadcast_shapes(self.shape, c.shape)
        return out

    def __le__(self, other):
        o = _as_expr(other)
        if isinstance(o, _Convex):
            raise _Unsupported("shim: convex <= convex")
        return _ConvexConstraint(self, _flat1(o))

    def __ge__(self, other):
        raise _Unsupported("shim: convex expression >= something")

    def is_scalar(self):
        return True

    @property
    def value(self):
        v = self.aff.value
        if v is None:
            return None
        total = float(np.asarray(v).reshape(-1)[0])
        for c, g in self.invs:
            gv = float(np.asarray(g.value).reshape(-1)[0])
            total += c / gv if gv > 0 else np.inf
        return total


def _flat1(e):
    """An affine expression of size 1 as shape ()."""
    if e.size != 1:
        raise _Unsupported("shim: expected a scalar expression, got shape %s"
                           % (e.shape,))
    return e._select([0], ())


class _MinOf:
    """min(affine vector): concave; only as a Maximize objective."""

    def __init__(self, expr):
        self.expr = expr
        self.shape = ()

    @property
    def value(self):
        v = self.expr.value
        return None if v is None else float(np.min(v))


class _MaxOf:
    """maximum of scalar convex/affine terms: only as a Minimize objective."""

    def __init__(self, items):
        self.items = items
        self.shape = ()

    @property
    def value(self):
        vals = [it.value for it in self.items]
        if any(v is None for v in vals):
            return None
        return float(np.max([np.max(v) for v in vals]))


# -- atoms ------------------------------------------------------------------------

def multiply(a, b):
    if isinstance(a, Expression) and isinstance(b, Expression):
        if not a.terms:
            a, b = b, a
        if not b.terms:
            c = b.const.reshape(b.shape)
            return multiply(c, a)
        raise _Unsupported("shim: multiply of two variable expressions")
    if isinstance(a, Expression):
        a, b = b, a
    if not isinstance(b, Expression):
        return np.multiply(a, b)
    c = _const(a)
    shape = np.broadcast_shapes(c.shape, b.shape)
    e = b._broadcast(shape)
    return e._scale_rows(np.broadcast_to(c, shape).reshape(-1))


def sum(expr, axis=None, keepdims=False):
    if keepdims:
        raise _Unsupported("shim: sum(keepdims=True)")
    if isinstance(expr, (list, tuple)):
        out = expr[0]
        for e in expr[1:]:
            out = out + e
        return out
    expr = _as_expr(expr)
    if isinstance(expr, _Convex):
        raise _Unsupported("shim: sum of a convex expression")
    if axis is None:
        out_shape = ()
        out_idx = np.zeros(expr.size, dtype=np.int64)
    else:
        if axis < 0:
            axis += expr.ndim
        out_shape = tuple(s for i, s in enumerate(expr.shape) if i != axis)
        grid = np.arange(_size(out_shape)).reshape(out_shape)
        out_idx = np.broadcast_to(np.expand_dims(grid, axis), expr.shape).reshape(-1)
    n_out = _size(out_shape)
    agg = sp.csr_matrix((np.ones(expr.size), (out_idx, np.arange(expr.size))),
                        shape=(n_out, expr.size))
    terms = {k: (v, (agg @ m).tocsr()) for k, (v, m) in expr.terms.items()}
    return Expression(out_shape, terms, agg @ expr.const)


def reshape(expr, shape, order="F"):
    expr = _as_expr(expr)
    shape = _shape_of(shape)
    if _size(shape) != expr.size:
        raise ValueError("cannot reshape size %d into %s" % (expr.size, shape))
    seq = np.arange(expr.size).reshape(expr.shape).ravel(order=order)
    idx = seq.reshape(shape, order=order)
    return expr._select(idx, shape)


def hstack(items):
    items = [_as_expr(i) for i in items]
    if all(i.ndim <= 1 for i in items):
        flat = [i._select(np.arange(i.size), (i.size,)) for i in items]
        return _concat(flat, (_builtins.sum(i.size for i in flat),))
    raise _Unsupported("shim: hstack of matrices")


def vstack(items):
    items = [_as_expr(i) for i in items]
    if all(i.ndim == 0 or (i.ndim == 1 and i.size == 1) for i in items):
        return _concat(items, (len(items), 1))
    if all(i.ndim == 1 for i in items) and len({i.size for i in items}) == 1:
        return _concat(items, (len(items), items[0].size))
    raise _Unsupported("shim: vstack of these shapes")


def _concat(items, shape):
    ids = {}
    for it in items:
        for k, (v, _) in it.terms.items():
            ids[k] = v
    terms = {}
    for k, v in ids.items():
        blocks = []
        for it in items:
            if k in it.terms:
                blocks.append(it.terms[k][1])
            else:
                blocks.append(sp.csr_matrix((it.size, v.size)))
        terms[k] = (v, sp.vstack(blocks, format="csr"))
    const = np.concatenate([it.const for it in items])
    return Expression(shape, terms, const)


def min(expr, axis=None):
    if axis is not None:
        raise _Unsupported("shim: min(axis=...)")
    return _MinOf(_as_expr(expr))


def max(expr, axis=None):
    if axis is not None:
        raise _Unsupported("shim: max(axis=...)")
    e = _as_expr(expr)
    return _MaxOf([e[i] if e.ndim else e for i in range(e.shape[0])]
                  if e.ndim == 1 else [e])


def inv_pos(expr):
    e = _as_expr(expr)
    if isinstance(e, _Convex):
        raise _Unsupported("shim: inv_pos of a non-affine expression")
    e = _flat1(e)
    return _Convex(Constant(0.0), [(1.0, e)], ())


def maximum(*args):
    items = []
    for a in args:
        if isinstance(a, _MaxOf):
            items.extend(a.items)
        else:
            items.append(_as_expr(a))
    return _MaxOf(items)


def minimum(*args):
    raise _Unsupported("shim: minimum (elementwise) is not used by the "
                       "supported policies")


# -- constraints and problems -----------------------------------------------------

class Constraint:
    """expr (<= or ==) 0, elementwise."""

    def __init__(self, expr, sense):
        if isinstance(expr, _Convex):
            raise _Unsupported("shim: convex expression in an affine constraint")
        self.expr = expr
        self.sense = sense


class _ConvexConstraint:
    """convex scalar f <= affine scalar a."""

    def __init__(self, f, a):
        self.f = f
        self.a = a


class Maximize:
    def __init__(self, expr):
        self.expr = expr


class Minimize:
    def __init__(self, expr):
        self.expr = expr


class Problem:
    def __init__(self, objective, constraints=None):
        self.objective = objective
        self.constraints = list(constraints or [])
        self.status = None
        self.value = None

    def solve(self, solver=None, **kwargs):
        import time
        t0 = time.perf_counter()
        try:
            return _solve(self)
        finally:
            stats["seconds"] += time.perf_counter() - t0


class _Builder:
    """Collects rows of  G x <= h  (linear), A x == b, and SOC blocks."""

    def __init__(self):
        self.vars = {}
        self.offset = {}
        self.n = 0

    def var(self, v):
        if v.id not in self.offset:
            self.offset[v.id] = self.n
            self.vars[v.id] = v
            self.n += v.size
        return self.offset[v.id]

    def scalar_var(self):
        v = Variable(())
        self.var(v)
        return v

    def rows(self, expr):
        """Return (M, c) with expr = M x + c, M as a csr with self.n columns
        (the column count is fixed later by _pad)."""
        blocks = []
        for k, (v, m) in expr.terms.items():
            off = self.var(v)
            blocks.append((off, m))
        return blocks, expr.const


def _assemble(builder, row_blocks):
    """row_blocks: list of (blocks, const) -> (csr M, const vector)."""
    mats, consts = [], []
    for blocks, const in row_blocks:
        rows = const.size
        m = sp.csr_matrix((rows, builder.n))
        for off, blk in blocks:
            coo = blk.tocoo()
            m = m + sp.csr_matrix((coo.data, (coo.row, coo.col + off)),
                                  shape=(rows, builder.n))
        mats.append(m)
        consts.append(const)
    if not mats:
        return sp.csr_matrix((0, builder.n)), np.zeros(0)
    return sp.vstack(mats, format="csr"), np.concatenate(consts)


def _solve(prob):
    b = _Builder()
    ineq, eq, socs = [], [], []  # socs: (s_var, g_expr)
    obj = prob.objective
    sign = 1.0  # we minimise sign * objective
    if isinstance(obj, Maximize):
        sign = -1.0
    elif not isinstance(obj, Minimize):
        raise _Unsupported("shim: objective must be Maximize or Minimize")
    e = obj.expr
    cvec_expr = None  # affine scalar to minimise
    t = None
    if isinstance(e, _MinOf):
        if sign != -1.0:
            raise _Unsupported("shim: Minimize(min(...)) is not convex")
        t = b.scalar_var()
        # t <= e_i  <=>  t - e_i <= 0
        ineq.append(b.rows(_broadcast_scalar(t, e.expr.shape) - e.expr))
        cvec_expr = -t
    elif isinstance(e, (_MaxOf, _Convex)):
        if sign != 1.0:
            raise _Unsupported("shim: Maximize of a convex expression")
        items = e.items if isinstance(e, _MaxOf) else [e]
        t = b.scalar_var()
        for it in items:
            if isinstance(it, _Convex):
                _add_convex_le(b, it, t, ineq, socs)
            else:
                ineq.append(b.rows(it - _broadcast_scalar(t, it.shape)))
        cvec_expr = t
    else:
        ex = _as_expr(e)
        if ex.size != 1:
            raise _Unsupported("shim: objective must be scalar")
        cvec_expr = _flat1(ex) * sign
    for c in prob.constraints:
        if isinstance(c, Constraint):
            (eq if c.sense == "==" else ineq).append(b.rows(c.expr))
        elif isinstance(c, _ConvexConstraint):
            _add_convex_le(b, c.f, c.a, ineq, socs)
        elif isinstance(c, (bool, np.bool_)):
            if not c:
                prob.status = INFEASIBLE
                return np.inf * sign
        else:
            raise _Unsupported("shim: constraint of type %s" % type(c).__name__)
    obj_rows = b.rows(cvec_expr)

    # Register SOC auxiliaries before assembling so n is final.
    for s, g, _ in socs:
        b.var(s)
        b.rows(g)
    n = b.n
    G, gconst = _assemble(b, ineq)
    A, aconst = _assemble(b, eq)
    C, cconst = _assemble(b, [obj_rows])
    c = np.asarray(C.todense()).reshape(-1)
    # G x + gconst <= 0  ->  G x <= -gconst ; A x == -aconst
    h = -gconst
    beq = -aconst

    backend = os.environ.get("GAVEL_SHIM_SOLVER", "cvxopt").lower()
    if socs or backend == "cvxopt":
        status, x = _solve_cvxopt(b, c, G, h, A, beq, socs)
        stats["socp" if socs else "lp"] += 1
    elif backend == "highs":
        status, x = _solve_highs(c, G, h, A, beq)
        stats["lp"] += 1
    else:
        raise ValueError("GAVEL_SHIM_SOLVER=%r: want cvxopt or highs" % backend)

    prob.status = status
    stats["status"][status] = stats["status"].get(status, 0) + 1
    for vid, v in b.vars.items():
        if x is None:
            v.value = None
        else:
            off = b.offset[vid]
            v.value = x[off:off + v.size]
    if x is None:
        prob.value = np.inf if sign > 0 else -np.inf
        if status == UNBOUNDED:
            prob.value = -prob.value
    else:
        val = float(c @ x + cconst[0])
        prob.value = val * sign
    return prob.value


def _broadcast_scalar(t, shape):
    return t._broadcast(shape) if shape else t


def _add_convex_le(b, f, rhs, ineq, socs):
    """f <= rhs with f = aff + sum coef*inv_pos(g).

    Each term gets a new variable w >= coef / g, written as the rotated cone
    w * (g / sigma) >= coef / sigma with sigma the largest coefficient of g,
    so that both factors are of order one (cvxopt breaks down with domain
    errors on the unscaled form when throughputs reach hundreds of steps/s).
    """
    lhs = _flat1(f.aff) if f.aff.size == 1 else f.aff
    lhs = lhs - _flat1(rhs) if isinstance(rhs, Expression) else lhs - rhs
    for coef, g in f.invs:
        if coef == 0:
            continue
        mags = [abs(float(g.const[0]))]
        for _, m in g.terms.values():
            if m.nnz:
                mags.append(float(abs(m).max()))
        sigma = _builtins.max(mags)
        if sigma <= 0:
            raise _Unsupported("shim: inv_pos of an expression that is "
                               "identically zero")
        w = b.scalar_var()
        socs.append((w, g * (1.0 / sigma), coef / sigma))
        lhs = lhs + w
    ineq.append(b.rows(lhs))


# ECOS's defaults (ecos.h): feastol = abstol = reltol = 1e-8, maxit = 100.
_CVXOPT_OPTS = {"show_progress": False, "abstol": 1e-8, "reltol": 1e-8,
                "feastol": 1e-8, "maxiters": 100}


def _solve_cvxopt(b, c, G, h, A, beq, socs):
    import cvxopt
    from cvxopt import solvers
    n = b.n
    # Second-order cones for s*g >= k, s,g >= 0:
    #   || (2 sqrt(k), s - g) ||_2 <= s + g,  in cvxopt form  h_q - G_q x in Q^3.
    # Linear rows are scaled to unit 2-norm first; a positive row scaling
    # moves neither the feasible set nor the central path.
    norms = np.sqrt(np.asarray(G.multiply(G).sum(axis=1)).reshape(-1))
    d = 1.0 / np.where(norms > 0, norms, 1.0)
    G = (sp.diags(d) @ G).tocsr()
    h = h * d
    if A.shape[0]:
        an = np.sqrt(np.asarray(A.multiply(A).sum(axis=1)).reshape(-1))
        da = 1.0 / np.where(an > 0, an, 1.0)
        A = (sp.diags(da) @ A).tocsr()
        beq = beq * da
    qG, qh = [], []
    for s, g, kcone in socs:
        gm = sp.csr_matrix((1, n))
        for k, (v, m) in g.terms.items():
            off = b.offset[k]
            coo = m.tocoo()
            gm = gm + sp.csr_matrix((coo.data, (coo.row, coo.col + off)),
                                    shape=(1, n))
        g0 = float(g.const[0])
        es = sp.csr_matrix(([1.0], ([0], [b.offset[s.id]])), shape=(1, n))
        qG.extend([-(es + gm), sp.csr_matrix((1, n)), -(es - gm)])
        qh.extend([g0, 2.0 * np.sqrt(kcone), -g0])
    Gall = sp.vstack([G] + qG, format="coo") if qG else G.tocoo()
    hall = np.concatenate([h, np.asarray(qh)]) if qG else h
    dims = {"l": G.shape[0], "q": [3] * len(socs), "s": []}

    def spm(m):
        m = m.tocoo()
        return cvxopt.spmatrix(m.data.tolist(), m.row.tolist(), m.col.tolist(),
                               size=m.shape)

    args = [cvxopt.matrix(c.astype(float)), spm(Gall), cvxopt.matrix(hall.astype(float)), dims]
    if A.shape[0] > 0:
        args += [spm(A), cvxopt.matrix(beq.astype(float))]
    old = dict(solvers.options)
    solvers.options.clear()
    solvers.options.update(_CVXOPT_OPTS)
    try:
        # LDL factorisation of the KKT system: the default Cholesky-based
        # solvers stall ("unknown" after a few iterations, residuals ~1e-8)
        # on the degenerate LPs Gavel builds (e.g. agnostic max-min fairness,
        # where every throughput is 1).  cvxopt's "ldl" is DENSE (11 s for a
        # 150-job max-min LP); GAVEL_SHIM_KKT=chol2 first tries the sparse
        # Cholesky solver (0.3 s there, same point to 5e-8) and falls back to
        # "ldl" whenever chol2 fails or does not end optimal.
        sol = None
        if os.environ.get("GAVEL_SHIM_KKT", "ldl").lower() == "chol2":
            try:
                sol = solvers.conelp(*args, kktsolver="chol2")
            except (ValueError, ArithmeticError):
                sol = None
            if sol is not None and sol["status"] != "optimal":
                sol = None
            stats["kkt"]["chol2" if sol is not None else "ldl fallback"] += 1
        if sol is None:
            sol = solvers.conelp(*args, kktsolver="ldl")
    except (ValueError, ArithmeticError) as err:
        return SOLVER_ERROR, None
    finally:
        solvers.options.clear()
        solvers.options.update(old)
    st = sol["status"]
    if st == "optimal":
        return OPTIMAL, np.asarray(sol["x"]).reshape(-1)
    if st == "primal infeasible":
        return INFEASIBLE, None
    if st == "dual infeasible":
        return UNBOUNDED, None
    # 'unknown': stopped before reaching the tolerances (cvxpy's ECOS
    # interface reports such a stop as optimal_inaccurate and keeps x).
    if sol.get("x") is not None:
        return OPTIMAL_INACCURATE, np.asarray(sol["x"]).reshape(-1)
    return SOLVER_ERROR, None


def _solve_highs(c, G, h, A, beq):
    from scipy.optimize import linprog
    kw = {}
    if G.shape[0]:
        kw["A_ub"], kw["b_ub"] = G, h
    if A.shape[0]:
        kw["A_eq"], kw["b_eq"] = A, beq
    res = linprog(c, bounds=(None, None), method="highs", **kw)
    if res.status == 0:
        return OPTIMAL, np.asarray(res.x)
    if res.status == 2:
        return INFEASIBLE, None
    if res.status == 3:
        return UNBOUNDED, None
    return SOLVER_ERROR, None
