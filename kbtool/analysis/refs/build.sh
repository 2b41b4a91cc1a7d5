#!/bin/sh
# Build the reference modules the committed fingerprints are derived from.
# Usage: kbtool/analysis/refs/build.sh OUTDIR
# Needs: clang + lld + Debian wasi-libc (+ libclang-rt-14-dev-wasm32); emcc optional.
# The outputs link third-party libc code: they are NOT committed, only the derived
# fingerprints (kbtool/analysis/data/fingerprints.json, see make_fingerprints.py).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUTDIR}
mkdir -p "$out"
sysroot=${WASI_SYSROOT:-/usr}
for src in libc_strings libc_stdio; do
  for opt in O2 Os O3 Oz; do
    clang --target=wasm32-wasi --sysroot="$sysroot" -"$opt" "$here/$src.c" \
      -o "$out/wasi-$src-$opt.wasm"
  done
  clang --target=wasm32-wasi --sysroot="$sysroot" -O2 -mbulk-memory -ftls-model=local-exec "$here/$src.c" \
    -o "$out/wasi-$src-O2-bulk.wasm"
done
if command -v emcc >/dev/null 2>&1; then
  for src in libc_strings libc_stdio; do
    for opt in O2 Os; do
      emcc -"$opt" --profiling-funcs "$here/$src.c" -o "$out/emcc-$src-$opt.wasm"
    done
  done
  emcc -O2 -pthread --profiling-funcs -sPTHREAD_POOL_SIZE=4 "$here/libc_threads.c" \
    -o "$out/emcc-libc_threads-O2.js" || test -s "$out/emcc-libc_threads-O2.wasm"
  # (Debian's emcc may lack node's acorn for the JS minifier; the .wasm is complete)
fi
