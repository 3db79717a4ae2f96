#!/usr/bin/env bash
# Install what compiles HIP device code for gfx90a and gfx942 on Debian/Ubuntu (no AMD GPU
# needed): clang 19 in HIP mode, its linker and LLVM tools, the HIP headers and the ROCm
# device libraries. Idempotent and quiet; returns at once when everything is installed.
#
#   clang-19 lld-19   compile and link the code object (Debian's hipcc is clang 15: no gfx942)
#   llvm-19           llvm-objdump (tests read the MFMA instructions), llvm-as/llvm-dis (the
#                     gfx942 device-library file that Debian 12's ROCm 5.2 lacks is made by them)
#   libamdhip64-dev   <hip/hip_runtime.h> and friends
#   rocm-device-libs  ocml/ockl bitcode (math functions, printf)
#
# Measured on Debian 12 (bookworm), from nothing: 21 packages, 86 MB downloaded, 407 MB on
# disk, 10-15 s (apt-get update included); 0.05 s when already installed.
#
# usage: scripts/install_hip_toolchain.sh [--require]
#   --require   exit non-zero when the toolchain cannot be installed (default: warn and exit 0,
#               so setup goes on and the HIP compile tests skip with the reason)
set -euo pipefail

REQUIRE=0
[ "${1:-}" = "--require" ] && REQUIRE=1

fail() {
    echo "install_hip_toolchain: $*" >&2
    [ "$REQUIRE" = 1 ] && exit 1
    echo "install_hip_toolchain: HIP compile tests will be skipped" >&2
    exit 0
}

installed() {
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

# Fast path: clang, lld and llvm of one version >= 17, the HIP headers and the device libraries.
have_llvm=0
for version in 19 18 17; do
    installed "clang-$version" && installed "lld-$version" && installed "llvm-$version" && { have_llvm=1; break; }
done
if [ "$have_llvm" = 1 ] && installed libamdhip64-dev \
        && { installed rocm-device-libs || installed rocm-device-libs-17; }; then
    exit 0
fi

command -v apt-get >/dev/null 2>&1 || fail "no apt-get here: install clang >= 17, lld, llvm, the HIP headers and the ROCm device libraries by hand"
SUDO=""
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null || fail "needs root (or password-less sudo) to apt-get install"
    SUDO="sudo -n"
fi
export DEBIAN_FRONTEND=noninteractive

candidate() {
    local c
    c="$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}')"
    [ -n "$c" ] && [ "$c" != "(none)" ]
}

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
$SUDO apt-get update -qq >"$log" 2>&1 || { cat "$log" >&2; fail "apt-get update failed"; }

# Pick one LLVM version for clang, lld and llvm together.
packages=()
for version in 19 18 17; do
    if candidate "clang-$version" && candidate "lld-$version" && candidate "llvm-$version"; then
        packages+=("clang-$version" "lld-$version" "llvm-$version")
        break
    fi
done
[ "${#packages[@]}" = 3 ] || fail "the apt archive has no clang/lld/llvm 17, 18 or 19 (gfx942 needs clang >= 17)"
for group in "libamdhip64-dev" "rocm-device-libs rocm-device-libs-17"; do
    chosen=""
    for pkg in $group; do candidate "$pkg" && { chosen="$pkg"; break; }; done
    [ -n "$chosen" ] || fail "the apt archive has none of: $group"
    packages+=("$chosen")
done

$SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >"$log" 2>&1 \
    || { cat "$log" >&2; fail "apt-get install ${packages[*]} failed"; }
echo "install_hip_toolchain: installed ${packages[*]}"
