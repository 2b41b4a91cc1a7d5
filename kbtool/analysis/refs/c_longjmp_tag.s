# The exception tag wasm-EH setjmp/longjmp throws (LLVM normally emits it; zig 0.17's
# libsetjmp.a leaves it undefined). Used by build.sh for the zig libc_setjmp builds.
.tagtype __c_longjmp i32
.globl __c_longjmp
__c_longjmp:
