#!/usr/bin/env python3
"""The anchor of the dataset benchmark (issue #28, part 4): the dimuon invariant mass of
opposite-charge muon pairs in events with nMuon >= 2 and met > 20, histogrammed over many
gen_root.py files, the way a physicist writes it with uproot + awkward + vector. The muon
mass is the constant 0.105658 GeV (the generated files store no mass branch).

Each way is timed from opening the files to the filled histogram, no array cache:
  iterate      uproot.iterate over all files in one process, in steps of STEP entries
  iterate_pN   the files split into N contiguous parts, each iterated by its own process
               (the same cores quarry uses; the histograms are summed)
  concatenate  uproot.concatenate of the needed branches, then the same computation
               (only when the files are small enough: --concatenate-max-mb of input)

Prints one JSON line per way ({"tool": "uproot", "op": ..., "seconds": ..., "pairs": ...,
"counts_sha": ...}) and a last line naming the fastest. counts_sha lets a run compare the
histogram with quarry's bin by bin.

Usage: uproot_dataset.py [--procs 2] [--step 500000] [--bins 120 --lo 0 --hi 300] FILE...
Needs uproot awkward numpy vector (PyPI)."""
import argparse
import hashlib
import json
import multiprocessing
import os
import sys
import time

import awkward as ak
import numpy as np
import uproot
import vector

MUON_MASS = 0.105658
BRANCHES = ["nMuon", "met", "muon_pt", "muon_eta", "muon_phi", "muon_charge"]


def masses(a):
    """The opposite-charge pair masses of a chunk of events, flat."""
    a = a[(a["nMuon"] >= 2) & (a["met"] > 20)]
    mu = vector.zip(
        {
            "pt": a["muon_pt"],
            "eta": a["muon_eta"],
            "phi": a["muon_phi"],
            "mass": ak.full_like(a["muon_pt"], MUON_MASS),
        }
    )
    first, second = ak.unzip(ak.combinations(mu, 2))
    q1, q2 = ak.unzip(ak.combinations(a["muon_charge"], 2))
    m = (first + second).mass[q1 != q2]
    return np.asarray(ak.flatten(m, axis=None), dtype=np.float64)


def histogram_of_files(files, step, edges):
    counts = np.zeros(len(edges) - 1, dtype=np.int64)
    for chunk in uproot.iterate(
        [f + ":events" for f in files], BRANCHES, step_size=step, library="ak"
    ):
        counts += np.histogram(masses(chunk), bins=edges)[0]
    return counts


def _part(args):
    files, step, edges = args
    return histogram_of_files(files, step, edges)


def iterate_parallel(files, step, edges, procs):
    size = (len(files) + procs - 1) // procs
    parts = [files[i : i + size] for i in range(0, len(files), size)]
    with multiprocessing.get_context("fork").Pool(len(parts)) as pool:
        return sum(pool.map(_part, [(p, step, edges) for p in parts]))


def concatenate(files, edges):
    a = uproot.concatenate([f + ":events" for f in files], BRANCHES, library="ak")
    return np.histogram(masses(a), bins=edges)[0]


def report(op, seconds, counts, files):
    sha = hashlib.sha256(np.asarray(counts, dtype=np.int64).tobytes()).hexdigest()[:16]
    row = {"tool": "uproot", "op": op, "files": len(files), "seconds": round(seconds, 4),
           "pairs": int(counts.sum()), "counts_sha": sha}
    print(json.dumps(row), flush=True)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--step", type=int, default=500_000)
    ap.add_argument("--bins", type=int, default=120)
    ap.add_argument("--lo", type=float, default=0.0)
    ap.add_argument("--hi", type=float, default=300.0)
    ap.add_argument("--concatenate-max-mb", type=float, default=2000.0)
    ap.add_argument("--counts", action="store_true", help="also print the counts of the last way")
    a = ap.parse_args()
    files = sorted(a.files)
    edges = np.linspace(a.lo, a.hi, a.bins + 1)
    rows = []
    t = time.perf_counter()
    counts = histogram_of_files(files, a.step, edges)
    rows.append(report("iterate", time.perf_counter() - t, counts, files))
    if a.procs > 1 and len(files) > 1:
        t = time.perf_counter()
        counts = iterate_parallel(files, a.step, edges, a.procs)
        rows.append(report(f"iterate_p{a.procs}", time.perf_counter() - t, counts, files))
    if sum(os.path.getsize(f) for f in files) / 1e6 <= a.concatenate_max_mb:
        t = time.perf_counter()
        counts = concatenate(files, edges)
        rows.append(report("concatenate", time.perf_counter() - t, counts, files))
    best = min(rows, key=lambda r: r["seconds"])
    print(json.dumps({"tool": "uproot", "op": "fastest", "way": best["op"], "seconds": best["seconds"]}))
    if a.counts:
        print(json.dumps({"counts": counts.tolist()}))


if __name__ == "__main__":
    sys.exit(main())
