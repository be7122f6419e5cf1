#!/usr/bin/env python3
"""The anchor of benches/fits.rs: the same 100-bin gaussian + exponential
extended binned likelihood fit (iminuit.cost.ExtendedBinnedNLL with the CDFs
normalised over the range, Minuit.migrad then Minuit.hesse), from the same
start values quarry guesses is not attempted: iminuit starts at the truth-ish
values of scripts/fixtures/fits.py. Prints `iminuit_fit_ms <median>`.
Usage: iminuit_fit.py FIXTURE_JSON [ROUNDS]"""
import json
import sys
import time

import numpy as np
from iminuit import Minuit
from iminuit.cost import ExtendedBinnedNLL
from scipy.special import erfc

doc = json.load(open(sys.argv[1]))
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 200
case = next(c for c in doc["cases"] if c["name"] == "signal_background")
edges = np.array(case["bin_edges"])
counts = np.array(case["counts"])
lo, hi = edges[0], edges[-1]


def phi(z):
    return 0.5 * erfc(-z / np.sqrt(2))


def model(xe, mu, sigma, tau, n_sig, n_bkg):
    g = (phi((xe - mu) / sigma) - phi((lo - mu) / sigma)) / (phi((hi - mu) / sigma) - phi((lo - mu) / sigma))
    e = (np.exp(-(xe - lo) / tau) - 1.0) / (np.exp(-(hi - lo) / tau) - 1.0)
    return n_sig * g + n_bkg * e


cost = ExtendedBinnedNLL(counts, edges, model)
times = []
for _ in range(rounds):
    t = time.perf_counter()
    m = Minuit(cost, mu=5.0, sigma=0.6, tau=2.5, n_sig=1500.0, n_bkg=5500.0)
    m.limits["sigma", "n_sig", "n_bkg"] = (0, None)
    m.migrad()
    m.hesse()
    times.append((time.perf_counter() - t) * 1e3)
    assert m.valid
print(f"iminuit_fit_ms {np.median(times):.4f}")
