#!/usr/bin/env python3
"""One round of what benches/rntuple.rs measures, done with uproot (+ awkward,
numpy), on gen_root.py files; one JSON line per figure in the same shape:
- raw_read: every field of the RNTuple, `ntuple.arrays([...])`;
- histogram_jagged_cut_rntuple / _ttree: muon_pt with muon_pt > 20 and
  |muon_eta| < 2.4, 100 bins over [0, 200], as scripts/bench/uproot_analysis.py
  does it on a TTree, on the RNTuple and on the TTree of the same events.
Each figure opens the file afresh (no array cache), as the quarry figure does.
The counts (values read, entries, bins) go with each line, for the script to
check that both tools read the same.

Usage: uproot_rntuple.py RNTUPLE_FILE,TTREE_FILE ...   (needs uproot awkward
numpy, and zstandard for zstd files)"""
import json
import os
import sys
import time

import awkward as ak
import numpy as np
import uproot


def report(path, op, seconds, **extra):
    print(json.dumps({"tool": "uproot", "op": op, "file": os.path.basename(path), "seconds": seconds, **extra}),
          flush=True)


def events(path):
    return uproot.open(path, array_cache=None, object_cache=None)["events"]


def values_of(array):
    """Values of every field, the items of jagged ones counted one by one."""
    total = 0
    for field in array.fields:
        column = array[field]
        total += len(ak.flatten(column)) if column.ndim > 1 else len(column)
    return total


def raw_read(path):
    t = time.perf_counter()
    nt = events(path)
    a = nt.arrays(nt.keys())
    seconds = time.perf_counter() - t
    return seconds, {"entries": len(a), "values": values_of(a)}


def histogram_jagged_cut(path):
    t = time.perf_counter()
    a = events(path).arrays(["muon_pt", "muon_eta"])
    pt = a["muon_pt"][(a["muon_pt"] > 20) & (abs(a["muon_eta"]) < 2.4)]
    flat = np.asarray(ak.flatten(pt))
    counts, _ = np.histogram(flat, bins=100, range=(0, 200))
    seconds = time.perf_counter() - t
    return seconds, {"entries": len(flat), "in_range": int(counts.sum()), "bin_counts": counts.tolist()}


for pair in sys.argv[1:]:
    rntuple, ttree = pair.split(",")
    for op, fn, path in [("raw_read", raw_read, rntuple),
                         ("histogram_jagged_cut_rntuple", histogram_jagged_cut, rntuple),
                         ("histogram_jagged_cut_ttree", histogram_jagged_cut, ttree)]:
        seconds, extra = fn(path)
        # Lines are keyed by the pair's RNTuple file, as the quarry bench keys them.
        report(rntuple, op, seconds, **extra)
