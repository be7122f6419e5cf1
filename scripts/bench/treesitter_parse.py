#!/usr/bin/env python3
"""The py-tree-sitter anchor for the code navigation benchmark: tree-sitter's
parse-only throughput on all cores (a process per core, each parsing its share
of the files; each times its parse after reading its files, and the slowest
process's time is the run's), best of 3. Prints one JSON line:
{"files", "bytes", "seconds", "mb_per_s", "processes"}.
Usage (in a venv): pip install tree-sitter tree-sitter-python tree-sitter-cpp
                   treesitter_parse.py DIR"""
import json
import multiprocessing
import os
import pathlib
import sys
import time

import tree_sitter
import tree_sitter_cpp
import tree_sitter_python

EXTS = {".py": "py", **{e: "cpp" for e in [".cpp", ".cc", ".cxx", ".hpp", ".hh", ".h", ".hxx"]}}


def parse_all(paths):
    sources = [(EXTS[pathlib.Path(p).suffix], pathlib.Path(p).read_bytes()) for p in paths]
    parsers = {
        "cpp": tree_sitter.Parser(tree_sitter.Language(tree_sitter_cpp.language())),
        "py": tree_sitter.Parser(tree_sitter.Language(tree_sitter_python.language())),
    }
    start = time.perf_counter()
    for lang, source in sources:
        parsers[lang].parse(source)
    return time.perf_counter() - start


def main():
    folder = pathlib.Path(sys.argv[1])
    files = sorted(p for p in folder.rglob("*") if p.suffix in EXTS and p.is_file() and not p.is_symlink())
    total = sum(p.stat().st_size for p in files)
    n = os.cpu_count() or 1
    shares = [[str(p) for p in files[i::n]] for i in range(n)]
    best = float("inf")
    with multiprocessing.Pool(n) as pool:
        for _ in range(3):
            best = min(best, max(pool.map(parse_all, shares, chunksize=1)))
    print(json.dumps({"files": len(files), "bytes": total, "seconds": best,
                      "mb_per_s": total / best / 1e6, "processes": n}))


if __name__ == "__main__":
    main()
