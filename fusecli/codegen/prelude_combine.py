"""The prelude's sections for combining partial results across threads and blocks
(``fusecli.codegen.prelude``): two values in one block reduction, and loads of partials other
blocks of the same launch wrote.
"""

BLOCK_REDUCE2 = r"""
// block_reduce of two values at once: their shuffles interleaved, one pair of barriers for
// both. Each is combined in block_reduce's order, so each gets block_reduce's bits. `scratch`
// holds two T per warp of the block (64).
template <int THREADS, typename T, typename CombineA, typename CombineB>
__device__ __forceinline__ void block_reduce2(T& a, T& b, CombineA combine_a,
                                              CombineB combine_b, T* scratch) {
  constexpr int WIDTH = THREADS < 32 ? THREADS : 32;
  #pragma unroll
  for (int offset = WIDTH / 2; offset > 0; offset /= 2) {
    a = combine_a(a, __shfl_xor_sync(0xffffffffu, a, offset, WIDTH));
    b = combine_b(b, __shfl_xor_sync(0xffffffffu, b, offset, WIDTH));
  }
  if constexpr (THREADS > 32) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
      scratch[warp] = a;
      scratch[32 + warp] = b;
    }
    __syncthreads();
    const int from = lane < THREADS / 32 ? lane : 0;
    a = scratch[from];
    b = scratch[32 + from];
    #pragma unroll
    for (int offset = THREADS / 64; offset > 0; offset /= 2) {
      a = combine_a(a, __shfl_xor_sync(0xffffffffu, a, offset));
      b = combine_b(b, __shfl_xor_sync(0xffffffffu, b, offset));
    }
    a = __shfl_sync(0xffffffffu, a, 0);  // lanes past the warp count held filler
    b = __shfl_sync(0xffffffffu, b, 0);
    __syncthreads();  // scratch may be written again by the next reduction
  }
}
"""

LOAD_CG = r"""
// N consecutive values (N * sizeof(T) bytes, aligned to that) that other blocks of this launch
// wrote, read past L1 (not coherent across multiprocessors) in one load: ld.global.cg, as a
// volatile read of each would, but one instruction for all N.
template <typename T, int N>
__device__ __forceinline__ Vec<T, N> load_cg(const volatile T* address) {
  Vec<T, N> v;
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) * N == 16) {
    const uint4 bits = __ldcg(reinterpret_cast<const uint4*>(const_cast<const T*>(address)));
    v = *reinterpret_cast<const Vec<T, N>*>(&bits);
  } else if constexpr (sizeof(T) * N == 8) {
    const uint2 bits = __ldcg(reinterpret_cast<const uint2*>(const_cast<const T*>(address)));
    v = *reinterpret_cast<const Vec<T, N>*>(&bits);
  } else {
    #pragma unroll
    for (int i = 0; i < N; ++i) v.v[i] = address[i];
  }
#else
  for (int i = 0; i < N; ++i) v.v[i] = address[i];
#endif
  return v;
}
"""
