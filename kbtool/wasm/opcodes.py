"""The one opcode table that drives decoding (wabt style).

Op ids (stored in ``FuncFacts.ops`` as ``array('H')`` and persisted by the KB, so they are
stable): a single-byte opcode's id is the byte itself (0x00..0xFA); prefixed opcodes get
``base + sub-opcode``::

    0xFC (saturating, bulk memory, table ops, wide arith)  PREFIX_BASE[0xFC] = 0x100 (32 slots)
    0xFB (GC)                                              PREFIX_BASE[0xFB] = 0x120 (32 slots)
    0xFD (SIMD incl. relaxed SIMD)                         PREFIX_BASE[0xFD] = 0x140 (288 slots)
    0xFE (threads / atomics)                               PREFIX_BASE[0xFE] = 0x260 (80 slots)

``MNEMONICS[op_id]`` is the mnemonic exactly as ``wasm-objdump -d`` prints it ("" for ids
that are not opcodes). ``KIND[op_id]`` is the immediate kind (``K_*`` below) and
``WIDTH[op_id]`` the access width in bytes of memory instructions (0 otherwise).
"""

from __future__ import annotations

# --- immediate kinds (small ints; the decoder's if-chain tests them in this order) ---
K_NONE = 0  # no immediates
K_U32 = 1  # one LEB skipped verbatim (local idx, label, tag, memidx, heaptype, ...)
K_MEM = 2  # memarg: align (+ memidx if bit 6), offset
K_I32 = 3  # i32.const  sLEB32
K_GLOBAL = 4  # global idx
K_CALL = 5  # function idx (call, return_call)
K_BLOCK = 6  # blocktype (block, loop, if, try)
K_I64 = 7  # i64.const  sLEB64
K_F32 = 8  # 4 bytes
K_F64 = 9  # 8 bytes
K_BR_TABLE = 10  # vec(label) label
K_CALL_INDIRECT = 11  # typeidx tableidx
K_REF_FUNC = 12  # function idx
K_SELECT_T = 13  # vec(valtype)
K_TABLE = 14  # table or elem idx (placeholder in the shape)
K_TABLE2 = 15  # two table/elem idx (table.init, table.copy)
K_TYPE = 16  # type idx (call_ref, return_call_ref)
K_U32X2 = 17  # two LEBs kept verbatim (memory.init, memory.copy, GC type+field ...)
K_TRY_TABLE = 18  # blocktype vec(catch)
K_LANE = 19  # one lane byte
K_MEM_LANE = 20  # memarg + lane byte
K_V128 = 21  # 16 bytes (v128.const, i8x16.shuffle)
K_BYTE = 22  # one reserved byte (atomic.fence)
K_BR_ON_CAST = 23  # flags byte, label, heaptype, heaptype
K_ORD_U32 = 24  # memory ordering byte, index (shared-everything global/table/array atomics)
K_ORD_U32X2 = 25  # memory ordering byte, type index, field index (struct atomics)
K_PREFIX = 30  # 0xFB..0xFE: sub-opcode follows
K_BAD = 31  # not an opcode

KIND_NAMES = {
    K_NONE: "none",
    K_U32: "u32",
    K_MEM: "memarg",
    K_I32: "i32",
    K_GLOBAL: "global",
    K_CALL: "func",
    K_BLOCK: "blocktype",
    K_I64: "i64",
    K_F32: "f32",
    K_F64: "f64",
    K_BR_TABLE: "br_table",
    K_CALL_INDIRECT: "call_indirect",
    K_REF_FUNC: "ref_func",
    K_SELECT_T: "select_t",
    K_TABLE: "table",
    K_TABLE2: "table2",
    K_TYPE: "type",
    K_U32X2: "u32x2",
    K_TRY_TABLE: "try_table",
    K_LANE: "lane",
    K_MEM_LANE: "memarg_lane",
    K_V128: "v128",
    K_BYTE: "byte",
    K_BR_ON_CAST: "br_on_cast",
    K_ORD_U32: "ord_u32",
    K_ORD_U32X2: "ord_u32x2",
    K_PREFIX: "prefix",
    K_BAD: "bad",
}

PREFIX_BASE = {0xFC: 0x100, 0xFB: 0x120, 0xFD: 0x140, 0xFE: 0x260}
PREFIX_SLOTS = {0xFC: 0x20, 0xFB: 0x20, 0xFD: 0x120, 0xFE: 0x73}
NUM_OPS = 0x2D3

_K = {
    "-": K_NONE,
    "u32": K_U32,
    "mem": K_MEM,
    "i32": K_I32,
    "global": K_GLOBAL,
    "call": K_CALL,
    "block": K_BLOCK,
    "i64": K_I64,
    "f32": K_F32,
    "f64": K_F64,
    "br_table": K_BR_TABLE,
    "call_indirect": K_CALL_INDIRECT,
    "ref_func": K_REF_FUNC,
    "select_t": K_SELECT_T,
    "table": K_TABLE,
    "table2": K_TABLE2,
    "type": K_TYPE,
    "u32x2": K_U32X2,
    "try_table": K_TRY_TABLE,
    "lane": K_LANE,
    "memlane": K_MEM_LANE,
    "v128": K_V128,
    "byte": K_BYTE,
    "br_on_cast": K_BR_ON_CAST,
    "ord": K_ORD_U32,
    "ord2": K_ORD_U32X2,
}

# opcode  mnemonic  kind  [width]
_SINGLE = """
00 unreachable -
01 nop -
02 block block
03 loop block
04 if block
05 else -
06 try block
07 catch u32
08 throw u32
09 rethrow u32
0a throw_ref -
0b end -
0c br u32
0d br_if u32
0e br_table br_table
0f return -
10 call call
11 call_indirect call_indirect
12 return_call call
13 return_call_indirect call_indirect
14 call_ref type
15 return_call_ref type
18 delegate u32
19 catch_all -
1a drop -
1b select -
1c select select_t
1f try_table try_table
20 local.get u32
21 local.set u32
22 local.tee u32
23 global.get global
24 global.set global
25 table.get table
26 table.set table
28 i32.load mem 4
29 i64.load mem 8
2a f32.load mem 4
2b f64.load mem 8
2c i32.load8_s mem 1
2d i32.load8_u mem 1
2e i32.load16_s mem 2
2f i32.load16_u mem 2
30 i64.load8_s mem 1
31 i64.load8_u mem 1
32 i64.load16_s mem 2
33 i64.load16_u mem 2
34 i64.load32_s mem 4
35 i64.load32_u mem 4
36 i32.store mem 4
37 i64.store mem 8
38 f32.store mem 4
39 f64.store mem 8
3a i32.store8 mem 1
3b i32.store16 mem 2
3c i64.store8 mem 1
3d i64.store16 mem 2
3e i64.store32 mem 4
3f memory.size u32
40 memory.grow u32
41 i32.const i32
42 i64.const i64
43 f32.const f32
44 f64.const f64
d0 ref.null u32
d1 ref.is_null -
d2 ref.func ref_func
d3 ref.eq -
d4 ref.as_non_null -
d5 br_on_null u32
d6 br_on_non_null u32
"""

_NUMERIC = """
i32.eqz i32.eq i32.ne i32.lt_s i32.lt_u i32.gt_s i32.gt_u i32.le_s i32.le_u i32.ge_s i32.ge_u
i64.eqz i64.eq i64.ne i64.lt_s i64.lt_u i64.gt_s i64.gt_u i64.le_s i64.le_u i64.ge_s i64.ge_u
f32.eq f32.ne f32.lt f32.gt f32.le f32.ge
f64.eq f64.ne f64.lt f64.gt f64.le f64.ge
i32.clz i32.ctz i32.popcnt i32.add i32.sub i32.mul i32.div_s i32.div_u i32.rem_s i32.rem_u
i32.and i32.or i32.xor i32.shl i32.shr_s i32.shr_u i32.rotl i32.rotr
i64.clz i64.ctz i64.popcnt i64.add i64.sub i64.mul i64.div_s i64.div_u i64.rem_s i64.rem_u
i64.and i64.or i64.xor i64.shl i64.shr_s i64.shr_u i64.rotl i64.rotr
f32.abs f32.neg f32.ceil f32.floor f32.trunc f32.nearest f32.sqrt f32.add f32.sub f32.mul
f32.div f32.min f32.max f32.copysign
f64.abs f64.neg f64.ceil f64.floor f64.trunc f64.nearest f64.sqrt f64.add f64.sub f64.mul
f64.div f64.min f64.max f64.copysign
i32.wrap_i64 i32.trunc_f32_s i32.trunc_f32_u i32.trunc_f64_s i32.trunc_f64_u
i64.extend_i32_s i64.extend_i32_u i64.trunc_f32_s i64.trunc_f32_u i64.trunc_f64_s
i64.trunc_f64_u f32.convert_i32_s f32.convert_i32_u f32.convert_i64_s f32.convert_i64_u
f32.demote_f64 f64.convert_i32_s f64.convert_i32_u f64.convert_i64_s f64.convert_i64_u
f64.promote_f32 i32.reinterpret_f32 i64.reinterpret_f64 f32.reinterpret_i32
f64.reinterpret_i64
i32.extend8_s i32.extend16_s i64.extend8_s i64.extend16_s i64.extend32_s
"""  # 0x45 .. 0xc4, contiguous

_FC = """
00 i32.trunc_sat_f32_s -
01 i32.trunc_sat_f32_u -
02 i32.trunc_sat_f64_s -
03 i32.trunc_sat_f64_u -
04 i64.trunc_sat_f32_s -
05 i64.trunc_sat_f32_u -
06 i64.trunc_sat_f64_s -
07 i64.trunc_sat_f64_u -
08 memory.init u32x2
09 data.drop u32
0a memory.copy u32x2
0b memory.fill u32
0c table.init table2
0d elem.drop table
0e table.copy table2
0f table.grow table
10 table.size table
11 table.fill table
13 i64.add128 -
14 i64.sub128 -
15 i64.mul_wide_s -
16 i64.mul_wide_u -
"""

_FB = """
00 struct.new u32
01 struct.new_default u32
02 struct.get u32x2
03 struct.get_s u32x2
04 struct.get_u u32x2
05 struct.set u32x2
06 array.new u32
07 array.new_default u32
08 array.new_fixed u32x2
09 array.new_data u32x2
0a array.new_elem u32x2
0b array.get u32
0c array.get_s u32
0d array.get_u u32
0e array.set u32
0f array.len -
10 array.fill u32
11 array.copy u32x2
12 array.init_data u32x2
13 array.init_elem u32x2
14 ref.test u32
15 ref.test u32
16 ref.cast u32
17 ref.cast u32
18 br_on_cast br_on_cast
19 br_on_cast_fail br_on_cast
1a any.convert_extern -
1b extern.convert_any -
1c ref.i31 -
1d i31.get_s -
1e i31.get_u -
"""

_FD = """
00 v128.load mem 16
01 v128.load8x8_s mem 8
02 v128.load8x8_u mem 8
03 v128.load16x4_s mem 8
04 v128.load16x4_u mem 8
05 v128.load32x2_s mem 8
06 v128.load32x2_u mem 8
07 v128.load8_splat mem 1
08 v128.load16_splat mem 2
09 v128.load32_splat mem 4
0a v128.load64_splat mem 8
0b v128.store mem 16
0c v128.const v128
0d i8x16.shuffle v128
0e i8x16.swizzle -
0f i8x16.splat -
10 i16x8.splat -
11 i32x4.splat -
12 i64x2.splat -
13 f32x4.splat -
14 f64x2.splat -
15 i8x16.extract_lane_s lane
16 i8x16.extract_lane_u lane
17 i8x16.replace_lane lane
18 i16x8.extract_lane_s lane
19 i16x8.extract_lane_u lane
1a i16x8.replace_lane lane
1b i32x4.extract_lane lane
1c i32x4.replace_lane lane
1d i64x2.extract_lane lane
1e i64x2.replace_lane lane
1f f32x4.extract_lane lane
20 f32x4.replace_lane lane
21 f64x2.extract_lane lane
22 f64x2.replace_lane lane
4d v128.not -
4e v128.and -
4f v128.andnot -
50 v128.or -
51 v128.xor -
52 v128.bitselect -
53 v128.any_true -
54 v128.load8_lane memlane 1
55 v128.load16_lane memlane 2
56 v128.load32_lane memlane 4
57 v128.load64_lane memlane 8
58 v128.store8_lane memlane 1
59 v128.store16_lane memlane 2
5a v128.store32_lane memlane 4
5b v128.store64_lane memlane 8
5c v128.load32_zero mem 4
5d v128.load64_zero mem 8
5e f32x4.demote_f64x2_zero -
5f f64x2.promote_low_f32x4 -
60 i8x16.abs -
61 i8x16.neg -
62 i8x16.popcnt -
63 i8x16.all_true -
64 i8x16.bitmask -
65 i8x16.narrow_i16x8_s -
66 i8x16.narrow_i16x8_u -
67 f32x4.ceil -
68 f32x4.floor -
69 f32x4.trunc -
6a f32x4.nearest -
6b i8x16.shl -
6c i8x16.shr_s -
6d i8x16.shr_u -
6e i8x16.add -
6f i8x16.add_sat_s -
70 i8x16.add_sat_u -
71 i8x16.sub -
72 i8x16.sub_sat_s -
73 i8x16.sub_sat_u -
74 f64x2.ceil -
75 f64x2.floor -
76 i8x16.min_s -
77 i8x16.min_u -
78 i8x16.max_s -
79 i8x16.max_u -
7a f64x2.trunc -
7b i8x16.avgr_u -
7c i16x8.extadd_pairwise_i8x16_s -
7d i16x8.extadd_pairwise_i8x16_u -
7e i32x4.extadd_pairwise_i16x8_s -
7f i32x4.extadd_pairwise_i16x8_u -
80 i16x8.abs -
81 i16x8.neg -
82 i16x8.q15mulr_sat_s -
83 i16x8.all_true -
84 i16x8.bitmask -
85 i16x8.narrow_i32x4_s -
86 i16x8.narrow_i32x4_u -
87 i16x8.extend_low_i8x16_s -
88 i16x8.extend_high_i8x16_s -
89 i16x8.extend_low_i8x16_u -
8a i16x8.extend_high_i8x16_u -
8b i16x8.shl -
8c i16x8.shr_s -
8d i16x8.shr_u -
8e i16x8.add -
8f i16x8.add_sat_s -
90 i16x8.add_sat_u -
91 i16x8.sub -
92 i16x8.sub_sat_s -
93 i16x8.sub_sat_u -
94 f64x2.nearest -
95 i16x8.mul -
96 i16x8.min_s -
97 i16x8.min_u -
98 i16x8.max_s -
99 i16x8.max_u -
9b i16x8.avgr_u -
9c i16x8.extmul_low_i8x16_s -
9d i16x8.extmul_high_i8x16_s -
9e i16x8.extmul_low_i8x16_u -
9f i16x8.extmul_high_i8x16_u -
a0 i32x4.abs -
a1 i32x4.neg -
a3 i32x4.all_true -
a4 i32x4.bitmask -
a7 i32x4.extend_low_i16x8_s -
a8 i32x4.extend_high_i16x8_s -
a9 i32x4.extend_low_i16x8_u -
aa i32x4.extend_high_i16x8_u -
ab i32x4.shl -
ac i32x4.shr_s -
ad i32x4.shr_u -
ae i32x4.add -
b1 i32x4.sub -
b5 i32x4.mul -
b6 i32x4.min_s -
b7 i32x4.min_u -
b8 i32x4.max_s -
b9 i32x4.max_u -
ba i32x4.dot_i16x8_s -
bc i32x4.extmul_low_i16x8_s -
bd i32x4.extmul_high_i16x8_s -
be i32x4.extmul_low_i16x8_u -
bf i32x4.extmul_high_i16x8_u -
c0 i64x2.abs -
c1 i64x2.neg -
c3 i64x2.all_true -
c4 i64x2.bitmask -
c7 i64x2.extend_low_i32x4_s -
c8 i64x2.extend_high_i32x4_s -
c9 i64x2.extend_low_i32x4_u -
ca i64x2.extend_high_i32x4_u -
cb i64x2.shl -
cc i64x2.shr_s -
cd i64x2.shr_u -
ce i64x2.add -
d1 i64x2.sub -
d5 i64x2.mul -
d6 i64x2.eq -
d7 i64x2.ne -
d8 i64x2.lt_s -
d9 i64x2.gt_s -
da i64x2.le_s -
db i64x2.ge_s -
dc i64x2.extmul_low_i32x4_s -
dd i64x2.extmul_high_i32x4_s -
de i64x2.extmul_low_i32x4_u -
df i64x2.extmul_high_i32x4_u -
e0 f32x4.abs -
e1 f32x4.neg -
e3 f32x4.sqrt -
e4 f32x4.add -
e5 f32x4.sub -
e6 f32x4.mul -
e7 f32x4.div -
e8 f32x4.min -
e9 f32x4.max -
ea f32x4.pmin -
eb f32x4.pmax -
ec f64x2.abs -
ed f64x2.neg -
ef f64x2.sqrt -
f0 f64x2.add -
f1 f64x2.sub -
f2 f64x2.mul -
f3 f64x2.div -
f4 f64x2.min -
f5 f64x2.max -
f6 f64x2.pmin -
f7 f64x2.pmax -
f8 i32x4.trunc_sat_f32x4_s -
f9 i32x4.trunc_sat_f32x4_u -
fa f32x4.convert_i32x4_s -
fb f32x4.convert_i32x4_u -
fc i32x4.trunc_sat_f64x2_s_zero -
fd i32x4.trunc_sat_f64x2_u_zero -
fe f64x2.convert_low_i32x4_s -
ff f64x2.convert_low_i32x4_u -
100 i8x16.relaxed_swizzle -
101 i32x4.relaxed_trunc_f32x4_s -
102 i32x4.relaxed_trunc_f32x4_u -
103 i32x4.relaxed_trunc_f64x2_s_zero -
104 i32x4.relaxed_trunc_f64x2_u_zero -
105 f32x4.relaxed_madd -
106 f32x4.relaxed_nmadd -
107 f64x2.relaxed_madd -
108 f64x2.relaxed_nmadd -
109 i8x16.relaxed_laneselect -
10a i16x8.relaxed_laneselect -
10b i32x4.relaxed_laneselect -
10c i64x2.relaxed_laneselect -
10d f32x4.relaxed_min -
10e f32x4.relaxed_max -
10f f64x2.relaxed_min -
110 f64x2.relaxed_max -
111 i16x8.relaxed_q15mulr_s -
112 i16x8.relaxed_dot_i8x16_i7x16_s -
113 i32x4.relaxed_dot_i8x16_i7x16_add_s -
"""

_FE = """
00 memory.atomic.notify mem 4
01 memory.atomic.wait32 mem 4
02 memory.atomic.wait64 mem 8
03 atomic.fence byte
10 i32.atomic.load mem 4
11 i64.atomic.load mem 8
12 i32.atomic.load8_u mem 1
13 i32.atomic.load16_u mem 2
14 i64.atomic.load8_u mem 1
15 i64.atomic.load16_u mem 2
16 i64.atomic.load32_u mem 4
17 i32.atomic.store mem 4
18 i64.atomic.store mem 8
19 i32.atomic.store8 mem 1
1a i32.atomic.store16 mem 2
1b i64.atomic.store8 mem 1
1c i64.atomic.store16 mem 2
1d i64.atomic.store32 mem 4
"""


# shared-everything-threads: 0xFE 0x4F.. (immediates: ordering byte 0 seqcst / 1 acqrel, ...)
_FE_SHARED = """
4f global.atomic.get ord
50 global.atomic.set ord
51 global.atomic.rmw.add ord
52 global.atomic.rmw.sub ord
53 global.atomic.rmw.and ord
54 global.atomic.rmw.or ord
55 global.atomic.rmw.xor ord
56 global.atomic.rmw.xchg ord
57 global.atomic.rmw.cmpxchg ord
58 table.atomic.get ord
59 table.atomic.set ord
5a table.atomic.rmw.xchg ord
5b table.atomic.rmw.cmpxchg ord
5c struct.atomic.get ord2
5d struct.atomic.get_s ord2
5e struct.atomic.get_u ord2
5f struct.atomic.set ord2
60 struct.atomic.rmw.add ord2
61 struct.atomic.rmw.sub ord2
62 struct.atomic.rmw.and ord2
63 struct.atomic.rmw.or ord2
64 struct.atomic.rmw.xor ord2
65 struct.atomic.rmw.xchg ord2
66 struct.atomic.rmw.cmpxchg ord2
67 array.atomic.get ord
68 array.atomic.get_s ord
69 array.atomic.get_u ord
6a array.atomic.set ord
6b array.atomic.rmw.add ord
6c array.atomic.rmw.sub ord
6d array.atomic.rmw.and ord
6e array.atomic.rmw.or ord
6f array.atomic.rmw.xor ord
70 array.atomic.rmw.xchg ord
71 array.atomic.rmw.cmpxchg ord
72 ref.i31_shared -
"""


def _build():
    mnem = [""] * NUM_OPS
    kind = [K_BAD] * NUM_OPS
    width = [0] * NUM_OPS

    def put(op_id, name, k, w=0):
        if mnem[op_id]:
            raise AssertionError(f"duplicate op id 0x{op_id:x}")
        mnem[op_id] = name
        kind[op_id] = _K[k]
        width[op_id] = int(w)

    def load(text, base):
        for line in text.strip().splitlines():
            parts = line.split()
            put(base + int(parts[0], 16), parts[1], parts[2], *parts[3:])

    load(_SINGLE, 0)
    for i, name in enumerate(_NUMERIC.split()):
        put(0x45 + i, name, "-")
    assert mnem[0xC4] == "i64.extend32_s"
    load(_FC, PREFIX_BASE[0xFC])
    load(_FB, PREFIX_BASE[0xFB])
    load(_FD, PREFIX_BASE[0xFD])
    cmp_i = ("eq", "ne", "lt_s", "lt_u", "gt_s", "gt_u", "le_s", "le_u", "ge_s", "ge_u")
    cmp_f = ("eq", "ne", "lt", "gt", "le", "ge")
    code = 0x23
    for shape, names in (
        ("i8x16", cmp_i),
        ("i16x8", cmp_i),
        ("i32x4", cmp_i),
        ("f32x4", cmp_f),
        ("f64x2", cmp_f),
    ):
        for n in names:
            put(PREFIX_BASE[0xFD] + code, f"{shape}.{n}", "-")
            code += 1
    assert code == 0x4D
    load(_FE, PREFIX_BASE[0xFE])
    base = PREFIX_BASE[0xFE] + 0x1E
    for i, op in enumerate(("add", "sub", "and", "or", "xor", "xchg", "cmpxchg")):
        names = (
            (f"i32.atomic.rmw.{op}", 4),
            (f"i64.atomic.rmw.{op}", 8),
            (f"i32.atomic.rmw8.{op}_u", 1),
            (f"i32.atomic.rmw16.{op}_u", 2),
            (f"i64.atomic.rmw8.{op}_u", 1),
            (f"i64.atomic.rmw16.{op}_u", 2),
            (f"i64.atomic.rmw32.{op}_u", 4),
        )
        for j, (name, w) in enumerate(names):
            put(base + 7 * i + j, name, "mem", w)
    load(_FE_SHARED, PREFIX_BASE[0xFE])
    for prefix in PREFIX_BASE:
        kind[prefix] = K_PREFIX
    return mnem, kind, width


MNEMONICS, KIND, WIDTH = _build()
"""MNEMONICS: list[str], index = op id."""

#: kinds of the 256 first bytes (the decoder's main table)
BYTE_KIND = KIND[:256]

#: per prefix byte: (base id, list of kinds indexed by sub-opcode)
PREFIX_KINDS = {
    p: (PREFIX_BASE[p], KIND[PREFIX_BASE[p] : PREFIX_BASE[p] + PREFIX_SLOTS[p]])
    for p in PREFIX_BASE
}

#: op ids of memory instructions (loads, stores, atomics, SIMD lane memory ops)
MEMORY_OPS = frozenset(i for i, k in enumerate(KIND) if k in (K_MEM, K_MEM_LANE))

OP_BY_NAME: dict[str, int] = {}
for _i, _m in enumerate(MNEMONICS):
    if _m and _m not in OP_BY_NAME:
        OP_BY_NAME[_m] = _i
del _i, _m


def op_id(prefix: int | None, code: int) -> int:
    """Op id of an opcode: ``op_id(None, 0x28)``, ``op_id(0xFD, 0x0c)``."""
    if prefix is None:
        return code
    return PREFIX_BASE[prefix] + code


def op_bytes(op: int) -> tuple[int | None, int]:
    """Inverse of :func:`op_id`: ``(prefix or None, code)``."""
    if op < 0x100:
        return None, op
    for p, base in PREFIX_BASE.items():
        if base <= op < base + PREFIX_SLOTS[p]:
            return p, op - base
    raise ValueError(op)


def is_atomic(op: int) -> bool:
    return PREFIX_BASE[0xFE] <= op < PREFIX_BASE[0xFE] + PREFIX_SLOTS[0xFE]
