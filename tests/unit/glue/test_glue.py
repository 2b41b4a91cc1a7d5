"""Tests for kbtool.glue (Emscripten JS glue -> real wasm names)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kbtool.glue import NO_SHAPE_NOTE, GlueNames, parse_glue

CORPUS = Path("/work/shared/corpus/release")
SQLJS_VERSIONS = ["1.10.3", "1.12.0"]


# --------------------------------------------------------------------------- helpers


def _leb_u32(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def wasm_export_names(data: bytes) -> dict[str, int]:
    """Tiny local reader: export name -> kind, from the wasm export section (id 7)."""
    assert data[:4] == b"\0asm"
    pos = 8
    out: dict[str, int] = {}
    while pos < len(data):
        sid = data[pos]
        size, pos = _leb_u32(data, pos + 1)
        end = pos + size
        if sid == 7:
            count, p = _leb_u32(data, pos)
            for _ in range(count):
                n, p = _leb_u32(data, p)
                name = data[p : p + n].decode("utf-8")
                p += n
                kind = data[p]
                _idx, p = _leb_u32(data, p + 1)
                out[name] = kind
        pos = end
    return out


def wasm_import_count(data: bytes) -> int:
    pos = 8
    while pos < len(data):
        sid = data[pos]
        size, pos = _leb_u32(data, pos + 1)
        if sid == 2:
            return _leb_u32(data, pos)[0]
        pos += size
    return 0


def sqljs(version: str) -> tuple[str, bytes]:
    js = CORPUS / f"sql.js-{version}.sql-wasm.js"
    wasm = CORPUS / f"sql.js-{version}.sql-wasm.wasm"
    if not js.exists() or not wasm.exists():
        pytest.skip("sql.js corpus not present")
    return js.read_text(encoding="utf-8"), wasm.read_bytes()


def assert_well_formed(g: GlueNames) -> None:
    ident = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
    for table in (g.exports, g.imports):
        for k, v in table.items():
            assert ident.fullmatch(k), k
            assert ident.fullmatch(v), v
    assert all(isinstance(n, str) and n for n in g.unknown)


# --------------------------------------------------------------------------- corpus


@pytest.mark.parametrize("version", SQLJS_VERSIONS)
def test_sqljs_known_pairs(version: str) -> None:
    js, _ = sqljs(version)
    g = parse_glue(js)
    assert_well_formed(g)
    # Pairs read off the glue by hand (identical in both releases).
    expected = {
        "xa": "sqlite3_open",
        "N": "sqlite3_prepare_v2",
        "O": "sqlite3_step",
        "Q": "sqlite3_exec",
        "R": "sqlite3_finalize",
        "_": "sqlite3_value_int",
        "$": "sqlite3_value_type",
        "wa": "sqlite3_create_function_v2",
        "va": "sqlite3_close_v2",
        "ya": "malloc",
        "za": "free",
    }
    for k, v in expected.items():
        assert g.exports.get(k) == v, (k, g.exports.get(k))
    assert g.import_module == "a"
    assert g.shape is not None and "emscripten-arrow-wrapper" in g.shape
    assert NO_SHAPE_NOTE not in g.unknown


def test_sqljs_1_10_3_specifics() -> None:
    js, _ = sqljs("1.10.3")
    g = parse_glue(js)
    # f._sqlite3_free=a=>(f._sqlite3_free=Z.K)(a)
    assert g.exports["K"] == "sqlite3_free"
    assert g.exports["Ba"] == "RegisterExtensionFunctions"
    # var ...,pa=()=>(pa=Z.Da)(),sa=a=>(sa=Z.Ea)(a),x=a=>(x=Z.Fa)(a);
    # f.stackAlloc=x;f.stackSave=pa;f.stackRestore=sa;
    assert g.exports["Da"] == "stackSave"
    assert g.exports["Ea"] == "stackRestore"
    assert g.exports["Fa"] == "stackAlloc"
    # var Zc=()=>(Zc=Z.M)(): minified JS name only -> not guessed
    assert "M" not in g.exports
    assert "Ca" not in g.exports  # var Gb=(a,b)=>(Gb=Z.Ca)(a,b)
    assert any("'M'" in n and "Zc" in n for n in g.unknown)


def test_sqljs_1_12_0_specifics() -> None:
    js, _ = sqljs("1.12.0")
    g = parse_glue(js)
    assert g.exports["L"] == "sqlite3_free"
    assert g.exports["M"] == "sqlite3_value_text"
    assert g.exports["Aa"] == "RegisterExtensionFunctions"
    # f.stackSave=()=>ra() forwards to ra=()=>(ra=Z.Ea)(): the export's own name is not
    # stated (it is emscripten_stack_get_current in that Emscripten), so nothing is guessed.
    for k in ("Ba", "Ca", "Da", "Ea"):
        assert k not in g.exports
    assert any("'Ea'" in n and "stackSave" in n for n in g.unknown)


def _independent_count(js: str) -> int:
    """Count wrapper definitions with simpler regexes than the module uses."""
    # f._NAME=(args)=>(optional_var=f._NAME=Z.KEY)(args)
    wrappers = set(re.findall(r"\(((?:[\w$]+=)?)f\._([\w$]+)=Z\.([\w$]+)\)\(", js))
    # wrapper var assigned to a Module property: x=a=>(x=Z.Fa)(a); ... f.stackAlloc=x;
    wrapper_vars = dict(re.findall(r"\(([\w$]+)=Z\.([\w$]+)\)\(", js))
    aliased = {
        (prop, wrapper_vars[var])
        for prop, var in re.findall(r"\bf\.([\w$]+)=([\w$]+);", js)
        if var in wrapper_vars
    }
    return len({(n, k) for _, n, k in wrappers}) + len(aliased)


@pytest.mark.parametrize("version", SQLJS_VERSIONS)
def test_sqljs_counts_and_wasm_cross_check(version: str) -> None:
    js, wasm = sqljs(version)
    g = parse_glue(js)
    assert len(g.exports) == _independent_count(js)
    exports = wasm_export_names(wasm)
    assert set(g.exports) <= set(exports)
    # everything recovered is a function export (kind 0)
    assert all(exports[k] == 0 for k in g.exports)
    # no real name used twice
    assert len(set(g.exports.values())) == len(g.exports)
    # Every wasm export the glue mentions but we could not name is reported.
    for k in set(exports) - set(g.exports):
        assert any(f"'{k}'" in n for n in g.unknown), k
    # sql.js imports are inline arrow/function expressions: nothing is justified.
    assert g.imports == {}
    n_imports = wasm_import_count(wasm)
    assert any(f"{n_imports} field(s) are inline" in n for n in g.unknown)


def test_sqljs_expected_counts() -> None:
    js10, _ = sqljs("1.10.3")
    js12, _ = sqljs("1.12.0")
    assert len(parse_glue(js10).exports) == 47
    assert len(parse_glue(js12).exports) == 44


# --------------------------------------------------------------------------- synthetic shapes


def test_arrow_wrapper_minified() -> None:
    js = (
        "Z=function(){function a(c){Z=c.exports;La=Z.I;return Z}var b={a:$c};"
        "if(f.instantiateWasm)try{return f.instantiateWasm(b,a)}catch(c){}}();"
        "f._sqlite3_open=(a,b)=>(f._sqlite3_open=Z.xa)(a,b);"
        "var ea=f._malloc=a=>(ea=f._malloc=Z.ya)(a),ca=f._free=a=>(ca=f._free=Z.za)(a);"
        "var Zc=()=>(Zc=Z.M)();"
    )
    g = parse_glue(js)
    assert g.exports == {"xa": "sqlite3_open", "ya": "malloc", "za": "free"}
    assert g.shape == "emscripten-arrow-wrapper"
    assert any("'M'" in n and "Zc" in n for n in g.unknown)
    assert any("'I'" in n for n in g.unknown)


def test_arrow_wrapper_unminified_js() -> None:
    js = """
    function receiveInstance(instance, module) {
      wasmExports = instance.exports;
    }
    var _x = Module['_x'] = (a0) => (_x = Module['_x'] = wasmExports['Z'])(a0);
    var ___errno_location = () => (___errno_location = wasmExports['Y'])();
    var stackSave = () => (stackSave = wasmExports['Q'])();
    var dynCall_vi = Module['dynCall_vi'] = (a0, a1) => (dynCall_vi = Module['dynCall_vi'] = wasmExports['R'])(a0, a1);
    """
    g = parse_glue(js)
    assert g.exports == {
        "Z": "x",
        "Y": "__errno_location",
        "Q": "stackSave",
        "R": "dynCall_vi",
    }
    assert g.shape == "emscripten-arrow-wrapper"


def test_apply_wrapper_module_asm() -> None:
    js = (
        'var _malloc=Module["_malloc"]=function(){return(_malloc=Module["_malloc"]='
        'Module["asm"]["xa"]).apply(null,arguments)};'
        "var Jc=b._free=function(){return(Jc=b._free=b.asm.ya).apply(null,arguments)};"
        'var dynCall_vi=Module["dynCall_vi"]=function(){return(dynCall_vi=Module["dynCall_vi"]='
        'Module["asm"]["Ha"]).apply(null,arguments)};'
    )
    g = parse_glue(js)
    assert g.exports == {"xa": "malloc", "ya": "free", "Ha": "dynCall_vi"}
    assert g.shape == "emscripten-apply-wrapper"


def test_legacy_apply_wrapper() -> None:
    js = (
        'var _malloc = Module["_malloc"] = function() {\n'
        '  return Module["asm"]["_malloc"].apply(null, arguments)\n};\n'
        'var _free = Module["_free"] = function() { return Module["asm"]["b"].apply(null, arguments) };'
    )
    g = parse_glue(js)
    assert g.exports == {"_malloc": "malloc", "b": "free"}
    assert g.shape == "emscripten-legacy-apply-wrapper"


def test_direct_assignments() -> None:
    js = (
        'Module["_free"]=wasmExports["ya"];_malloc=wasmExports.xa;\n'
        "var _realloc = Module._realloc = wasmExports['wa']\n"
        "wasmMemory = wasmExports['memory'];\n"
        "wasmTable = wasmExports['__indirect_function_table'];\n"
        "addOnInit(wasmExports['__wasm_call_ctors']);\n"
    )
    g = parse_glue(js)
    assert g.exports == {
        "ya": "free",
        "xa": "malloc",
        "wa": "realloc",
        "memory": "memory",
        "__indirect_function_table": "__indirect_function_table",
    }
    assert g.shape == "emscripten-direct-assign"
    assert any("__wasm_call_ctors" in n for n in g.unknown)


def test_create_export_wrapper_debug() -> None:
    js = (
        "var _malloc = Module['_malloc'] = createExportWrapper('malloc', 1);\n"
        'var ___errno_location = createExportWrapper("__errno_location", 0);\n'
        "function createExportWrapper(name, nargs) { return (...args) => wasmExports[name](...args) }\n"
    )
    g = parse_glue(js)
    assert g.exports == {"malloc": "malloc", "__errno_location": "__errno_location"}
    assert g.shape == "emscripten-export-wrapper-debug"


def test_assign_wasm_exports_function() -> None:
    js = """
    var _malloc, _free, dynCall_jiji, memory, __indirect_function_table, wasmMemory, wasmTable;
    function assignWasmExports(wasmExports2) {
      ___getTypeName = wasmExports2["x"];
      _malloc = Module["_malloc"] = wasmExports2["y"];
      _free = Module["_free"] = wasmExports2["z"];
      dynCall_jiji = dynCalls["jiji"] = wasmExports2["D"];
      memory = wasmMemory = wasmExports2["v"];
      __indirect_function_table = wasmTable = wasmExports2["A"];
    }
    """
    g = parse_glue(js)
    assert g.exports == {
        "x": "__getTypeName",
        "y": "malloc",
        "z": "free",
        "D": "dynCall_jiji",
        "v": "memory",
        "A": "__indirect_function_table",
    }
    assert g.shape == "emscripten-direct-assign"


def test_minified_assign_function_param_scope() -> None:
    # Closure-minified assignWasmExports: the exports object is only the parameter `a`
    # of the function it is handed to; `a.q` elsewhere must not be read as an export.
    js = (
        "function Qc(a){ed=f._malloc=a.y;fd=f._free=a.z}"
        "function g(a){f._bogus=a.q}"
        "var Z;function r(c){Z=c.exports;Qc(Z)}"
    )
    g = parse_glue(js)
    assert g.exports == {"y": "malloc", "z": "free"}


def test_alias_of_minified_wrapper_var() -> None:
    js = (
        "Z=c.exports;var pa=()=>(pa=Z.Da)(),x=a=>(x=Z.Fa)(a),ra=()=>(ra=Z.Ea)();"
        "f._foo=a=>(f._foo=Z.b)(a);f.stackSave=pa;f.stackAlloc=x;f.stackRestore=a=>ra(a);"
    )
    g = parse_glue(js)
    assert g.exports == {"b": "foo", "Da": "stackSave", "Fa": "stackAlloc"}
    assert any("'Ea'" in n and "stackRestore" in n for n in g.unknown)


# --------------------------------------------------------------------------- imports


def test_imports_unminified_keys() -> None:
    js = """
    var wasmImports = {
      /** @export */
      "__assert_fail": ___assert_fail,
      emscripten_memcpy_big: _emscripten_memcpy_big,
      memory: wasmMemory,
    };
    function createWasm() {
      var info = { 'env': wasmImports, 'wasi_snapshot_preview1': wasmImports };
      if (Module['instantiateWasm']) { return Module['instantiateWasm'](info, receiveInstance); }
    }
    var _malloc = Module['_malloc'] = (a0) => (_malloc = Module['_malloc'] = wasmExports['malloc'])(a0);
    """
    g = parse_glue(js)
    assert g.imports == {
        "__assert_fail": "__assert_fail",
        "emscripten_memcpy_big": "emscripten_memcpy_big",
        "memory": "memory",
    }
    assert g.import_module == "env"
    assert any("wasi_snapshot_preview1" in n for n in g.unknown)
    assert g.exports == {"malloc": "malloc"}
    assert "emscripten-import-object" in (g.shape or "")


def test_imports_minified_keys_underscore_values() -> None:
    js = (
        "var wasmImports={a:___assert_fail,b:_emscripten_memcpy_big,c:(a)=>{abort(a)},"
        "d:function(a,b){return a/b},e:Ya};"
        "function cb(){var info={a:wasmImports};f.instantiateWasm(info,recv)}"
        "f._x=a=>(f._x=Z.q)(a);Z=c.exports;"
    )
    g = parse_glue(js)
    assert g.imports == {"a": "__assert_fail", "b": "emscripten_memcpy_big"}
    assert g.import_module == "a"
    assert any("inline" in n and "c, d" in n for n in g.unknown)
    assert any("e=Ya" in n for n in g.unknown)


def test_imports_minified_values_with_justification() -> None:
    js = (
        "function Ya(a){x(a)}"  # plain minified function: nothing stated
        "var Za=function _exit(a){quit(a)};"  # named function expression
        "function Wa(){}f._emscripten_thing=Wa;"  # Module._name = Wa
        "var Va=_fd_write;"  # alias of an _name function
        'var Ab={a:Ya,b:Za,c:Wa,d:Va,"e":_abort};'
        "Z=function(){function a(c){Z=c.exports}var b={a:Ab};return f.instantiateWasm(b,a)}();"
        "f._main=(a,b)=>(f._main=Z.k)(a,b);"
    )
    g = parse_glue(js)
    assert g.imports == {
        "b": "exit",
        "c": "emscripten_thing",
        "d": "fd_write",
        "e": "abort",
    }
    assert "a" not in g.imports
    assert g.import_module == "a"
    assert any("a=Ya" in n for n in g.unknown)
    assert g.exports == {"k": "main"}


def test_imports_asm_library_arg_and_info_function() -> None:
    js = """
    var asmLibraryArg = {"a": _abort, "b": ___cxa_throw};
    function getWasmImports() { return { 'a': asmLibraryArg } }
    function createWasm() {
      var info = getWasmImports();
      Module['instantiateWasm'](info, receiveInstance);
    }
    """
    g = parse_glue(js)
    assert g.imports == {"a": "abort", "b": "__cxa_throw"}
    assert g.import_module == "a"
    # no export wrapper at all -> reported
    assert g.exports == {}
    assert NO_SHAPE_NOTE in g.unknown


def test_imports_without_info_object() -> None:
    js = "var asmLibraryArg={a:_abort};var _f=Module._f=asm.b;"
    g = parse_glue(js)
    assert g.imports == {"a": "abort"}
    assert g.import_module is None
    assert g.exports == {"b": "f"}


def test_import_object_with_tricky_inline_code() -> None:
    # strings, templates with ${}, regex literals and comments containing , : { }
    js = (
        'var $c={a:(a,b)=>{C(`x ${a?M(q,a):"}"}, at: `+[b?"{":\'}\'])},'
        "h:a=>/\\(([A-Za-z ]+)\\)$/.exec(a),/* k:_nope, */ g:_good, i:a=>a/2/3,"
        "j:function(){return/[}{]/.test(',')}, z:_last};"
        "Z=function(){var b={a:$c};f.instantiateWasm(b,c)}();"
    )
    g = parse_glue(js)
    assert g.imports == {"g": "good", "z": "last"}
    assert any("4 field(s) are inline" in n for n in g.unknown)


# --------------------------------------------------------------------------- rules


def test_conflicting_export_names_keep_neither() -> None:
    js = "Z=c.exports;f._foo=a=>(f._foo=Z.q)(a);f._bar=a=>(f._bar=Z.q)(a);f._ok=()=>(f._ok=Z.r)();"
    g = parse_glue(js)
    assert "q" not in g.exports
    assert g.exports == {"r": "ok"}
    assert any("'q'" in n and "several names" in n for n in g.unknown)


def test_conflict_within_one_chain() -> None:
    js = "var _a = Module['_b'] = Module['_c'] = wasmExports['k'];_d = _e = wasmExports['m'];"
    g = parse_glue(js)
    assert g.exports == {}
    assert any("'k'" in n and "several names" in n for n in g.unknown)
    assert any("'m'" in n and "several names" in n for n in g.unknown)


def test_module_property_outranks_bundler_renamed_variable() -> None:
    # esbuild-style renaming of the bare variable; the Module property is authoritative.
    js = (
        'var _malloc2 = Module3["_malloc"] = function() {\n'
        '  return (_malloc2 = Module3["_malloc"] = Module3["asm"]["f"]).apply(null, arguments);\n'
        "};\n"
        'var ___wasm_call_ctors = Module3["___wasm_call_ctors"] = function() {\n'
        '  return (___wasm_call_ctors = Module3["___wasm_call_ctors"] = Module3["asm"]["d"])'
        ".apply(null, arguments);\n};\n"
    )
    g = parse_glue(js)
    assert g.exports == {"f": "malloc", "d": "__wasm_call_ctors"}
    assert g.shape == "emscripten-apply-wrapper"


def test_minimal_runtime_shape() -> None:
    js = """
  var asmLibraryArg = {
   "c": _emscripten_memcpy_big,
   "b": JS_cos,
   "a": _fd_close
  };
  function initRuntime(asm) {
   asm["j"]();
  }
  var imports = {
   "a": asmLibraryArg
  };
  var _malloc, _free, _mpeg_frame_decoder_create;
  WebAssembly.instantiate(Module["wasm"], imports).then(function(output) {
   var asm = output.instance.exports;
   _malloc = asm["k"];
   _free = asm["l"];
   _mpeg_frame_decoder_create = asm["m"];
   initRuntime(asm);
  });
    """
    g = parse_glue(js)
    assert g.exports == {"k": "malloc", "l": "free", "m": "mpeg_frame_decoder_create"}
    assert g.imports == {"c": "emscripten_memcpy_big", "a": "fd_close"}
    assert g.import_module == "a"
    assert any("b=JS_cos" in n for n in g.unknown)
    assert any("'j'" in n for n in g.unknown)


def test_emscripten2_module_asm_receive_instance() -> None:
    # 2.0-era glue: exports stored as Module['asm']; memory/table/ctors read from it;
    # the import object is defined after the info object that references it.
    js = """
    function createWasm() {
      var info = { 'a': asmLibraryArg };
      function receiveInstance(instance, module) {
        var exports = instance.exports;
        Module['asm'] = exports;
        wasmMemory = Module['asm']['k'];
        wasmTable = Module['asm']['t'];
        addOnInit(Module['asm']['l']);
      }
      if (Module['instantiateWasm']) {
        var exports = Module['instantiateWasm'](info, receiveInstance);
        return exports;
      }
    }
    var asmLibraryArg = { 'a': _emscripten_memcpy_big, 'b': _fd_write };
    Module['___wasm_call_ctors'] = function () {
      return (Module['___wasm_call_ctors'] = Module['asm']['l']).apply(null, arguments);
    };
    Module['_compress_block'] = function () {
      return (Module['_compress_block'] = Module['asm']['m']).apply(null, arguments);
    };
    const run = () => { const f = Module['_compress_block']; return f(1); };
    exports.run = run;
    """
    g = parse_glue(js)
    assert g.exports == {
        "k": "memory",
        "t": "__indirect_function_table",
        "l": "__wasm_call_ctors",
        "m": "compress_block",
    }
    assert g.imports == {"a": "emscripten_memcpy_big", "b": "fd_write"}
    assert g.import_module == "a"
    assert g.unknown == []  # the CommonJS write exports.run = ... is not an export read


def test_asmjs_era_direct_and_import_object() -> None:
    js = """
var asmGlobalArg = {};
var asmLibraryArg = { "abort": _abort, "abortOnCannotGrowMemory": abortOnCannotGrowMemory,
  "DYNAMICTOP_PTR": DYNAMICTOP_PTR, "___setErrNo": ___setErrNo };
var asm = Module["asm"](asmGlobalArg, asmLibraryArg, buffer);
var _malloc = Module["_malloc"] = asm["_malloc"];
var stackSave = Module["stackSave"] = asm["stackSave"];
var dynCall_ii = Module["dynCall_ii"] = function() { return Module["asm"]["dynCall_ii"].apply(null, arguments) };
"""
    g = parse_glue(js)
    assert g.exports == {"_malloc": "malloc", "stackSave": "stackSave", "dynCall_ii": "dynCall_ii"}
    assert g.imports == {"abort": "abort", "___setErrNo": "__setErrNo"}
    assert g.import_module is None


def test_two_exports_same_real_name_keep_neither() -> None:
    js = "_foo=wasmExports.a;Module._foo=wasmExports.b;_bar=wasmExports.c;"
    g = parse_glue(js)
    assert g.exports == {"c": "bar"}
    assert any("'foo'" in n for n in g.unknown)


def test_non_identifier_names_rejected() -> None:
    js = (
        "var _ = Module['_'] = wasmExports['a'];"  # '_' -> '' not an identifier
        "_1abc = wasmExports['b'];"  # '1abc' not an identifier
        "_good = wasmExports['not-an-ident'];"
        "_fine = wasmExports['d'];"
    )
    g = parse_glue(js)
    assert g.exports == {"d": "fine"}
    assert any("not-an-ident" in n for n in g.unknown)
    assert_well_formed(g)


def test_calls_and_member_reads_are_not_mappings() -> None:
    js = (
        "Z=c.exports;var _res=Z.q(1);_buf=Z.I.buffer;if(_x==Z.r){}_y+=Z.s;"
        "_scriptDir=document.currentScript.src;f._ok=(a)=>(f._ok=Z.t)(a);"
    )
    g = parse_glue(js)
    assert g.exports == {"t": "ok"}


def test_empty_input() -> None:
    for js in ("", "   \n\t"):
        g = parse_glue(js)
        assert g.exports == {} and g.imports == {}
        assert g.import_module is None and g.shape is None
        assert g.unknown == [NO_SHAPE_NOTE]


@pytest.mark.parametrize(
    "js",
    [
        "not javascript at all ((( {{{ ''' ``` /* ",
        "\x00\x01\xff" * 100,
        "function main(){console.log('hello')}",
        "var a={b:c}; module.exports = a;",
        "f.instantiateWasm(b,a); var b={",
        "var wasmImports = {a:`${",
        "_x = wasmExports[",
        "Module['_x'] = asm['",
    ],
)
def test_garbage_input(js: str) -> None:
    g = parse_glue(js)
    assert g.exports == {}
    assert NO_SHAPE_NOTE in g.unknown
    assert_well_formed(g)


# --------------------------------------------------------------------------- bounded time
# Adversarial inputs (5 MB of one repeated unit, 250,000 distinct keys) live in
# benchmarks/glue.py, which times them; tests/unit/services/test_benchmarks_smoke.py runs its smoke mode,
# which checks the results at a small size.


def test_bytes_input_is_decoded() -> None:
    g = parse_glue(b"var _free = Module['_free'] = wasmExports['q'];\xff")
    assert g.exports == {"q": "free"}
