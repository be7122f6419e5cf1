#!/usr/bin/env bash
# Installs moto (an S3-compatible server, from PyPI) into a cached venv for the S3
# remote-root tests, and prints the path of its `moto_server` command. The venv is keyed
# by tests/remote/requirements.txt and used only once its install finished.
# Needs python3 with venv (scripts/setup-system.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${QUARRY_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/quarry-test}
requirements=tests/remote/requirements.txt
venv="$cache/moto-$(sha256sum "$requirements" | cut -c1-16)"
if [ ! -e "$venv/.complete" ]; then
  rm -rf "$venv"
  echo "setup-moto: installing moto into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --requirement "$requirements" >&2
  touch "$venv/.complete"
fi
echo "$venv/bin/moto_server"
