"""Scratch: affine insertion posteriors against brute force (DNA and protein cases of the tests)."""
import math, sys
sys.path[:0] = ["/work/wt/affine/tests", "/work/wt/affine/tests/model", "/work/wt/affine"]
import numpy as np
from hypothesis import given, settings, HealthCheck, strategies as st
import posterior_reference as pr
from test_posterior import cases, eps_units, posterior_tolerance
from papara_py.model.posterior import edge_posteriors, forward_energy
from papara_py.model.fixed_point import PROB_ONE

def paths_affine(c, ext):
    out = []
    def walk(state, i, j, energy, trail):
        trail = trail + [(state, i, j)]
        if j == c.n - 1:
            out.append((energy, trail))
        if c.inside(i + 1, j + 1):
            walk("M", i + 1, j + 1, energy + c.cm[i + 1, j + 1], trail)
        if c.inside(i + 1, j):
            walk("D", i + 1, j, energy + (c.e[i + 1] if state == "D" else c.oe[i + 1]), trail)
        if c.inside(i, j + 1):
            walk("I", i, j + 1, energy + (ext if state == "I" else c.ins), trail)
    for i in range(c.m):
        walk("M", i, 0, c.cm[i, 0], [])
        walk("I", i, 0, c.ins, [])
    return out

@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases(max_m=7, max_n=5), st.integers(0, 8))
def test(case, ext):
    T = case.temperature
    c = case.literal()
    every = paths_affine(c, ext)
    z = pr.logsumexp_min([e for e, _ in every], T)
    post = {key: 0.0 for key in c.cm}
    for energy, trail in every:
        w = math.exp(-(energy - z) / T)
        for s, i, j in trail:
            if s == "M":
                post[i, j] += w
    p = np.concatenate([case.p, [ext]]).astype(np.int64)
    tables = case.tables
    zf, F = forward_energy(case.read_array, case.profile_array(), p, tables, case.costs)
    assert abs(zf / tables.scale - z) <= eps_units(c.n, c.m) / tables.scale, (zf / tables.scale, z)
    _, P = edge_posteriors(case.read_array, case.profile_array(), p, tables, case.costs)
    for (i, j), exact in post.items():
        assert abs(P[j, i] / PROB_ONE - exact) <= posterior_tolerance(exact, c.n, c.m, tables), (i, j, P[j, i] / PROB_ONE, exact)

test()
print("affine brute force OK")
