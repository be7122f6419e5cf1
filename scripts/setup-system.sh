#!/usr/bin/env bash
# Installs the Debian packages quarry's build and tests need, when they are missing:
# pkg-config and libhdf5-dev for the build (the hdf5 crate links Debian's libhdf5,
# found through pkg-config); liblz4-dev (ROOT's LZ4 baskets are decoded with the
# system's liblz4); poppler-utils (pdftotext, pdfinfo) as the independent PDF
# reader the document tests compare quarry's extraction with; Python 3 with venv and
# Node.js with npm for the real MCP clients scripts/test-clients.sh runs (the official
# Python SDK and the MCP Inspector).
# Python and Node are looked for as commands, not packages: a machine that has them
# from elsewhere (pyenv, nodesource, nvm) needs nothing from apt.
# Idempotent; does nothing on a machine that has them. Needs root (or sudo) only
# when something is missing.
set -euo pipefail
packages=(pkg-config libhdf5-dev liblz4-dev poppler-utils)
# hdf5x: libhdf5 plugins for the compressors of h5py/hdf5plugin files (LZ4, BZip2
# in hdf5-filter-plugin; Blosc; Bitshuffle in Debian's bitshuffle package, whose
# libh5bshuf.so goes to the same folder); quarry loads them from the system plugin folder.
packages+=(hdf5-filter-plugin hdf5-filter-plugin-blosc-serial bitshuffle)
# --- remote roots (issue #32) ---
# nginx and xrootd-server: the HTTP and XRootD remote-root tests start their own servers
# on loopback ports (tests/common/remote.rs): nginx, xrootd, and xrootd with cmsd (same
# package) as a redirector and data server pair; only the binaries are used.
packages+=(nginx xrootd-server)
# python3-xrootd: the XRootD Python bindings uproot needs to read root:// in
# scripts/bench-remote.sh (the benchmark beside uproot); the tests do not use it.
packages+=(python3-xrootd)
# --- end remote roots ---
# Slurm (issue #33): a single-node cluster for the cluster executor's tests
# (scripts/slurm-local.sh starts and stops it).
packages+=(slurm-wlm munge)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3 python3-venv)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
# Code navigation (#31): universal-ctags, the independent reader that
# scripts/fixtures/code_navigation.py takes includes, imports and class bases from
# when the fixtures are written again (the tests read the committed JSON).
command -v ctags >/dev/null || missing+=(universal-ctags)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
