#!/usr/bin/env python3
"""h5py's side of benches/hdf5.rs: reads one slice of /data the way the
reference HDF5 MCP server answers read_dataset_slice (open the file, read the
slice, .tolist(), JSON), timing the read alone and the whole answer.
Usage: h5py_read.py FILE SLICE, SLICE one of "rows" (1000000:1100000, :) and
"strided" (::1000, 0). Prints one JSON line."""
import json
import sys
import time

import h5py

SLICES = {
    "rows": (slice(1000000, 1100000), slice(None)),
    "strided": (slice(None, None, 1000), 0),
}

path, which = sys.argv[1], sys.argv[2]
t = time.perf_counter()
with h5py.File(path, "r") as f:
    array = f["/data"][SLICES[which]]
read = time.perf_counter() - t
text = json.dumps(array.tolist())
answer = time.perf_counter() - t
print(json.dumps({"tool": "h5py", "slice": which, "read_seconds": read,
                  "answer_seconds": answer, "elements": int(array.size), "json_bytes": len(text)}))
