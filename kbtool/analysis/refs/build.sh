#!/bin/sh
# Build the reference modules the committed fingerprints are derived from.
# Usage: kbtool/analysis/refs/build.sh OUTDIR
# wasm-ld 14 writes no name section here, so the wasi builds get a link map (-Map): its CODE
# entries name the bodies in order (the truth for make_fingerprints.py).
# Needs: clang + lld + Debian wasi-libc (+ libclang-rt-14-dev-wasm32); emcc, zig and the
# Debian rustc with its wasm32 std (apt-get install rustc libstd-rust-dev-wasm32) optional.
# The outputs link third-party libc code: they are NOT committed, only the derived
# fingerprints (kbtool/analysis/data/fingerprints.json, see make_fingerprints.py).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUTDIR}
mkdir -p "$out"
sysroot=${WASI_SYSROOT:-/usr}
# clang runs binaryen's wasm-opt after linking when it is on PATH (it drops the name
# section); run the wasi builds with a PATH that has only the LLVM tools
llvm_bin="$out/.llvm-bin"
mkdir -p "$llvm_bin"
ln -sf "$(command -v clang)" "$llvm_bin/clang"
for ld in wasm-ld wasm-ld-14 wasm-ld-15 wasm-ld-16 wasm-ld-19; do
  if command -v "$ld" >/dev/null 2>&1; then ln -sf "$(command -v "$ld")" "$llvm_bin/$ld"; fi
done
for src in libc_strings libc_stdio; do
  for opt in O2 Os O3 Oz; do
    PATH="$llvm_bin" clang --target=wasm32-wasi --sysroot="$sysroot" -"$opt" "$here/$src.c" \
      -o "$out/wasi-$src-$opt.wasm" -Wl,--Map="$out/wasi-$src-$opt.map"
  done
  PATH="$llvm_bin" clang --target=wasm32-wasi --sysroot="$sysroot" -O2 -mbulk-memory -ftls-model=local-exec "$here/$src.c" \
    -o "$out/wasi-$src-O2-bulk.wasm" -Wl,--Map="$out/wasi-$src-O2-bulk.map"
done
if [ -n "${ZIG:-}" ]; then  # optional: zig cc (its own wasi-libc + compiler_rt), e.g. from
  # the PyPI "ziglang" wheel: ZIG="python -m ziglang"
  # libc_threads: zig's wasi-libc is single-threaded; its pthread_mutex_* are the stubs
  for src in libc_strings libc_stdio libc_threads; do
    for opt in O2 Os; do
      $ZIG cc -target wasm32-wasi -"$opt" "$here/$src.c" -o "$out/zig-$src-$opt.wasm"
    done
  done
  # setjmp/longjmp through wasm exception handling (__wasm_setjmp, __wasm_setjmp_test,
  # __wasm_longjmp from wasi-libc's libsetjmp)
  for opt in O2 Os; do
    $ZIG cc -target wasm32-wasi -"$opt" -mllvm -wasm-enable-sjlj \
      -mcpu=generic+exception_handling "$here/libc_setjmp.c" "$here/c_longjmp_tag.s" \
      -lsetjmp -o "$out/zig-libc_setjmp-$opt.wasm"
  done
fi
if command -v emcc >/dev/null 2>&1; then
  for src in libc_strings libc_stdio libc_setjmp; do
    for opt in O2 Os; do
      emcc -"$opt" --profiling-funcs "$here/$src.c" -o "$out/emcc-$src-$opt.wasm"
    done
  done
  emcc -O2 -pthread --profiling-funcs -sPTHREAD_POOL_SIZE=4 "$here/libc_threads.c" \
    -o "$out/emcc-libc_threads-O2.js" || test -s "$out/emcc-libc_threads-O2.wasm"
  # threaded libc (-pthread: locks in malloc/stdio, futex waits, the pthread runtime) at
  # three opt-levels; the .js step may fail on the minifier, the .wasm is written before it
  for src in libc_threads libc_pthread_api libc_stdio libc_strings; do
    for opt in Os O3 O2; do
      w="$out/emcc-pthread-$src-$opt"
      [ "$src-$opt" = libc_threads-O2 ] && continue  # built above (kept for its id)
      rm -f "$w.wasm"
      emcc -"$opt" -pthread --profiling-funcs -sPTHREAD_POOL_SIZE=4 "$here/$src.c" \
        -o "$w.js" >/dev/null 2>&1 || test -s "$w.wasm"
    done
  done
  # setjmp through wasm exception handling (__wasm_longjmp) instead of JS invoke_*
  emcc -O2 --profiling-funcs -sSUPPORT_LONGJMP=wasm -fwasm-exceptions "$here/libc_setjmp.c" \
    -o "$out/emcc-libc_setjmp-O2-wasmsjlj.wasm"
  # (Debian's emcc may lack node's acorn for the JS minifier; the .wasm is complete)
fi
RUSTC=${RUSTC:-/usr/bin/rustc}  # Debian's rustc: rustup toolchains here lack the wasm32 std
if [ -x "$RUSTC" ]; then
  for target in wasm32-unknown-unknown wasm32-wasi; do
    if ! "$RUSTC" --print sysroot >/dev/null 2>&1 || \
       [ ! -d "$("$RUSTC" --print sysroot)/lib/rustlib/$target/lib" ]; then continue; fi
    kind=bin; [ "$target" = wasm32-unknown-unknown ] && kind=cdylib
    for opt in 2 s; do
      "$RUSTC" --target "$target" -C opt-level="$opt" --crate-type "$kind" \
        --crate-name kbref_rust_std -C strip=debuginfo "$here/rust_std.rs" \
        -o "$out/rust-$target-O$opt.wasm" 2>/dev/null
    done
  done
fi
