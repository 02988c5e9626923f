#!/usr/bin/env bash
# The measured K3 runs of docs/gpu-verification.md, on the GPU machine.
#
#   scripts/gpu_runs.sh OUT TREE_0_5_23 TREE_0_5_21 [WORLD_SIZES]
#
# Each TREE holds the release's sglang/srt/layers/moe/utils.py, sglang/srt/models/kimi_k3.py and
# sglang/srt/configs/moe_model_registry.py (wheel layout). For every release and world size
# (default "2 4") it runs, inside the tree,
#   driftcheck verify sglang/srt/models/kimi_k3.py --no-cache --layer --device cuda --shape k3 \
#       --runner deep_gemm --world-size W --report OUT/k3_<release>_w<W>.json --report-md ...md
# with `python3 -P -m driftcheck` (no module of the tree can shadow driftcheck's imports).
# driftcheck and deep_gemm must be importable (PYTHONPATH); with one GPU the W ranks share it
# over gloo. Each command line is written to OUT/commands.txt before it runs.
set -uo pipefail
out=$(realpath -m "$1")
declare -A trees=([0.5.23]=$(realpath "$2") [0.5.21]=$(realpath "$3"))
worlds=${4:-"2 4"}
mkdir -p "$out"
status=0
for release in 0.5.23 0.5.21; do
    for world in $worlds; do
        name="k3_${release//./}_w${world}"
        args=(verify sglang/srt/models/kimi_k3.py --no-cache --layer --device cuda --shape k3
              --runner deep_gemm --world-size "$world"
              --report "$out/$name.json" --report-md "$out/$name.md")
        echo "cd <sglang-$release tree> && python3 -P -m driftcheck ${args[*]/#$out\//}" \
            >>"$out/commands.txt"
        started=$(date +%s)
        (cd "${trees[$release]}" && python3 -P -m driftcheck "${args[@]}") >"$out/$name.log" 2>&1
        rc=$?
        echo "$name: exit $rc in $(( $(date +%s) - started )) s"
        grep -E "^layer verification|^  sglang" "$out/$name.log" | cut -c1-400
        (( rc == 0 )) || status=1
    done
done
exit $status
