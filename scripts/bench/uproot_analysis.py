#!/usr/bin/env python3
"""One round of what benches/root_analysis.rs measures, done the way a physicist
would write it with uproot + awkward + numpy (+ pyarrow for the export), on
gen_root.py files; one JSON line per figure in the same shape. Each figure
opens the file afresh (no array cache), as the quarry call does.

Usage: uproot_analysis.py FILE...   (needs uproot awkward numpy pyarrow, and lz4
xxhash for lz4 files)"""
import json
import os
import sys
import tempfile
import time

import awkward as ak
import numpy as np
import pyarrow.parquet as pq
import uproot


def report(path, op, seconds, **extra):
    print(json.dumps({"tool": "uproot", "op": op, "file": os.path.basename(path), "seconds": seconds, **extra}),
          flush=True)


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def tree(path):
    return uproot.open(path, array_cache=None, object_cache=None)["events"]


def histogram_jagged_cut(path):
    a = tree(path).arrays(["muon_pt", "muon_eta"])
    pt = a["muon_pt"][(a["muon_pt"] > 20) & (abs(a["muon_eta"]) < 2.4)]
    return np.histogram(np.asarray(ak.flatten(pt)), bins=100, range=(0, 200))


def histogram_flat(path):
    return np.histogram(tree(path)["met"].array(library="np"), bins=100, range=(0, 500))


def selection_flat(path):
    a = tree(path).arrays(["met", "nMuon"], library="np")
    return int(np.count_nonzero((a["met"] > 50) & (a["nMuon"] >= 2)))


def read_page(path):
    a = tree(path).arrays(["event_number", "met", "muon_pt"], entry_start=5_000_000, entry_stop=5_010_000)
    return a.tolist()


def stats_quantiles(path):
    met = tree(path)["met"].array(library="np").astype(np.float64)
    return met.mean(), met.std(), met.min(), met.max(), np.quantile(met, [0.25, 0.5, 0.75])


def export_parquet(path):
    a = tree(path).arrays(["event_number", "met", "nMuon", "muon_pt"], entry_stop=1_000_000)
    with tempfile.TemporaryDirectory() as d:
        pq.write_table(ak.to_arrow_table(a), os.path.join(d, "out.parquet"))
    return len(a)


def selection_first_entries(path):
    ev = tree(path)["event_number"].array(library="np")
    return int(np.count_nonzero(ev < 1000))


for path in sys.argv[1:]:
    for fn in [histogram_jagged_cut, histogram_flat, selection_flat, read_page, stats_quantiles, export_parquet,
               selection_first_entries]:
        _, seconds = timed(lambda: fn(path))
        report(path, fn.__name__, seconds)
