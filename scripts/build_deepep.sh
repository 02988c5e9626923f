#!/usr/bin/env bash
# Build DeepEP's torch extension from a source checkout already on this machine.
#
#   scripts/build_deepep.sh SRC TARGET [VARIANT]
#
# SRC is a checkout of deepseek-ai/DeepEP, branch main (version 2.x: the package `deep_ep` holds
# both the legacy `Buffer`, deep_ep/buffers/legacy.py, and the elastic buffer of DeepEP V2,
# deep_ep/buffers/elastic.py, in one extension `deep_ep._C`), whose third-party/fmt/include
# holds fmt's headers (the submodule revision the checkout pins). This script fetches nothing:
# it copies SRC to a scratch directory, applies the variant there (SRC is left untouched) and runs
#   pip install --no-build-isolation --no-deps --target TARGET .
# against the python3 on PATH and its torch, with NCCL and NVSHMEM taken from that python's
# nvidia-nccl-cu13 and nvidia-nvshmem-cu13 wheels (headers and libraries in site-packages).
# Then `PYTHONPATH=TARGET python3 -c "import deep_ep"`. The legacy kernels (layout, intranode,
# internode) are compiled here for sm_90; the elastic kernels are compiled by DeepEP's JIT on
# first use (nvcc at run time, cache in EP_JIT_CACHE_DIR).
#
# DeepEP main needs NCCL >= 2.30.4 (its elastic buffer uses the GIN device API: ncclCommProperties,
# ncclGetLsaDevicePointer, ...); the GPU image's nvidia-nccl-cu13 is 2.28.9, whose headers do not
# compile csrc/kernels/backend/nccl.cu. DEEPEP_NCCL_INCLUDE=DIR (the include/ of a newer
# nvidia-nccl-cu13 wheel, headers only) compiles against DIR while still linking and running
# the image's libnccl.so.2 (torch's): TARGET/nccl-root holds DIR's headers and links to the
# image's libraries, and DeepEP records it as its NCCL root. Such a build imports only with lazy
# symbol binding (sys.setdlopenflags(os.RTLD_LAZY)), since the NCCL >= 2.30 host functions are
# absent from 2.28.9: the legacy Buffer runs, the elastic buffer cannot (its first NCCL >= 2.30
# call is a fatal "symbol lookup error").
#
# VARIANT, the link of the extension (docs/gpu-deepgemm.md: the image's CXX, /opt/gcc/bin/g++,
# links libstdc++ statically and exports that copy's symbols, which crashed DeepGEMM's JIT):
#   static-libstdcxx  (default) -static-libstdc++ -static-libgcc -Wl,--exclude-libs,ALL
#                     -Wl,-Bsymbolic: the static runtime stays private to the extension
#   dynamic-libstdcxx the shared libstdc++.so.6 named by its path: the process's own runtime
#   stock             the checkout's setup.py as it is
set -euo pipefail

src=$(realpath "$1")
target=$(realpath -m "$2")
variant=${3:-static-libstdcxx}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

for need in setup.py csrc/python_api.cpp deep_ep/__init__.py deep_ep/buffers/legacy.py \
    deep_ep/buffers/elastic.py third-party/fmt/include/fmt/format.h; do
    [[ -e "$src/$need" ]] || { echo "error: $src/$need is missing" >&2; exit 2; }
done

case "$variant" in
    stock) link_args="" ;;
    static-libstdcxx) link_args="-static-libstdc++ -static-libgcc -Wl,--exclude-libs,ALL -Wl,-Bsymbolic" ;;
    dynamic-libstdcxx) link_args="-Wl,--no-as-needed $(g++ -print-file-name=libstdc++.so.6)" ;;
    *) echo "error: unknown variant $variant" >&2; exit 2 ;;
esac

# NCCL and NVSHMEM roots: the directories holding lib/ and include/ of the pip wheels.
read -r nccl_root nvshmem_root < <(python3 - <<'PY'
import importlib.metadata as md
import pathlib
import sys


def root(dist: str, library: str, headers: tuple[str, ...]) -> str:
    try:
        files = md.distribution(dist).files or []
    except md.PackageNotFoundError:
        sys.exit(f"error: {dist} is not installed for {sys.executable}")
    for f in files:
        if pathlib.PurePath(str(f)).name.startswith(library):
            lib = pathlib.Path(f.locate()).resolve().parent
            base = lib.parent if lib.name == "lib" else lib
            missing = [h for h in headers if not (base / "include" / h).exists()]
            if missing:
                sys.exit(f"error: {base}/include lacks {', '.join(missing)}")
            return str(base)
    sys.exit(f"error: {dist} has no {library}*")


print(
    root("nvidia-nccl-cu13", "libnccl.so", ("nccl.h", "nccl_device/core.h")),
    root("nvidia-nvshmem-cu13", "libnvshmem_host.so", ("nvshmem.h",)),
)
PY
)
[[ -n "${nvshmem_root:-}" ]] || { echo "error: NCCL or NVSHMEM not found (above)" >&2; exit 2; }
if [[ -n "${DEEPEP_NCCL_INCLUDE:-}" ]]; then
    headers=$(realpath "$DEEPEP_NCCL_INCLUDE")
    [[ -e "$headers/nccl.h" && -e "$headers/nccl_device/core.h" ]] || {
        echo "error: DEEPEP_NCCL_INCLUDE=$headers has no nccl.h and nccl_device/core.h" >&2; exit 2; }
    merged="$target/nccl-root"
    rm -rf "$merged" && mkdir -p "$merged/lib" && cp -a "$headers" "$merged/include"
    ln -s "$nccl_root"/lib/* "$merged/lib/"
    echo "NCCL headers: $headers; libraries: $nccl_root/lib (mismatched on purpose, see above)"
    nccl_root=$merged
fi
echo "NCCL: $nccl_root ($(grep -hE '^#define NCCL_(MAJOR|MINOR|PATCH)' "$nccl_root/include/nccl.h" | awk '{print $3}' | paste -sd.))"
echo "NVSHMEM: $nvshmem_root ($(ls "$nvshmem_root/lib" | paste -sd' '))"
export EP_NCCL_ROOT_DIR=$nccl_root EP_NVSHMEM_ROOT_DIR=$nvshmem_root

# -lcuda: the driver's libcuda.so, else the toolkit's link stub (the driver's libcuda.so.1 loads
# at run time either way).
cuda_home=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}
if ! ldconfig -p | grep -q 'libcuda\.so '; then
    export LIBRARY_PATH="${LIBRARY_PATH:+$LIBRARY_PATH:}$cuda_home/lib64/stubs"
fi

cp -a "$src" "$scratch/DeepEP"
work="$scratch/DeepEP"
if [[ -n "$link_args" ]]; then
    python3 - "$work/setup.py" "$link_args" <<'PY'
import pathlib
import sys

path, link_args = pathlib.Path(sys.argv[1]), sys.argv[2].split()
text = path.read_text()
old = "extra_link_args = ['-lcuda']"
if old not in text:
    raise SystemExit("error: setup.py does not contain the line this variant extends")
path.write_text(text.replace(old, f"extra_link_args = ['-lcuda'] + {link_args!r}", 1))
PY
fi

cd "$work"
started=$(date +%s)
TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} MAX_JOBS=${MAX_JOBS:-16} \
    python3 -m pip install -q --no-build-isolation --no-deps --no-cache-dir --target "$target" .
echo "built DeepEP ($variant) into $target in $(( $(date +%s) - started )) s"
so=$(ls "$target"/deep_ep/_C*.so)
ls -la "$so"
readelf -d "$so" | grep -E "NEEDED|RPATH|RUNPATH|FLAGS" | sed "s|^|  $variant: |"
undefined=$(readelf -W --dyn-syms "$so" | grep ' UND ' | grep -E '_ZNS|_ZNKS|_ZSt' || true)
echo "  $variant: undefined std:: references: $(grep -c . <<<"$undefined"), versioned @GLIBCXX: $(grep -c '@GLIBCXX' <<<"$undefined")"
