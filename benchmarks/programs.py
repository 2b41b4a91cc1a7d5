"""Build a corpus of different C programs as wasm, with several toolchains and opt levels.

Upstream C sources come from package registries with their ordinary clients (PyPI sdists
through ``pip download --no-binary :all: --no-deps``, npm tarballs through ``npm pack``):
zstd (zstandard sdists: zstd 1.5.5 and 1.5.6), Lua (lupa sdist: Lua 5.3.6 and 5.4.6), SQLite
(better-sqlite3 tarballs: SQLite 3.45.3 and 3.46.1), Brotli, LZ4 (lz4 sdist) and libyaml
(ruamel.yaml.clib sdist). Each program gets a small ``main`` driver (below), so every output
is also a runnable WASI command (``wasmtime prog.wasm`` / emcc's ``-sSTANDALONE_WASM``).

Toolchains (``TOOLCHAINS``): ``clang`` (``clang --target=wasm32-wasi --sysroot=/usr``:
Debian clang + wasi-libc, needs ``libclang-rt-14-dev-wasm32`` for compiler-rt), ``zig``
(``python -m ziglang cc -target wasm32-wasi``: zig's own wasi-libc; ``pip install ziglang``),
``emcc`` (Debian emscripten, ``-sSTANDALONE_WASM``: Emscripten's musl + dlmalloc).
Opt levels (``OPTS``): O2, Os, O3.

Every build writes ``NAME-VERSION.TOOLCHAIN.OPT.named.wasm`` (name section kept) and
``....stripped.wasm`` (all custom sections removed with ``wasm-tools strip --all``) into the
output directory, and ``MANIFEST.json`` lists them like the shared corpus (file, program,
version, toolchain, opt, role, pair_id, sha256, size, origin). Idempotent: a build whose two
files exist is skipped; a failed build is reported and the rest go on. The binaries never go
into git (default output ~/.cache/kbtool-programs).

Run:
    python benchmarks/programs.py                      # the whole matrix (~30 min on 2 cores)
    python benchmarks/programs.py --opt O2             # programs x toolchains at -O2 only
    python benchmarks/programs.py --program lua sqlite --toolchain clang --out DIR
    python benchmarks/programs.py --list               # what would be built
To extend the matrix, add a ``Program`` to ``PROGRAMS`` (sources + driver) or a toolchain
to ``TOOLCHAINS``; ``--smoke`` builds two small programs with clang at -O2.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_OUT = Path(os.environ.get("KBTOOL_PROGRAMS", Path.home() / ".cache" / "kbtool-programs"))
OPTS = ("O2", "Os", "O3")


@dataclass(frozen=True)
class Source:
    """An upstream archive: fetched with ``pip download`` (pypi) or ``npm pack`` (npm)."""

    kind: str  # "pypi" or "npm"
    spec: str  # zstandard==0.23.0 / better-sqlite3@11.3.0
    root: str  # top directory inside the archive


@dataclass(frozen=True)
class Program:
    name: str
    version: str
    source: Source
    files: tuple[str, ...]  # globs relative to the archive root
    exclude: tuple[str, ...] = ()  # file names left out
    includes: tuple[str, ...] = ()  # -I, relative to the archive root
    defines: tuple[str, ...] = ()
    driver: str = ""  # C source of main()
    shim_setjmp: bool = False  # wasi-libc has no <setjmp.h>: give an empty one
    patches: tuple[tuple[str, str, str], ...] = ()  # (file, old, new) on a copy of the file
    extra: tuple[str, ...] = field(default=())

    @property
    def stem(self) -> str:
        return f"{self.name}-{self.version}"


ZSTD_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zstd.h"
int main(int argc, char **argv) {
  size_t n = 1 << 16; char *src = malloc(n);
  for (size_t i = 0; i < n; i++) src[i] = "the quick brown fox "[i % 20] + (char)(i / 4096);
  int level = argc > 1 ? atoi(argv[1]) : 3;
  size_t cap = ZSTD_compressBound(n); char *dst = malloc(cap), *back = malloc(n);
  size_t c = ZSTD_compress(dst, cap, src, n, level);
  if (ZSTD_isError(c)) { fprintf(stderr, "%s\n", ZSTD_getErrorName(c)); return 1; }
  ZSTD_DCtx *d = ZSTD_createDCtx();
  size_t r = ZSTD_decompressDCtx(d, back, n, dst, c);
  ZSTD_CCtx *cc = ZSTD_createCCtx(); ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
  ZSTD_inBuffer in = {src, n, 0}; ZSTD_outBuffer out = {dst, cap, 0};
  ZSTD_compressStream2(cc, &out, &in, ZSTD_e_end);
  printf("zstd %s: %zu -> %zu -> %zu (%s), stream %zu\n", ZSTD_versionString(), n, c, r,
         memcmp(src, back, n) ? "bad" : "ok", out.pos);
  ZSTD_freeDCtx(d); ZSTD_freeCCtx(cc); free(src); free(dst); free(back); return 0;
}
"""

LUA_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
static const luaL_Reg libs[] = {
  {"_G", luaopen_base}, {LUA_TABLIBNAME, luaopen_table}, {LUA_STRLIBNAME, luaopen_string},
  {LUA_MATHLIBNAME, luaopen_math}, {LUA_COLIBNAME, luaopen_coroutine},
  {LUA_UTF8LIBNAME, luaopen_utf8}, {LUA_DBLIBNAME, luaopen_debug}, {NULL, NULL}};
static const char *script =
  "local t = {} for i = 1, 200 do t[#t + 1] = string.format('%05d', (i * 7919) % 1009) end\n"
  "table.sort(t) local co = coroutine.wrap(function(a) coroutine.yield(a * 2) end)\n"
  "print(_VERSION, #t, t[1], t[#t], co(21), math.floor(math.pi * 1000), utf8.char(72, 105))\n";
int main(int argc, char **argv) {
  lua_State *L = luaL_newstate();
  for (const luaL_Reg *l = libs; l->func; l++) { luaL_requiref(L, l->name, l->func, 1); lua_pop(L, 1); }
  int rc = argc > 1 ? luaL_dofile(L, argv[1]) : luaL_dostring(L, script);
  if (rc) fprintf(stderr, "%s\n", lua_tostring(L, -1));
  lua_close(L); return rc;
}
"""

SQLITE_MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "sqlite3.h"
/* SQLITE_OS_OTHER: a VFS that opens nothing (":memory:" databases need no file) */
static int xOpen(sqlite3_vfs *v, const char *n, sqlite3_file *f, int fl, int *o) { return SQLITE_CANTOPEN; }
static int xDelete(sqlite3_vfs *v, const char *n, int s) { return SQLITE_OK; }
static int xAccess(sqlite3_vfs *v, const char *n, int f, int *r) { *r = 0; return SQLITE_OK; }
static int xFull(sqlite3_vfs *v, const char *n, int k, char *o) { sqlite3_snprintf(k, o, "%s", n); return SQLITE_OK; }
static int xRand(sqlite3_vfs *v, int k, char *o) { for (int i = 0; i < k; i++) o[i] = (char)(i * 37 + 11); return k; }
static int xSleep(sqlite3_vfs *v, int us) { return us; }
static int xTime(sqlite3_vfs *v, double *t) { *t = 2460000.5; return SQLITE_OK; }
static int xErr(sqlite3_vfs *v, int k, char *o) { return 0; }
static sqlite3_vfs vfs = {1, sizeof(int), 512, 0, "none", 0, xOpen, xDelete, xAccess, xFull,
                          0, 0, 0, 0, xRand, xSleep, xTime, xErr};
int sqlite3_os_init(void) { return sqlite3_vfs_register(&vfs, 1); }
int sqlite3_os_end(void) { return SQLITE_OK; }
static int row(void *u, int n, char **v, char **c) {
  for (int i = 0; i < n; i++) printf("%s%s", i ? "|" : "", v[i] ? v[i] : "NULL");
  printf("\n"); return 0;
}
int main(int argc, char **argv) {
  sqlite3 *db; char *err = 0;
  if (sqlite3_open(":memory:", &db)) { fprintf(stderr, "open failed\n"); return 1; }
  const char *sql = argc > 1 ? argv[1] :
    "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);"
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500)"
    " INSERT INTO t(b, c) SELECT printf('row%03d', i % 97), i * 1.5 FROM n;"
    "CREATE INDEX tb ON t(b);"
    "SELECT sqlite_version(), count(*), sum(c), max(b), group_concat(DISTINCT substr(b, 4, 1))"
    " FROM t WHERE b LIKE 'row0%';"
    "SELECT b, avg(c) FROM t GROUP BY b ORDER BY 2 DESC LIMIT 3;";
  int rc = sqlite3_exec(db, sql, row, 0, &err);
  if (rc) { fprintf(stderr, "%s\n", err); sqlite3_free(err); }
  sqlite3_close(db); return rc;
}
"""

BROTLI_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <brotli/encode.h>
#include <brotli/decode.h>
int main(int argc, char **argv) {
  size_t n = 1 << 15; uint8_t *src = malloc(n);
  for (size_t i = 0; i < n; i++) src[i] = (uint8_t)("lorem ipsum dolor sit amet "[i % 27] ^ (i >> 11));
  int q = argc > 1 ? atoi(argv[1]) : 9;
  size_t cn = BrotliEncoderMaxCompressedSize(n); uint8_t *dst = malloc(cn), *back = malloc(n);
  if (!BrotliEncoderCompress(q, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, n, src, &cn, dst)) return 1;
  size_t bn = n;
  BrotliDecoderResult r = BrotliDecoderDecompress(cn, dst, &bn, back);
  printf("brotli %x: %zu -> %zu -> %zu (%s)\n", BrotliEncoderVersion(), n, cn, bn,
         r == BROTLI_DECODER_RESULT_SUCCESS && !memcmp(src, back, n) ? "ok" : "bad");
  free(src); free(dst); free(back); return 0;
}
"""

LZ4_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lz4.h"
#include "lz4hc.h"
#include "lz4frame.h"
int main(int argc, char **argv) {
  int n = 1 << 16; char *src = malloc(n);
  for (int i = 0; i < n; i++) src[i] = "abcabcabd0123"[i % 13] + (char)(i >> 12);
  int cap = LZ4_compressBound(n); char *dst = malloc(cap), *back = malloc(n);
  int c = LZ4_compress_HC(src, dst, n, cap, argc > 1 ? atoi(argv[1]) : 9);
  int d = LZ4_decompress_safe(dst, back, c, n);
  size_t fcap = LZ4F_compressFrameBound(n, NULL); char *f = malloc(fcap);
  size_t fc = LZ4F_compressFrame(f, fcap, src, n, NULL);
  LZ4F_dctx *dc; LZ4F_createDecompressionContext(&dc, LZ4F_VERSION);
  size_t on = n, in = fc; LZ4F_decompress(dc, back, &on, f, &in, NULL);
  printf("lz4 %s: %d -> %d -> %d, frame %zu -> %zu (%s)\n", LZ4_versionString(), n, c, d, fc, on,
         memcmp(src, back, n) ? "bad" : "ok");
  LZ4F_freeDecompressionContext(dc); free(src); free(dst); free(back); free(f); return 0;
}
"""

YAML_MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "yaml.h"
static const char *doc = "name: kbtool\nitems:\n  - {a: 1, b: [x, y]}\n  - &r text\n  - *r\n"
                         "block: |\n  two\n  lines\n...\n";
static unsigned char out[4096]; static size_t outn;
int main(int argc, char **argv) {
  yaml_parser_t p; yaml_emitter_t e; yaml_event_t ev; int events = 0, ok = 1;
  const char *in = argc > 1 ? argv[1] : doc;
  yaml_parser_initialize(&p); yaml_parser_set_input_string(&p, (const unsigned char *)in, strlen(in));
  yaml_emitter_initialize(&e); yaml_emitter_set_output_string(&e, out, sizeof out, &outn);
  for (;;) {
    if (!yaml_parser_parse(&p, &ev)) { fprintf(stderr, "parse: %s\n", p.problem); ok = 0; break; }
    int end = ev.type == YAML_STREAM_END_EVENT; events++;
    if (!yaml_emitter_emit(&e, &ev)) { fprintf(stderr, "emit: %s\n", e.problem); ok = 0; break; }
    if (end) break;
  }
  yaml_document_t d; yaml_parser_delete(&p); yaml_parser_initialize(&p);
  yaml_parser_set_input_string(&p, (const unsigned char *)in, strlen(in));
  int loaded = yaml_parser_load(&p, &d);
  printf("libyaml %s: %d events, loaded %d, %zu bytes\n%s", yaml_get_version_string(), events,
         loaded, outn, out);
  if (loaded) yaml_document_delete(&d);
  yaml_parser_delete(&p); yaml_emitter_delete(&e); return !ok;
}
"""

_ZSTD = {
    v: Source("pypi", f"zstandard=={z}", f"zstandard-{z}")
    for v, z in (("1.5.5", "0.22.0"), ("1.5.6", "0.23.0"))
}
_LUPA = Source("pypi", "lupa==2.2", "lupa-2.2")
_SQLITE = {
    v: Source("npm", f"better-sqlite3@{b}", "package")
    for v, b in (("3.45.3", "9.6.0"), ("3.46.1", "11.3.0"))
}
_LUA_DEFS = (
    "_WASI_EMULATED_SIGNAL=1",
    "l_randomizePivot()=0",
    "LUAI_THROW(L,c)=abort()",
    "LUAI_TRY(L,c,a)=a",
    "luai_jmpbuf=int",
)
_LUA_SKIP = (
    "lua.c",
    "luac.c",
    "loslib.c",
    "liolib.c",
    "loadlib.c",
    "linit.c",
    "onelua.c",
    "ltests.c",
)

PROGRAMS: tuple[Program, ...] = (
    *(
        Program(
            "zstd",
            v,
            s,
            ("zstd/zstd.c",),
            includes=("zstd",),
            defines=("ZSTD_DISABLE_ASM=1",),
            driver=ZSTD_MAIN,
            patches=(("zstd/zstd.c", "#define ZSTD_MULTITHREAD\n", "\n"),),
        )
        for v, s in _ZSTD.items()
    ),
    *(
        Program(
            "lua",
            v,
            _LUPA,
            (f"third-party/{d}/*.c",),
            exclude=_LUA_SKIP,
            includes=(f"third-party/{d}",),
            defines=_LUA_DEFS,
            driver=LUA_MAIN,
            shim_setjmp=True,
        )
        for v, d in (("5.3.6", "lua53"), ("5.4.6", "lua54"))
    ),
    *(
        Program(
            "sqlite",
            v,
            s,
            ("deps/sqlite3/sqlite3.c",),
            includes=("deps/sqlite3",),
            defines=(
                "SQLITE_OS_OTHER=1",
                "SQLITE_THREADSAFE=0",
                "SQLITE_TEMP_STORE=3",
                "SQLITE_OMIT_LOAD_EXTENSION=1",
                "SQLITE_OMIT_WAL=1",
            ),
            driver=SQLITE_MAIN,
        )
        for v, s in _SQLITE.items()
    ),
    Program(
        "brotli",
        "1.1.0",
        Source("pypi", "Brotli==1.1.0", "Brotli-1.1.0"),
        ("c/common/*.c", "c/dec/*.c", "c/enc/*.c"),
        includes=("c/include",),
        driver=BROTLI_MAIN,
    ),
    Program(
        "lz4",
        "1.9.4",
        Source("pypi", "lz4==4.3.3", "lz4-4.3.3"),
        ("lz4libs/lz4.c", "lz4libs/lz4hc.c", "lz4libs/lz4frame.c", "lz4libs/xxhash.c"),
        includes=("lz4libs",),
        driver=LZ4_MAIN,
    ),
    Program(
        "libyaml",
        "0.1.7",
        Source("pypi", "ruamel.yaml.clib==0.2.8", "ruamel.yaml.clib-0.2.8"),
        tuple(
            f"{m}.c"
            for m in ("api", "reader", "scanner", "parser", "loader", "writer", "emitter", "dumper")
        ),
        includes=(".",),
        defines=("HAVE_CONFIG_H=1", "YAML_DECLARE_STATIC=1"),
        driver=YAML_MAIN,
    ),
)


def _zig() -> list[str]:
    return [sys.executable, "-m", "ziglang", "cc", "-target", "wasm32-wasi"]


TOOLCHAINS: dict[str, dict] = {
    "clang": {
        "cc": lambda: ["clang", "--target=wasm32-wasi", "--sysroot=/usr"],
        "flags": [],
        "available": lambda: (
            bool(shutil.which("clang")) and Path("/usr/lib/wasm32-wasi/libc.a").exists()
        ),
    },
    "zig": {
        "cc": _zig,
        "flags": ["-g0"],
        "available": lambda: (
            subprocess.run(_zig()[:3] + ["version"], capture_output=True).returncode == 0
        ),
    },
    "emcc": {
        "cc": lambda: ["emcc"],
        "flags": ["-sSTANDALONE_WASM", "-sALLOW_MEMORY_GROWTH=1", "--profiling-funcs"],
        "available": lambda: bool(shutil.which("emcc")),
    },
}


def fetch(src: Source, cache: Path) -> Path:
    """The extracted archive root of ``src`` under ``cache/src`` (downloaded once)."""
    base = cache / "src" / src.spec.replace("==", "-").replace("@", "-")
    root = base / src.root
    if root.is_dir():
        return root
    dl = base / "dl"
    dl.mkdir(parents=True, exist_ok=True)
    if src.kind == "pypi":
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-binary",
            ":all:",
            "--no-deps",
            "-d",
            str(dl),
            src.spec,
        ]
    else:
        cmd = ["npm", "pack", "--silent", "--pack-destination", str(dl), src.spec]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode and src.kind == "pypi":  # its metadata build wants tools: use ours
        r = subprocess.run(
            cmd[:-1] + ["--no-build-isolation", src.spec], capture_output=True, text=True
        )
    archives = [p for p in dl.iterdir() if p.name.endswith((".tar.gz", ".tgz"))]
    if r.returncode or not archives:
        raise RuntimeError(f"could not fetch {src.spec}: {(r.stderr or r.stdout).strip()[-300:]}")
    with tarfile.open(archives[0]) as t:
        t.extractall(base, filter="data")
    if not root.is_dir():
        raise RuntimeError(f"{src.spec}: no {src.root}/ in the archive")
    return root


def _name_from_map(wasm: Path, link_map: Path) -> None:
    """Add a name section to ``wasm`` from a wasm-ld link map (CODE entries in body order)."""
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "kbtool" / "analysis" / "refs"))
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from make_fingerprints import map_names

    from kbtool.wasm import parse_module
    from kbtool.wasm.namesec import with_function_names

    data = wasm.read_bytes()
    m = parse_module(data)
    listed = map_names(link_map.read_text())
    if len(listed) != len(m.code):
        raise RuntimeError(f"{wasm}: link map lists {len(listed)} bodies, module has {len(m.code)}")
    wasm.write_bytes(
        with_function_names(data, {m.num_func_imports + k: n for k, n in enumerate(listed)})
    )


def build_one(prog: Program, tc: str, opt: str, out: Path) -> list[dict]:
    """Build one (program, toolchain, opt): the named and stripped files' manifest rows."""
    pair = f"{prog.stem}.{tc}.{opt}"
    named, stripped = out / f"{pair}.named.wasm", out / f"{pair}.stripped.wasm"
    if not (named.exists() and stripped.exists()):
        root = fetch(prog.source, out)
        work = out / "build" / pair
        work.mkdir(parents=True, exist_ok=True)
        (work / "main.c").write_text(prog.driver)
        files = sorted(
            f
            for g in prog.files
            for f in glob.glob(str(root / g))
            if Path(f).name not in prog.exclude
        )
        if not files:
            raise RuntimeError(f"{pair}: no sources matched {prog.files}")
        for rel, old, new in prog.patches:  # single-threaded builds etc.: patch a copy
            orig = str(root / rel)
            text = Path(orig).read_text(errors="surrogateescape")
            if old not in text:
                raise RuntimeError(f"{pair}: patch does not apply to {rel}")
            copy = work / Path(rel).name
            copy.write_text(text.replace(old, new, 1), errors="surrogateescape")
            files = [str(copy) if f == orig else f for f in files]
        inc = [f"-I{root / i}" for i in prog.includes]
        if prog.shim_setjmp:
            (work / "shim").mkdir(exist_ok=True)
            (work / "shim" / "setjmp.h").write_text("typedef int jmp_buf[1];\n")
            inc.insert(0, f"-I{work / 'shim'}")
        tool = TOOLCHAINS[tc]
        cmd = [
            *tool["cc"](),
            f"-{opt}",
            *tool["flags"],
            *inc,
            *(f"-D{d}" for d in prog.defines),
            "-w",
            str(work / "main.c"),
            *files,
            *prog.extra,
            "-o",
            str(work / "out.wasm"),
        ]
        env = dict(os.environ)
        if tc == "clang":
            # wasm-ld 14 writes no name section and clang runs binaryen's wasm-opt after the
            # link when it is on PATH (dropping names): link with the LLVM tools only, and
            # name the functions from the link map (as kbtool/analysis/refs/build.sh does)
            (work / "bin").mkdir(exist_ok=True)
            for t in ("clang", "wasm-ld", "wasm-ld-14"):
                if shutil.which(t) and not (work / "bin" / t).exists():
                    (work / "bin" / t).symlink_to(shutil.which(t))
            env["PATH"] = str(work / "bin")
            cmd[0] = str(work / "bin" / "clang")
            cmd.append(f"-Wl,--Map={work / 'out.map'}")
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=work, env=env)
        if r.returncode:
            raise RuntimeError(f"{pair}: build failed: {r.stderr.strip()[-600:]}")
        strip = shutil.which("wasm-tools")
        if strip is None:
            raise RuntimeError("wasm-tools not on PATH (pip install wasm-tools)")
        if tc == "clang":
            _name_from_map(work / "out.wasm", work / "out.map")
        subprocess.run([strip, "strip", str(work / "out.wasm"), "-o", str(named)], check=True)
        subprocess.run(
            [strip, "strip", "--all", str(work / "out.wasm"), "-o", str(stripped)], check=True
        )
        print(f"built {pair} in {time.perf_counter() - t0:.0f}s", flush=True)
    rows = []
    for role, p in (("named", named), ("stripped", stripped)):
        data = p.read_bytes()
        rows.append(
            {
                "file": p.name,
                "program": prog.name,
                "version": prog.version,
                "toolchain": tc,
                "opt": opt,
                "role": role,
                "pair_id": pair,
                "sha256": hashlib.sha256(data).hexdigest(),
                "size": len(data),
                "origin": f"{prog.source.kind}:{prog.source.spec}",
            }
        )
    return rows


def load_manifest(out: Path) -> list[dict]:
    """The manifest rows of a built corpus ([] when none)."""
    p = out / "MANIFEST.json"
    if not p.exists():
        return []
    return [m for m in json.loads(p.read_text())["modules"] if (out / m["file"]).exists()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="output dir (default %(default)s)"
    )
    ap.add_argument("--program", nargs="*", help="program names (default: all)")
    ap.add_argument("--toolchain", nargs="*", choices=sorted(TOOLCHAINS), help="default: all")
    ap.add_argument("--opt", nargs="*", choices=OPTS, help="default: all")
    ap.add_argument("--list", action="store_true", help="print the matrix, build nothing")
    ap.add_argument("--smoke", action="store_true", help="lz4 and libyaml, clang, -O2")
    args = ap.parse_args(argv)
    if args.smoke:
        args.program, args.toolchain, args.opt = ["lz4", "libyaml"], ["clang"], ["O2"]
    progs = [p for p in PROGRAMS if not args.program or p.name in args.program]
    tcs = args.toolchain or list(TOOLCHAINS)
    opts = args.opt or list(OPTS)
    if args.list:
        for p in progs:
            print(f"{p.stem:<16} {p.source.kind}:{p.source.spec}")
        print("toolchains:", " ".join(tcs), " opts:", " ".join(opts))
        return 0
    out = args.out.expanduser()
    out.mkdir(parents=True, exist_ok=True)
    have = {m["file"]: m for m in load_manifest(out)}
    failed = 0
    for tc in tcs:
        if not TOOLCHAINS[tc]["available"]():
            print(f"toolchain {tc} not available: skipped")
            continue
        for opt in opts:
            for p in progs:
                try:
                    for row in build_one(p, tc, opt, out):
                        have[row["file"]] = row
                except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
                    failed += 1
                    print(f"error: {exc}".splitlines()[0][:300], flush=True)
                (out / "MANIFEST.json").write_text(
                    json.dumps(
                        {"modules": sorted(have.values(), key=lambda m: m["file"])}, indent=1
                    )
                )
    print(f"{len(have)} files in {out / 'MANIFEST.json'}, {failed} builds failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
