"""Running a generated kernel on the CPU, so that tests without a GPU check what kernels compute.

The kernel's own source is compiled by the host C++ compiler (g++) after a prelude that plays
the CUDA runtime: ``threadIdx`` and ``blockIdx`` are thread-local, a block's threads are
``std::thread``s meeting at a ``std::barrier`` for ``__syncthreads``, and warp shuffles exchange
values through the block. Blocks run one after another (``__shared__`` becomes ``static``), in
the device's order of block indices (x fastest); atomics and fences are the host's, so a grid
reduction's last block to arrive is the last block of its tile.
Kernels without shuffles or barriers run their threads sequentially in one thread. Only the
math library differs from the device's, so results agree to tolerance, and indexing, guards,
reductions and stores are exactly the device's.
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from fusecli.codegen.kernel import Kernel

_HOST_PRELUDE = r"""
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>
using std::isfinite; using std::isinf; using std::isnan; using std::signbit;

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(threads)
#define __restrict__ __restrict
#define __shared__ static

struct Dim3 { unsigned x = 0, y = 1, z = 1; };
thread_local Dim3 threadIdx, blockIdx;
Dim3 blockDim, gridDim;
std::barrier<>* block_barrier = nullptr;
unsigned long long exchange[1024];

inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
inline unsigned __float2uint_rn(float f) { return (unsigned)std::nearbyint(f); }
inline unsigned __umulhi(unsigned a, unsigned b) {
  return (unsigned)(((unsigned long long)a * b) >> 32);
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline double erfinv(double y) {
  if (!(std::fabs(y) <= 1.0)) return NAN;  // NaN, and outside [-1, 1]
  if (std::fabs(y) == 1.0 || y == 0.0) return y == 0.0 ? y : std::copysign(INFINITY, y);
  double x = 0.0;
  for (int step = 0; step < 60; ++step) {  // Newton on erf: converges from 0 for |y| < 1
    double slope = 1.1283791670955126 * std::exp(-x * x);
    x -= (std::erf(x) - y) / slope;
  }
  return x;
}
inline float erfinvf(float y) { return (float)erfinv((double)y); }
// erfc(x) = y for y in [0, 2]: -erfcinv(2 - y) above 1 (2 - y exact there); below, Newton on
// log erfc from sqrt(-log y) (erfc(x) ~ exp(-x^2)), in long double so that erfc of the deep
// tail (double's smallest subnormal: x ~ 27) does not underflow.
inline double erfcinv(double y) {
  if (!(y >= 0.0 && y <= 2.0)) return NAN;
  if (y > 1.0) return -erfcinv(2.0 - y);
  if (y == 0.0) return INFINITY;
  long double x = std::sqrt(-std::log((long double)y)), target = std::log((long double)y);
  for (int step = 0; step < 60; ++step) {  // log erfc is concave: no overshoot from the right
    long double tail = std::erfc(x);
    x += (std::log(tail) - target) * tail / (1.1283791670955126L * std::exp(-x * x));
  }
  return (double)x;
}
inline float erfcinvf(float y) { return (float)erfcinv((double)y); }

inline void __syncthreads() { if (block_barrier) block_barrier->arrive_and_wait(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
template <typename T> T atomicAdd(T* address, T value) {
  return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST);
}
inline unsigned linear_thread() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
inline Dim3 thread_at(unsigned t) {
  return {t % blockDim.x, t / blockDim.x % blockDim.y, t / (blockDim.x * blockDim.y)};
}

template <typename T> T exchange_with(T value, unsigned partner) {
  unsigned long long bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  exchange[linear_thread()] = bits;
  __syncthreads();
  unsigned long long got = exchange[partner];
  __syncthreads();
  T result;
  std::memcpy(&result, &got, sizeof(T));
  return result;
}
template <typename T> T __shfl_xor_sync(unsigned, T value, int offset, int width = 32) {
  unsigned lane = linear_thread() % width;
  return exchange_with(value, linear_thread() - lane + (lane ^ offset));
}
template <typename T> T __shfl_sync(unsigned, T value, int source, int width = 32) {
  return exchange_with(value, linear_thread() - linear_thread() % width + source);
}
"""

_LAUNCHER = r"""
extern "C" void emulate_launch(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz{params}) {{
  gridDim = {{gx, gy, gz}};
  blockDim = {{bx, by, bz}};
  const unsigned block = bx * by * bz;
  for (unsigned b = 0; b < gx * gy * gz; ++b) {{
    const Dim3 at{{b % gx, b / gx % gy, b / (gx * gy)}};
    {run}
  }}
}}
"""

_RUN_SEQUENTIAL = """blockIdx = at;
    for (unsigned t = 0; t < block; ++t) {{ threadIdx = thread_at(t); {call}; }}"""

_RUN_THREADS = """std::barrier<> barrier(block);
    block_barrier = &barrier;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < block; ++t) {{
      threads.emplace_back([=] {{ blockIdx = at; threadIdx = thread_at(t); {call}; }});
    }}
    for (std::thread& thread : threads) thread.join();
    block_barrier = nullptr;"""

_CTYPES: dict[str, Any] = {
    "float": ctypes.c_float,
    "double": ctypes.c_double,
    "long long": ctypes.c_longlong,
    "int": ctypes.c_int,
    "unsigned long long": ctypes.c_ulonglong,
    "bool": ctypes.c_bool,
}


def available() -> bool:
    return shutil.which("g++") is not None


def host_source(kernel: Kernel) -> str:
    params = "".join(f", {p.ctype} {p.name}" for p in kernel.args)
    call = f"{kernel.name}({', '.join(p.name for p in kernel.args)})"
    cooperative = "__syncthreads" in kernel.source or "__shfl" in kernel.source
    run = (_RUN_THREADS if cooperative else _RUN_SEQUENTIAL).format(call=call)
    return _HOST_PRELUDE + kernel.source + _LAUNCHER.format(params=params, run=run)


@cache
def _library(source: str) -> ctypes.CDLL:
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    folder = Path(tempfile.gettempdir()) / "fusecli-emulate"
    folder.mkdir(exist_ok=True)
    library = folder / f"{digest}.so"
    if not library.exists():
        source_file = folder / f"{digest}.cpp"
        source_file.write_text(source)
        partial = folder / f"{digest}.partial.so"
        subprocess.run(
            ["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-w",
             str(source_file), "-o", str(partial)],
            check=True, capture_output=True, text=True,
        )
        partial.replace(library)
    return ctypes.CDLL(str(library))


def emulate(kernel: Kernel, values: Sequence[Any]) -> None:
    """Run ``kernel`` on CPU tensors: ``values`` as the runtime prepares them (tensors, numbers)."""
    import torch

    arguments: list[Any] = [ctypes.c_uint(n) for n in (*kernel.grid, *kernel.block)]
    for param, value in zip(kernel.args, values, strict=True):
        if isinstance(value, torch.Tensor):
            arguments.append(ctypes.c_void_p(value.data_ptr()))
        else:
            number = value.item() if hasattr(value, "item") else value
            arguments.append(_CTYPES[param.ctype](number))
    _library(host_source(kernel)).emulate_launch(*arguments)
