#!/usr/bin/env python3
"""uproot's side of scripts/bench-remote.sh: the jagged histogram with a cut
(muon_pt where muon_pt > 20 && abs(muon_eta) < 2.4, 100 bins on [0, 200]) read
from a URL with uproot's own sources (XRootDSource for root://, HTTPSource for
http://, each with its defaults: vector reads, multi-range requests), the file
opened afresh; one JSON line shaped as benches/remote.rs's.

Usage: uproot_remote.py URL LABEL   (needs uproot awkward numpy, and the XRootD
Python bindings for root://)"""
import json
import sys
import time

import awkward as ak
import numpy as np
import uproot

url, label = sys.argv[1], sys.argv[2]
handler = uproot.source.xrootd.XRootDSource if url.startswith("root://") else uproot.source.http.HTTPSource
t = time.perf_counter()
tree = uproot.open(url, handler=handler, array_cache=None, object_cache=None)["events"]
a = tree.arrays(["muon_pt", "muon_eta"])
pt = a["muon_pt"][(a["muon_pt"] > 20) & (abs(a["muon_eta"]) < 2.4)]
counts, _ = np.histogram(np.asarray(ak.flatten(pt)), bins=100, range=(0, 200))
seconds = time.perf_counter() - t
print(json.dumps({"tool": "uproot", "label": label, "op": "histogram_jagged_cut", "seconds": seconds,
                  "in_range": int(counts.sum()), "selected": int(ak.count(pt))}), flush=True)
