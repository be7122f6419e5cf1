#!/usr/bin/env bash
# The HDF5 benchmark with its anchor, interleaved in one run: generates the
# 10M x 8 float32 gzip file with ../shared/benchgen/gen_h5.py unless it is
# already in $BENCHDATA, then runs `cargo bench --bench hdf5`, which times
# read_dataset_slice and h5py (scripts/bench/h5py_read.py) round by round, the
# resources/read server time and the indexing rate of small files.
# Needs Python 3 and PyPI (a virtual environment outside the repository).
# SAME_LIBHDF5=1 builds h5py from source against Debian's libhdf5 (the library
# quarry links) instead of the wheel, which bundles its own newer HDF5.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-$(mktemp -d)/venv}
data=${BENCHDATA:-$(mktemp -d)/benchdata}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  if [ "${SAME_LIBHDF5:-0}" = 1 ]; then
    "$venv/bin/pip" install -q numpy
    HDF5_DIR=${HDF5_DIR:-/usr/lib/$(gcc -print-multiarch)/hdf5/serial} \
      "$venv/bin/pip" install -q --no-binary h5py h5py
  else
    "$venv/bin/pip" install -q h5py numpy
  fi
fi
file="$data/h5/data_10000000x8_gzip.h5"
[ -f "$file" ] || BENCHDATA="$data" "$venv/bin/python" ../shared/benchgen/gen_h5.py --compression gzip -o "$file" >/dev/null
QUARRY_HDF5_BENCH_FILE="$file" QUARRY_HDF5_BENCH_PYTHON="$venv/bin/python" \
  cargo bench --bench hdf5 2>/dev/null | grep '^{'
