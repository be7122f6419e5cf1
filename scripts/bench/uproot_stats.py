#!/usr/bin/env python3
"""Times uproot + numpy computing what quarry's branch statistics hold (count,
min, max, mean, std of the finite values; for jagged branches over all elements
plus the per-entry multiplicity) for every branch of a file's `events` tree, best
of 3, one JSON line in the shape benches/root.rs prints.
Usage: uproot_stats.py FILE"""
import json
import sys
import time

import awkward as ak
import numpy as np
import uproot


def summary(values):
    values = values[np.isfinite(values)] if values.dtype.kind == "f" else values
    if len(values) == 0:
        return None
    return (len(values), values.min(), values.max(), values.mean(), values.std())


path = sys.argv[1]
best = float("inf")
for _ in range(3):
    t = time.perf_counter()
    with uproot.open(path, array_cache=None, object_cache=None) as f:
        tree = f["events"]
        for branch in tree.values():
            arr = branch.array(library="ak")
            if arr.ndim > 1:
                summary(np.asarray(ak.num(arr, axis=1)))
                arr = ak.flatten(arr)
            summary(np.asarray(arr))
        branches = len(tree.keys())
    best = min(best, time.perf_counter() - t)
print(json.dumps({"tool": "uproot", "stats": "uncached", "file": path.rsplit("/", 1)[-1],
                  "branches": branches, "seconds": best}))
