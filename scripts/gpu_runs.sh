#!/usr/bin/env bash
# The measured layer runs of docs/gpu-verification.md, on the GPU machine, in one call:
# install driftcheck (and libcst from carried wheels), build DeepGEMM, run each tree's block.
#
#   scripts/gpu_runs.sh OUT GPU_DIR [WORLD_SIZES] [STEPS]
#
# GPU_DIR holds (none of it is in this repository; see docs/gpu-verification.md):
#   DeepGEMM/            a checkout of sgl-project/DeepGEMM with its submodules' headers
#   trees/sglang-X.Y.Z/  the files of each release the runs lint and execute
#   ../.whl/*.whl        libcst for the machine's python3 (the image has click and numpy)
# DeepGEMM/ and the trees may come packed instead, to stay under the carry limit: each
# GPU_DIR/NAME.tar.xz and GPU_DIR/trees/NAME.tar.xz (holding NAME's contents: setup.py ...,
# sglang/...) is unpacked into NAME/ beside it first, unless NAME/ is there already.
# STEPS (default "k3_0523 k3_0521 qwen3_0517") picks the runs, each at every world size or only
# at the one after a colon (qwen3_0517:2); k3_0523_pplx runs the held-back member (--arms
# deepep,pplx --unsafe-fixes). Each run writes OUT/<name>_w<W>.json and .md and
# its log; the command lines go to OUT/commands.txt. Everything is packed into OUT/runs.tar.gz.
set -uo pipefail
out=$(realpath -m "$1")
gpu=$(realpath "$2")
worlds=${3:-"2 4"}
steps=${4:-"k3_0523 k3_0521 qwen3_0517"}
repo=$(pwd)
work=$(mktemp -d)
mkdir -p "$work/runs"

for archive in "$gpu"/*.tar.xz "$gpu"/trees/*.tar.xz; do
    [[ -f $archive ]] || continue
    dest=${archive%.tar.xz}
    [[ -d $dest ]] && continue
    rm -rf "$dest.part" && mkdir -p "$dest.part" || exit 2
    if command -v xz >/dev/null; then
        tar -xJf "$archive" -C "$dest.part"
    else
        python3 -c 'import sys, tarfile
tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="data")' "$archive" "$dest.part"
    fi && mv "$dest.part" "$dest" || { echo "error: cannot unpack $archive"; exit 2; }
    echo "unpacked $(basename "$archive"): $(find "$dest" -type f | wc -l) files"
done

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    "$repo"/.whl/*.whl || exit 2
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir \
    --target /tmp/driftcheck "$repo" || exit 2
started=$(date +%s)
if [[ ! -d /tmp/deep_gemm/deep_gemm ]]; then
    bash "$repo/scripts/build_deepgemm.sh" "$gpu/DeepGEMM" /tmp/deep_gemm \
        >"$work/runs/deepgemm_build.log" 2>&1 \
        || { echo "DeepGEMM build failed"; tail -30 "$work/runs/deepgemm_build.log"; }
    echo "DeepGEMM build: $(( $(date +%s) - started )) s"
fi
export PYTHONPATH=/tmp/driftcheck:/tmp/site:/tmp/deep_gemm
export DG_JIT_CACHE_DIR=/tmp/dg-jit PYTHONUNBUFFERED=1

run() {  # name tree world args...
    local name=$1 tree=$2 world=$3
    shift 3
    local args=(verify --no-cache --layer --device cuda --shape k3 --runner deep_gemm
                --world-size "$world" --report "$work/runs/${name}_w$world.json"
                --report-md "$work/runs/${name}_w$world.md" "$@")
    echo "cd <$(basename "$tree") tree> && python3 -P -m driftcheck ${args[*]/#$work\/runs\//}" \
        >>"$work/runs/commands.txt"
    local began=$(date +%s)
    (cd "$gpu/trees/$tree" && python3 -P -m driftcheck "${args[@]}") \
        >"$work/runs/${name}_w$world.log" 2>&1
    echo "${name} W=$world: exit $? in $(( $(date +%s) - began )) s"
    grep -E "^layer verification|^  sglang" "$work/runs/${name}_w$world.log" | cut -c1-600
}

for world in $worlds; do
    for item in $steps; do
        step=${item%%:*}
        [[ $item == *:* && ${item#*:} != "$world" ]] && continue
        case $step in
            k3_0523) run k3_0523 sglang-0.5.23 "$world" sglang/srt/models/kimi_k3.py ;;
            k3_0521) run k3_0521 sglang-0.5.21 "$world" sglang/srt/models/kimi_k3.py ;;
            qwen3_0517) run qwen3_0517 sglang-0.5.17 "$world" --select DC001,DC003,DC020 \
                --unsafe-fixes sglang/srt/models/qwen3_moe.py ;;
            k3_0523_pplx) run k3_0523_pplx sglang-0.5.23 "$world" --arms deepep,pplx \
                --unsafe-fixes sglang/srt/models/kimi_k3.py ;;
            *) echo "unknown step $step" ;;
        esac
    done
done
tar -czf "$out/runs.tar.gz" -C "$work" runs
ls -la "$out"
