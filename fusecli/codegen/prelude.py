"""The C helpers generated kernels may use, each included only where the kernel uses it.

Kernels include no CUDA header: half and bfloat16 are 16-bit structs, converted on the device
by the conversion instructions torch's own kernels use (``cvt.rn``: round to nearest even) and
in the CPU emulator by the same rounding written as bit manipulation. The few helpers that are
more than one C expression (NaN-propagating min/max, torch's remainder and shifts, block
reductions, the Philox random numbers of ``fusecli.ir.rng``) are written out here.
``prelude_for(body)`` picks the sections whose names the body mentions, and those they use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fusecli.codegen import prelude_combine, prelude_rng


@dataclass(frozen=True, slots=True)
class Section:
    provides: tuple[str, ...]  # identifiers that make a kernel need this section
    text: str


SECTIONS: tuple[Section, ...] = (
    Section(
        ("bfloat16", "bfloat16_to_float", "float_to_bfloat16", "round_to_bfloat16"),
        r"""
struct bfloat16 { unsigned short bits; };

__device__ __forceinline__ float bfloat16_to_float(bfloat16 x) {
  return __uint_as_float(((unsigned int)x.bits) << 16);
}

__device__ __forceinline__ bfloat16 float_to_bfloat16(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // One instruction (what torch's GPU kernels use): round to nearest even, NaN stays NaN.
  unsigned short bits;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(f));
  return {bits};
#else
  unsigned int x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return {(unsigned short)((x >> 16) | 0x0040u)};  // NaN
  x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest, ties to even
  return {(unsigned short)(x >> 16)};
#endif
}

__device__ __forceinline__ float round_to_bfloat16(float f) {
  return bfloat16_to_float(float_to_bfloat16(f));
}
""",
    ),
    Section(
        ("float16", "float16_to_float", "float_to_float16", "round_to_float16"),
        r"""
struct float16 { unsigned short bits; };

__device__ __forceinline__ float float16_to_float(float16 x) {
#if defined(__CUDA_ARCH__)
  float f;  // one instruction: exact
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
  return f;
#else
  unsigned int sign = ((unsigned int)x.bits & 0x8000u) << 16;
  unsigned int exponent = (x.bits >> 10) & 0x1fu, mantissa = x.bits & 0x3ffu;
  if (exponent == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    float magnitude = (float)mantissa * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return __uint_as_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
#endif
}

__device__ __forceinline__ float16 float_to_float16(float f) {
#if defined(__CUDA_ARCH__)
  // One instruction (what torch's GPU kernels use): round to nearest even, subnormals kept.
  unsigned short bits;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(f));
  return {bits};
#else
  unsigned int x = __float_as_uint(f);
  unsigned short sign = (unsigned short)((x >> 16) & 0x8000u);
  unsigned int magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return {(unsigned short)(sign | 0x7e00u)};  // NaN
  if (magnitude >= 0x477ff000u) return {(unsigned short)(sign | 0x7c00u)};  // >= 65520: inf
  if (magnitude < 0x38800000u) {  // below 2^-14: a subnormal half, in units of 2^-24
    return {(unsigned short)(sign | __float2uint_rn(__uint_as_float(magnitude) * 16777216.0f))};
  }
  unsigned int rebiased = magnitude - 0x38000000u;  // exponent bias 127 -> 15
  unsigned int bits = (rebiased + 0x0fffu + ((rebiased >> 13) & 1u)) >> 13;  // ties to even
  return {(unsigned short)(sign | bits)};
#endif
}

__device__ __forceinline__ float round_to_float16(float f) {
  return float16_to_float(float_to_float16(f));
}
""",
    ),
    Section(
        ("Vec",),
        r"""
// N consecutive elements, aligned so that one load or store moves all of them.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec { T v[N]; };
""",
    ),
    Section(
        ("injected_fault_",),
        r"""
// FUSECLI_INJECT_FAULT: a wrong value far from the right one, as runtime.faults.corrupt
// computes it (floats x + 1000 (1 + |x|), non-finite ones 0; integers x + 1000; bool !x).
__device__ __forceinline__ float injected_fault_(float x) {
  return isfinite(x) ? x + 1000.0f * (1.0f + fabsf(x)) : 0.0f;
}
__device__ __forceinline__ double injected_fault_(double x) {
  return isfinite(x) ? x + 1000.0 * (1.0 + fabs(x)) : 0.0;
}
__device__ __forceinline__ bool injected_fault_(bool x) { return !x; }
template <typename T> __device__ __forceinline__ T injected_fault_(T x) { return x + 1000; }
""",
    ),
    Section(
        ("maximum_", "minimum_"),
        r"""
// torch.maximum / torch.minimum: a NaN operand makes the result NaN.
template <typename T> __device__ __forceinline__ T maximum_(T a, T b) {
  return (a != a) ? a : ((b != b) ? b : (a > b ? a : b));
}
template <typename T> __device__ __forceinline__ T minimum_(T a, T b) {
  return (a != a) ? a : ((b != b) ? b : (a < b ? a : b));
}
#if defined(__CUDA_ARCH__)
// Doubles on the GPU as torch's CUDA kernels: fmax and fmin, which order -0 below +0.
__device__ __forceinline__ double maximum_(double a, double b) {
  return (a != a || b != b) ? a + b : fmax(a, b);
}
__device__ __forceinline__ double minimum_(double a, double b) {
  return (a != a || b != b) ? a + b : fmin(a, b);
}
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// The same for floats in one instruction (sm_80 and later): NaN if either operand is NaN.
__device__ __forceinline__ float maximum_(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float minimum_(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
#endif
""",
    ),
    Section(
        ("remainder_",),
        r"""
// torch.remainder: the result takes the sign of the divisor.
__device__ __forceinline__ float remainder_(float a, float b) {
  float r = fmodf(a, b);
  return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r;
}
__device__ __forceinline__ double remainder_(double a, double b) {
  double r = fmod(a, b);
  return (r != 0.0 && ((r < 0.0) != (b < 0.0))) ? r + b : r;
}
template <typename T> __device__ __forceinline__ T remainder_(T a, T b) {
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
""",
    ),
    Section(
        ("shift_left_", "shift_right_", "logical_shift_right_"),
        r"""
// torch's shifts: shifting by the width or more gives 0 (left) or the sign (right).
template <typename T> __device__ __forceinline__ T shift_left_(T a, T s) {
  return (s < 0 || s >= (T)(sizeof(T) * 8)) ? (T)0 : (T)((unsigned long long)a << s);
}
template <typename T> __device__ __forceinline__ T shift_right_(T a, T s) {
  const T width = (T)(sizeof(T) * 8);
  return (s < 0 || s >= width) ? (a < 0 ? (T)-1 : (T)0) : (T)(a >> s);
}
// The bit pattern shifted right, filled with zeros whatever the sign.
__device__ __forceinline__ int logical_shift_right_(int a, int s) {
  return s <= 0 ? a : (s >= 32 ? 0 : (int)((unsigned int)a >> s));
}
__device__ __forceinline__ long long logical_shift_right_(long long a, long long s) {
  return s <= 0 ? a : (s >= 64 ? 0LL : (long long)((unsigned long long)a >> s));
}
""",
    ),
    Section(
        ("gcd_",),
        r"""
template <typename T> __device__ T gcd_(T a, T b) {
  a = a < 0 ? -a : a;
  b = b < 0 ? -b : b;
  while (b != 0) { T r = a % b; a = b; b = r; }
  return a;
}
""",
    ),
    Section(
        ("int_pow_",),
        r"""
// Integer power as torch computes it: negative exponents give 0 unless the base is 1 or -1.
template <typename T> __device__ T int_pow_(T base, T exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent & 1) ? -1 : 1;
    return 0;
  }
  T result = 1;
  while (exponent) {
    if (exponent & 1) result *= base;
    base *= base;
    exponent >>= 1;
  }
  return result;
}
""",
    ),
    Section(
        ("lerp_",),
        r"""
// torch.lerp, exact at both ends: start + weight (end - start) for |weight| < 0.5, else
// end + (weight - 1) (end - start), each one fused multiply-add as torch's kernels compute it
// (its CPU kernel calls fmadd; nvcc contracts its CUDA formula), so that lerp(0, max, -1) is
// -max, not max - 2 max = -inf.
__device__ __forceinline__ float lerp_(float start, float end, float weight) {
  const bool small = fabsf(weight) < 0.5f;
  return fmaf(small ? weight : weight - 1.0f, end - start, small ? start : end);
}
__device__ __forceinline__ double lerp_(double start, double end, double weight) {
  const bool small = fabs(weight) < 0.5;
  return fma(small ? weight : weight - 1.0, end - start, small ? start : end);
}
""",
    ),
    Section(("PhiloxState", "rng_uniformf", "rng_normalf", "rng_uniform", "rng_normal",
             "philox_draw", "uniformf_of", "normalf_of", "uniform_of", "normal_of"),
            prelude_rng.PHILOX),
    Section(("rng_uniform_half", "rng_normal_half", "uniform_half_of", "normal_half_of"),
            prelude_rng.PHILOX_HALF),
    Section(("rng_uniform_bfloat", "rng_normal_bfloat", "uniform_bfloat_of",
             "normal_bfloat_of"), prelude_rng.PHILOX_BFLOAT),
    Section(
        ("prefetch_l2",),
        r"""
// Asks L2 for `bytes` bytes (a multiple of 16, 16-byte aligned) at `address`, without waiting:
// one bulk prefetch on sm_90; nothing elsewhere (it changes no value).
__device__ __forceinline__ void prefetch_l2(const void* address, unsigned int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(address), "r"(bytes)
               : "memory");
#endif
}
""",
    ),
    Section(
        ("block_reduce",),
        r"""
// Combines `value` over the THREADS consecutive threads of a row: a butterfly of warp shuffles
// within each warp, then (rows wider than a warp) one value per warp through shared memory.
// Every thread of the row gets the result. `scratch` holds one T per warp of the block.
template <int THREADS, typename T, typename Combine>
__device__ __forceinline__ T block_reduce(T value, Combine combine, T* scratch) {
  constexpr int WIDTH = THREADS < 32 ? THREADS : 32;
  #pragma unroll
  for (int offset = WIDTH / 2; offset > 0; offset /= 2) {
    value = combine(value, __shfl_xor_sync(0xffffffffu, value, offset, WIDTH));
  }
  if constexpr (THREADS > 32) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) scratch[warp] = value;
    __syncthreads();
    value = scratch[lane < THREADS / 32 ? lane : 0];
    #pragma unroll
    for (int offset = THREADS / 64; offset > 0; offset /= 2) {
      value = combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
    }
    value = __shfl_sync(0xffffffffu, value, 0);  // lanes past the warp count held filler
    __syncthreads();  // scratch may be written again by the next reduction
  }
  return value;
}
""",
    ),
    Section(("block_reduce2",), prelude_combine.BLOCK_REDUCE2),
    Section(("load_cg",), prelude_combine.LOAD_CG),
    Section(
        ("block_welford",),
        r"""
// A partial variance: count n, mean, and m2 (the sum of squared deviations from that mean).
template <typename T> struct Welford { T mean, m2; int n; };

// Chan's parallel rule: the partial of a's elements and b's together. An empty side (n = 0,
// mean and m2 0) leaves the other as it is.
template <typename T>
__device__ __forceinline__ Welford<T> welford_combine(Welford<T> a, Welford<T> b) {
  const int n = a.n + b.n;
  const T delta = b.mean - a.mean;
  const T weight = n > 0 ? (T)b.n / (T)n : (T)0;  // n_b / n
  return {a.mean + delta * weight, a.m2 + b.m2 + delta * delta * (T)a.n * weight, n};
}

// With the partner `offset` lanes away (within groups of `width`): both combine (lower lane,
// upper lane), so both get the same bits.
template <typename T>
__device__ __forceinline__ Welford<T> welford_step(Welford<T> value, int offset, int width) {
  const Welford<T> other{__shfl_xor_sync(0xffffffffu, value.mean, offset, width),
                         __shfl_xor_sync(0xffffffffu, value.m2, offset, width),
                         __shfl_xor_sync(0xffffffffu, value.n, offset, width)};
  const bool upper = (threadIdx.x & offset) != 0;
  return welford_combine(upper ? other : value, upper ? value : other);
}

// The block reduction of (n, mean, m2) partials: `mean` and `m2` become the row's, over the
// THREADS consecutive threads of a row, combined in a fixed tree; every thread gets them.
// `scratch` holds two T per warp of the block (means, then m2s at 32), `counts` one int.
template <int THREADS, typename T>
__device__ __forceinline__ void block_welford(T& mean, T& m2, int n, T* scratch, int* counts) {
  constexpr int WIDTH = THREADS < 32 ? THREADS : 32;
  Welford<T> value{mean, m2, n};
  #pragma unroll
  for (int offset = WIDTH / 2; offset > 0; offset /= 2) {
    value = welford_step(value, offset, WIDTH);
  }
  if constexpr (THREADS > 32) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
      scratch[warp] = value.mean;
      scratch[32 + warp] = value.m2;
      counts[warp] = value.n;
    }
    __syncthreads();
    const bool held = lane < THREADS / 32;  // lanes past the warp count take an empty partial
    value = {held ? scratch[lane] : (T)0, held ? scratch[32 + lane] : (T)0,
             held ? counts[lane] : 0};
    #pragma unroll
    for (int offset = THREADS / 64; offset > 0; offset /= 2) {
      value = welford_step(value, offset, 32);
    }
    value.mean = __shfl_sync(0xffffffffu, value.mean, 0);
    value.m2 = __shfl_sync(0xffffffffu, value.m2, 0);
    __syncthreads();  // scratch may be written again by the next reduction
  }
  mean = value.mean;
  m2 = value.m2;
}
""",
    ),
)


def prelude_for(body: str) -> str:
    """The sections ``body`` uses and the sections those use, in a fixed order (a section uses
    only sections before it)."""
    used = set(re.findall(r"[A-Za-z_]\w*", body))
    chosen: list[Section] = []
    for section in reversed(SECTIONS):  # a section's text adds what it uses, further up
        if used & set(section.provides):
            chosen.append(section)
            used |= set(re.findall(r"[A-Za-z_]\w*", section.text))
    return "".join(section.text.lstrip("\n") + "\n" for section in reversed(chosen))
