#!/usr/bin/env bash
# The DeepGEMM JIT-segfault investigation, as one run on the GPU machine.
#
#   scripts/deepgemm_investigate.sh SRC OUT
#
# SRC: the DeepGEMM source checkout (see scripts/build_deepgemm.sh); OUT: where logs, probe
# results and the packed build go. Builds every variant of scripts/build_deepgemm.sh side by
# side into /tmp/dg-VARIANT, records which of the stock build's symbol references the dynamic
# linker binds into libtorch/libc10 (LD_DEBUG=bindings), probes each build's kernels
# (scripts/deepgemm_probe.py), then, for the first variant whose JIT kernels all run, compiles
# the K3-shaped kernels into the JIT cache /tmp/dg-jit and packs the build and the cache into OUT
# (deep_gemm-VARIANT.tar.gz, dg-jit.tar.gz) for later runs to unpack at the same paths.
# DG_VARIANTS overrides the variants tried (in order of preference).
set -uo pipefail
src=$(realpath "$1")
out=$(realpath -m "$2")
here=$(dirname "$(realpath "$0")")
variants=${DG_VARIANTS:-"static-libstdcxx dynamic-libstdcxx exclude-libs stock bsymbolic no-regex cxx20 link-libstdcxx"}
mkdir -p "$out"

python3 - <<'PY'
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda,
      "cxx11abi", torch.compiled_with_cxx11_abi(), "gpu", torch.cuda.get_device_name())
print("\n".join(l for l in torch.__config__.show().splitlines() if "CXX" in l or "GCC" in l or "C++" in l))
PY
nvcc --version | tail -2
echo "CXX=${CXX-} ($(${CXX:-g++} --version | head -1)); g++ finds libstdc++.so at $(g++ -print-file-name=libstdc++.so)"
python3 -c "import torch; print('libstdc++ in the process after import torch:', sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libstdc++' in l}))"

started=$(date +%s)
for v in $variants; do
    (bash "$here/build_deepgemm.sh" "$src" "/tmp/dg-$v" "$v" >"$out/build-$v.log" 2>&1
     echo "build $v: rc=$?") &
done
wait
echo "builds done in $(( $(date +%s) - started )) s"
grep -h "FLAGS\|NEEDED.*stdc\|undefined std" "$out"/build-*.log

if [[ -d /tmp/dg-stock/deep_gemm ]]; then
    LD_DEBUG=bindings LD_DEBUG_OUTPUT=/tmp/ld-bindings PYTHONPATH=/tmp/dg-stock \
        python3 -c "import deep_gemm" >/dev/null 2>&1
    grep -h "deep_gemm/_C" /tmp/ld-bindings.* | grep -E "to .*(libtorch|libc10)" \
        | sed -E 's/.*binding file ([^ ]*) .* to ([^ ]*) .*symbol `([^'"'"']*).*/\1 -> \2 \3/' \
        | sed -E 's|/[^ ]*/||g' >"$out/stock-bindings-into-torch.txt"
    echo "stock _C.so references bound into libtorch/libc10: $(wc -l <"$out/stock-bindings-into-torch.txt")"
    grep -c "regex\|_Scanner\|_Compiler\|_NFA" "$out/stock-bindings-into-torch.txt" \
        | sed 's/^/  of them std::regex internals: /'
    c++filt <"$out/stock-bindings-into-torch.txt" | grep -m 8 "regex\|_Scanner\|_Compiler"
fi

for v in $variants; do
    [[ -d "/tmp/dg-$v/deep_gemm" ]] || continue
    (DG_JIT_CACHE_DIR="/tmp/dg-jit-probe-$v" PYTHONPATH="/tmp/dg-$v" \
        python3 "$here/deepgemm_probe.py" --json "$out/probe-$v.json" >"$out/probe-$v.log" 2>&1
     echo "probe $v: rc=$?") &
done
wait
for v in $variants; do
    echo "== $v"
    [[ -f "$out/probe-$v.log" ]] && python3 - "$out/probe-$v.log" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = json.loads(line)
        print(f"  {r['kernel']:18} {r['outcome']:22} ok={r['ok']} rel_err={r.get('rel_err', '-')}"
              f" first={r.get('first_call_s', '-')} s second={r.get('second_call_s', '-')} s")
PY
done

chosen=""
for v in $variants; do
    if [[ -f "$out/probe-$v.json" ]] && python3 -c "
import json, sys; sys.exit(0 if all(r['ok'] for r in json.load(open('$out/probe-$v.json'))) else 1)"; then
        chosen=$v; break
    fi
done
echo "chosen variant: ${chosen:-none}"
[[ -n "$chosen" ]] || exit 1

cp -a "/tmp/dg-jit-probe-$chosen" /tmp/dg-jit
DG_JIT_CACHE_DIR=/tmp/dg-jit PYTHONPATH="/tmp/dg-$chosen" \
    python3 "$here/deepgemm_probe.py" --k3 --json "$out/probe-k3-$chosen.json" >"$out/probe-k3.log" 2>&1
cut -c1-300 "$out/probe-k3.log"
tar -C /tmp -czf "$out/deep_gemm-$chosen.tar.gz" "dg-$chosen"
if (( $(stat -c %s "$out/deep_gemm-$chosen.tar.gz") > 15 * 1024 * 1024 )); then
    strip --strip-unneeded /tmp/dg-"$chosen"/deep_gemm/_C*.so  # too large to come back whole
    tar -C /tmp -czf "$out/deep_gemm-$chosen.tar.gz" "dg-$chosen"
fi
tar -C /tmp -czf "$out/dg-jit.tar.gz" dg-jit
ls -la "$out"
