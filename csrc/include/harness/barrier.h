// Compiler barriers for timing loops, in the spirit of Google Benchmark.
//
// Guarantees: a value passed to do_not_optimize() is treated as observed, so
// the computation producing it is not removed; clobber_memory() forces all
// pending writes to memory to be considered visible, so stores in the body are
// not sunk out of the loop. Neither emits an instruction on GCC/Clang.
#pragma once

namespace harness {

template <class T>
inline __attribute__((always_inline)) void do_not_optimize(T const& value) {
  asm volatile("" : : "r,m"(value) : "memory");
}

template <class T>
inline __attribute__((always_inline)) void do_not_optimize(T& value) {
#if defined(__clang__)
  asm volatile("" : "+r,m"(value) : : "memory");
#else
  asm volatile("" : "+m,r"(value) : : "memory");
#endif
}

inline __attribute__((always_inline)) void clobber_memory() {
  asm volatile("" : : : "memory");
}

}  // namespace harness
