#!/usr/bin/env python3
"""The py-tree-sitter anchor for the code benchmark: what the reference server does
for `find_functions` on a folder (read every C++/Python file under it, parse it,
collect every function_definition), timed best of 3. Prints one JSON line:
{"files", "functions", "seconds"}.
Usage (in a venv): pip install tree-sitter tree-sitter-python tree-sitter-cpp
                   treesitter_functions.py DIR"""
import json
import pathlib
import sys
import time

import tree_sitter
import tree_sitter_cpp
import tree_sitter_python

CPP = tree_sitter.Language(tree_sitter_cpp.language())
PY = tree_sitter.Language(tree_sitter_python.language())
EXTS = {".py": PY, **{e: CPP for e in [".cpp", ".cc", ".cxx", ".hpp", ".hh", ".h", ".hxx"]}}


def functions(tree):
    count = 0
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "function_definition":
            count += 1
        stack.extend(node.children)
    return count


def run(files):
    parsers = {lang: tree_sitter.Parser(lang) for lang in (CPP, PY)}
    total = 0
    for path in files:
        source = path.read_bytes()
        total += functions(parsers[EXTS[path.suffix]].parse(source))
    return total


folder = pathlib.Path(sys.argv[1])
files = sorted(p for p in folder.rglob("*") if p.suffix in EXTS and p.is_file() and not p.is_symlink())
best = float("inf")
for _ in range(3):
    start = time.perf_counter()
    found = run(files)
    best = min(best, time.perf_counter() - start)
print(json.dumps({"files": len(files), "functions": found, "seconds": best}))
