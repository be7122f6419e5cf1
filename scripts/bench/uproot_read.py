#!/usr/bin/env python3
"""Times uproot reading whole branches (best of 3), one JSON line per branch,
in the same shape as benches/root.rs prints, for side-by-side ratios.
Like quarry's benchmark, each timing opens the file and reads the whole branch.
Usage: uproot_read.py FILE... (branches met and muon_pt of tree events)"""
import json
import sys
import time

import uproot

for path in sys.argv[1:]:
    for name in ["met", "muon_pt"]:
        best = float("inf")
        for _ in range(3):
            # A fresh file each time, without uproot's array cache: a full read.
            t = time.perf_counter()
            with uproot.open(path, array_cache=None, object_cache=None) as f:
                branch = f["events"][name]
                branch.array(library="ak" if name.startswith("muon") else "np")
            best = min(best, time.perf_counter() - t)
        with uproot.open(path) as f:
            mb = f["events"][name].member("fTotBytes") / 1e6
            print(json.dumps({"tool": "uproot", "file": path.rsplit("/", 1)[-1], "branch": name,
                              "mode": "column", "seconds": best, "uncompressed_mb": mb, "mb_per_s": mb / best}))
