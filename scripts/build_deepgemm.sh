#!/usr/bin/env bash
# Build DeepGEMM's torch extension from a source checkout already on this machine.
#
#   scripts/build_deepgemm.sh SRC TARGET [VARIANT]
#
# SRC is a checkout of sgl-project/DeepGEMM (branch main) whose third-party/cutlass/include
# holds CUTLASS's cutlass/ and cute/ headers and third-party/fmt/include fmt's headers (the
# submodule revisions the checkout pins). This script fetches nothing: it copies SRC to a
# scratch directory, applies the variant there (SRC is left untouched) and runs
#   pip install --no-build-isolation --no-deps --target TARGET .
# against the python3 on PATH and its torch. Then `PYTHONPATH=TARGET python3 -c "import deep_gemm"`.
#
# VARIANT is one hypothesis about the JIT segfault, each tried on the H200 (docs/gpu-deepgemm.md;
# "runs" = every JIT kernel of scripts/deepgemm_probe.py runs and is correct):
#   static-libstdcxx  (default; the build the measured runs used; runs)
#                     -static-libstdc++ -static-libgcc -Wl,--exclude-libs,ALL -Wl,-Bsymbolic
#   dynamic-libstdcxx (runs) stock, plus the shared libstdc++.so.6 named by its path, so the
#                     runtime is the process's one (NEEDED libstdc++.so.6, versioned references)
#   exclude-libs      (runs) stock, plus -Wl,--exclude-libs,ALL: the static copy stays private
#   stock             (segfaults) the checkout as it is: the image's CXX (/opt/gcc/bin/g++)
#                     links libstdc++ in statically and exports that copy's symbols
#   bsymbolic         (segfaults) -Wl,-Bsymbolic: the extension's references bind to its own
#                     definitions (std::regex templates), not the weak copies torch exports
#   no-regex          (segfaults) std::regex replaced by a hand-written scanner in
#                     csrc/jit/include_parser.hpp and by sscanf for the nvcc version
#   cxx20             (segfaults) -std=c++20 instead of -std=c++17 for the extension
#   link-libstdcxx    (segfaults) -Wl,--no-as-needed -lstdc++: resolves to the static archive too
set -euo pipefail

src=$(realpath "$1")
target=$(realpath -m "$2")
variant=${3:-static-libstdcxx}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

for need in third-party/cutlass/include/cute third-party/cutlass/include/cutlass \
    third-party/fmt/include/fmt setup.py csrc/python_api.cpp; do
    [[ -e "$src/$need" ]] || { echo "error: $src/$need is missing" >&2; exit 2; }
done

cp -a "$src" "$scratch/DeepGEMM"
work="$scratch/DeepGEMM"

link_args=""
case "$variant" in
    stock) ;;
    bsymbolic) link_args="-Wl,-Bsymbolic" ;;
    static-libstdcxx) link_args="-static-libstdc++ -static-libgcc -Wl,--exclude-libs,ALL -Wl,-Bsymbolic" ;;
    link-libstdcxx) link_args="-Wl,--no-as-needed -lstdc++" ;;
    exclude-libs) link_args="-Wl,--exclude-libs,ALL" ;;
    dynamic-libstdcxx) link_args="-Wl,--no-as-needed $(g++ -print-file-name=libstdc++.so.6)" ;;
    no-regex | cxx20) ;;
    *) echo "error: unknown variant $variant" >&2; exit 2 ;;
esac

python3 - "$work" "$variant" "$link_args" <<'PY'
import pathlib
import sys

work, variant, link_args = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3].split()


def patch(relative: str, old: str, new: str) -> None:
    path = work / relative
    text = path.read_text()
    if old not in text:
        raise SystemExit(f"error: {relative} does not contain the text this variant replaces")
    path.write_text(text.replace(old, new, 1))


if link_args:
    patch(
        "setup.py",
        "extra_compile_args=cxx_flags)",
        f"extra_compile_args=cxx_flags, extra_link_args={link_args!r})",
    )
if variant == "cxx20":
    patch("setup.py", "cxx_flags = ['-std=c++17'", "cxx_flags = ['-std=c++20'")
if variant == "no-regex":
    patch(
        "csrc/jit/include_parser.hpp",
        """        const std::regex pattern(R"(#\\s*include\\s*[<"][^>"]+[>"])");
        std::sregex_iterator iter(code.begin(), code.end(), pattern);
        const std::sregex_iterator end;

        // TODO: parse relative paths as well
        for (; iter != end; ++ iter) {
            const auto include_str = iter->str();""",
        """        // std::regex replaced by a scan for `#\\s*include\\s*[<"][^>"]+[>"]` (build variant no-regex)
        std::vector<std::string> matches;
        for (size_t pos = code.find('#'); pos != std::string::npos; pos = code.find('#', pos + 1)) {
            size_t i = pos + 1;
            while (i < code.size() and std::isspace(static_cast<unsigned char>(code[i]))) ++ i;
            if (code.compare(i, 7, "include") != 0) continue;
            i += 7;
            while (i < code.size() and std::isspace(static_cast<unsigned char>(code[i]))) ++ i;
            if (i >= code.size() or (code[i] != '<' and code[i] != '"')) continue;
            size_t j = i + 1;
            while (j < code.size() and code[j] != '>' and code[j] != '"') ++ j;
            if (j >= code.size() or j == i + 1) continue;
            matches.push_back(code.substr(pos, j + 1 - pos));
            pos = j;
        }

        for (const auto& include_str: matches) {""",
    )
    patch(
        "csrc/jit/compiler.hpp",
        """        std::smatch match;
        DG_HOST_ASSERT(std::regex_search(output, match, std::regex(R"(release (\\d+\\.\\d+))")));
        std::sscanf(match[1].str().c_str(), "%d.%d", &major, &minor);""",
        """        const auto release = output.find("release ");
        DG_HOST_ASSERT(release != std::string::npos);
        DG_HOST_ASSERT(std::sscanf(output.c_str() + release, "release %d.%d", &major, &minor) == 2);""",
    )
PY

cd "$work"
started=$(date +%s)
DG_USE_LOCAL_VERSION=0 TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} MAX_JOBS=${MAX_JOBS:-16} \
    python3 -m pip install -q --no-build-isolation --no-deps --no-cache-dir --target "$target" .
echo "built DeepGEMM ($variant) into $target in $(( $(date +%s) - started )) s"
so=$(ls "$target"/deep_gemm/_C*.so)
readelf -d "$so" | grep -E "NEEDED|FLAGS" | sed "s|^|  $variant: |"
undefined=$(readelf -W --dyn-syms "$so" | grep ' UND ' | grep -E '_ZNS|_ZNKS|_ZSt' || true)
echo "  $variant: undefined std:: references: $(grep -c . <<<"$undefined"), versioned @GLIBCXX: $(grep -c '@GLIBCXX' <<<"$undefined")"
