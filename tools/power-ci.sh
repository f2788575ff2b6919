#!/usr/bin/env bash
# The POWER build without a POWER machine: cross-compiles the library, `rudra` and the kernel
# and layer tests with Makefile.power (g++-powerpc64le-linux-gnu, static, portable: POWER8
# baseline), then runs the tests under qemu as a POWER8 (VSX level) and as a POWER10 (MMA
# level). Installs what it needs.
# Usage: tools/power-ci.sh [BUILD_DIR]   (default build-power)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-power}
sysroot=$PWD/$build/sysroot

need=()
for p in g++-powerpc64le-linux-gnu qemu-user-static libcli11-dev nlohmann-json3-dev doctest-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
  echo "power-ci: installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
fi

# zlib, liblmdb, libjpeg-turbo and libpng for ppc64el, unpacked into a private sysroot
# (installing foreign-architecture packages with apt fails on version skew; downloading and
# unpacking them works).
libdir=$sysroot/usr/lib/powerpc64le-linux-gnu
have_sysroot() { for a in libz.a liblmdb.a libjpeg.a libpng16.a; do [ -f "$libdir/$a" ] || return 1; done; }
if ! have_sysroot; then
  dpkg --print-foreign-architectures | grep -qx ppc64el || dpkg --add-architecture ppc64el
  # This archive's ppc64el index makes `apt-get update` exit 100 although the lists are usable;
  # the download below is what is checked.
  apt-get update -q >/dev/null 2>&1 || true
  dl=$(mktemp -d)
  for p in zlib1g-dev zlib1g liblmdb-dev liblmdb0 libjpeg62-turbo-dev libjpeg62-turbo libpng-dev libpng16-16; do
    (cd "$dl" && apt-get download "$p:ppc64el" >/dev/null 2>&1) || echo "power-ci: could not download $p:ppc64el"
  done
  mkdir -p "$sysroot"
  for deb in "$dl"/*.deb; do [ -f "$deb" ] && dpkg -x "$deb" "$sysroot"; done
  rm -rf "$dl"
  if ! have_sysroot; then
    echo "power-ci: could not unpack zlib, liblmdb, libjpeg and libpng for ppc64el into $sysroot" >&2
    exit 1
  fi
fi

make_power=(make -f Makefile.power CROSS=powerpc64le-linux-gnu- SYSROOT="$sysroot" STATIC=1 BUILD="$build")
echo "power-ci: cross-building ($build)"
"${make_power[@]}" -j"$(nproc)" >"$build.log" 2>&1 || { tail -40 "$build.log"; exit 1; }
# The portable build on the oldest ppc64le CPU (POWER8: the VSX level) and on a POWER10 (MMA).
for run in power8:vsx power10:mma; do
  cpu=${run%:*} isa=${run#*:}
  echo "power-ci: tests under qemu-ppc64le-static -cpu $cpu (expecting the ISA gate at $isa)"
  "${make_power[@]}" check RUN="env RUDRA_EXPECT_ISA=$isa timeout -k 10 900 qemu-ppc64le-static -cpu $cpu"
done
echo "power-ci: passed"
