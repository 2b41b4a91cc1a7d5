"""A release pair for the triage order tests: ``V1`` -> ``V2`` where one function gets a
bounds check with an early return (a fix) and the other only grows (a change)."""

# $a (index 0) grows without any check; $b (index 1) gets a bounds check with an early return
V1 = """(module (memory 1) (export "a" (func $a)) (export "b" (func $b))
  (func $a (param i32) (result i32) local.get 0 i32.const 3 i32.add)
  (func $b (param i32 i32) (result i32) local.get 0 local.get 1 i32.div_u))
"""
V2 = """(module (memory 1) (export "a" (func $a)) (export "b" (func $b))
  (func $a (param i32) (result i32)
    local.get 0 i32.const 3 i32.add i32.const 5 i32.add i32.const 7 i32.xor i32.const 9 i32.add)
  (func $b (param i32 i32) (result i32)
    local.get 1 local.get 0 i32.gt_u if i32.const -1 return end
    local.get 0 local.get 1 i32.div_u))
"""
