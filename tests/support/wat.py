"""WebAssembly text fixtures shared by several tests (assembled with ``lift_sem.wat``)."""

# loop shapes as compilers emit them
LOOPS_WAT = """
(module
  (memory (export "memory") 1)
  ;; loop whose whole body is an if that loops back: a counted for loop
  (func (export "count") (param $n i32) (result i32) (local $i i32) (local $s i32)
    (local.set $n (i32.and (local.get $n) (i32.const 1023)))
    (local.set $i (i32.const 0))
    (loop $L
      (if (i32.lt_s (local.get $i) (local.get $n))
        (then
          (local.set $s (i32.add (local.get $s) (i32.mul (local.get $i) (i32.const 3))))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br $L))))
    (local.get $s))
  ;; loop left through the enclosing block from its first instruction: while (cond)
  (func (export "halve") (param $x i32) (result i32) (local $k i32)
    (block $out
      (loop $L
        (br_if $out (i32.lt_u (local.get $x) (i32.const 2)))
        (local.set $x (i32.shr_u (local.get $x) (i32.const 1)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $L)))
    (local.get $k))
  ;; back edge inside a block that ends with the loop: do { } while (cond)
  (func (export "digits") (param $x i32) (result i32) (local $k i32)
    (loop $L
      (block $skip
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br_if $skip (i32.eq (local.get $k) (i32.const 40)))
        (local.set $x (i32.div_u (local.get $x) (i32.const 10)))
        (br_if $L (local.get $x))))
    (local.get $k))
  ;; exits from inside the loop to the block right around it: break, no goto
  (func (export "scan") (param $x i32) (result i32) (local $i i32)
    (block $done
      (loop $L
        (br_if $done (i32.ge_u (local.get $i) (i32.const 64)))
        (br_if $done (i32.eq (i32.and (i32.shr_u (local.get $x) (i32.and (local.get $i) (i32.const 31))) (i32.const 7)) (i32.const 5)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $L)))
    (local.get $i))
)
"""
