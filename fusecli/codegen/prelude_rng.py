"""The prelude's Philox sections (``fusecli.codegen.prelude``): nvFuser's random numbers, drawn
in the kernel as ``fusecli.ir.rng`` defines them.

Generated code declares one ``PhiloxState`` per random op at the top of the kernel and computes
each element with ``rng_<distribution><type>(state, seed, offset, index, first, second)``:
``index`` is the element's row-major linear index in the op's output, ``seed`` and ``offset``
the op's 64-bit parameters. The half and bfloat16 variants use the float16 and bfloat16
sections' rounding.
"""

PHILOX = r"""
// Philox4x32-10 as nvFuser draws it (fusecli.ir.rng): key = seed, counter = (offset low, offset
// high, subsequence low, subsequence high). Element i of a random op is component i % 4 of
// subsequence i / 4 (i % 2 of i / 2 for double). Each random op keeps the four words of its last
// subsequence in a PhiloxState (registers), drawn again only when the subsequence changes: a
// thread's consecutive elements share one call.
struct PhiloxState { unsigned long long subsequence; unsigned int word[4]; };

__device__ __forceinline__ void philox4x32_10(unsigned int word[4], unsigned long long seed,
                                              unsigned long long subsequence,
                                              unsigned long long offset) {
  unsigned int key0 = (unsigned int)seed, key1 = (unsigned int)(seed >> 32);
  unsigned int c0 = (unsigned int)offset, c1 = (unsigned int)(offset >> 32);
  unsigned int c2 = (unsigned int)subsequence, c3 = (unsigned int)(subsequence >> 32);
  #pragma unroll
  for (int round = 0; round < 10; ++round) {
    const unsigned int high0 = __umulhi(0xD2511F53u, c0), low0 = 0xD2511F53u * c0;
    const unsigned int high1 = __umulhi(0xCD9E8D57u, c2), low1 = 0xCD9E8D57u * c2;
    c0 = high1 ^ c1 ^ key0;
    c1 = low1;
    c2 = high0 ^ c3 ^ key1;
    c3 = low0;
    key0 += 0x9E3779B9u;
    key1 += 0xBB67AE85u;
  }
  word[0] = c0; word[1] = c1; word[2] = c2; word[3] = c3;
}

__device__ __forceinline__ void philox_at(PhiloxState& state, unsigned long long seed,
                                          unsigned long long offset,
                                          unsigned long long subsequence) {
  if (subsequence != state.subsequence) {
    philox4x32_10(state.word, seed, subsequence, offset);
    state.subsequence = subsequence;
  }
}

// Word k by selection rather than by a variable index: the words stay in registers.
__device__ __forceinline__ unsigned int philox_word(const PhiloxState& state, unsigned int k) {
  return k == 0 ? state.word[0] : k == 1 ? state.word[1] : k == 2 ? state.word[2] : state.word[3];
}

// In (0, 1]: x 2^-32 + 2^-33 in float; 53 bits of two words 2^-53 + 2^-54 in double.
__device__ __forceinline__ float philox_raw_float(unsigned int x) {
  return (float)x * 0x1p-32f + 0x1p-33f;
}
__device__ __forceinline__ float philox_uniformf(unsigned int x) {
  const float u = philox_raw_float(x);
  return u == 1.0f ? 0.0f : u;
}
__device__ __forceinline__ double philox_uniform(unsigned int x, unsigned int y) {
  const unsigned long long bits = (unsigned long long)x ^ ((unsigned long long)y << 21);
  const double u = (double)bits * 0x1p-53 + 0x1p-54;
  return u == 1.0 ? 0.0 : u;
}

// Box-Muller of two float uniforms: the sine for even components, the cosine for odd.
__device__ __forceinline__ float philox_normalf(const PhiloxState& state, unsigned int c) {
  const float u = philox_uniformf(philox_word(state, c & 2u));
  const float v = philox_uniformf(philox_word(state, (c & 2u) + 1u)) * 6.2831855f;
  const float radius = sqrtf(-2.0f * logf(u));
  return (c & 1u) ? radius * cosf(v) : radius * sinf(v);
}

// The four words of subsequence `subsequence`, drawn unconditionally: for an element whose
// subsequence and component the generator knows (its index is a multiple of 4 plus a constant).
__device__ __forceinline__ PhiloxState philox_draw(unsigned long long seed,
                                                   unsigned long long offset,
                                                   unsigned long long subsequence) {
  PhiloxState state;
  philox4x32_10(state.word, seed, subsequence, offset);
  state.subsequence = subsequence;
  return state;
}

// Component `c` of drawn words: uniform in [from, to), or normal (mean, std). nvFuser's
// `from + range * u` and `normal * std + mean` are fused multiply-adds (--fmad=true).
__device__ __forceinline__ float uniformf_of(const PhiloxState& state, unsigned int c,
                                             float from, float to) {
  return fmaf(to - from, philox_uniformf(philox_word(state, c)), from);
}
__device__ __forceinline__ float normalf_of(const PhiloxState& state, unsigned int c,
                                            float mean, float std) {
  return fmaf(philox_normalf(state, c), std, mean);
}
__device__ __forceinline__ double uniform_of(const PhiloxState& state, unsigned int c,
                                             double from, double to) {
  return fma(to - from, philox_uniform(philox_word(state, 2u * c),
                                       philox_word(state, 2u * c + 1u)), from);
}
__device__ __forceinline__ double normal_of(const PhiloxState& state, unsigned int c,
                                            double mean, double std) {
  const double u = philox_uniform(state.word[0], state.word[1]);
  const double v = philox_uniform(state.word[2], state.word[3]) * 6.2831853071795860;
  const double radius = sqrt(-2.0 * log(u));
  return fma(c ? radius * cos(v) : radius * sin(v), std, mean);
}

// Element `index` of a random op, its words kept in `state` and drawn again only for a new
// subsequence.
__device__ __forceinline__ float rng_uniformf(PhiloxState& state, unsigned long long seed,
                                              unsigned long long offset,
                                              unsigned long long index, float from, float to) {
  philox_at(state, seed, offset, index / 4);
  return uniformf_of(state, (unsigned int)(index % 4), from, to);
}
__device__ __forceinline__ float rng_normalf(PhiloxState& state, unsigned long long seed,
                                             unsigned long long offset,
                                             unsigned long long index, float mean, float std) {
  philox_at(state, seed, offset, index / 4);
  return normalf_of(state, (unsigned int)(index % 4), mean, std);
}
__device__ __forceinline__ double rng_uniform(PhiloxState& state, unsigned long long seed,
                                              unsigned long long offset,
                                              unsigned long long index, double from, double to) {
  philox_at(state, seed, offset, index / 2);
  return uniform_of(state, (unsigned int)(index % 2), from, to);
}
__device__ __forceinline__ double rng_normal(PhiloxState& state, unsigned long long seed,
                                             unsigned long long offset,
                                             unsigned long long index, double mean, double std) {
  philox_at(state, seed, offset, index / 2);
  return normal_of(state, (unsigned int)(index % 2), mean, std);
}
"""

def _rounded(name: str, suffix: str, rounding: str) -> str:
    """A 16-bit type's uniform and normal: the float value rounded with ``rounding``; a
    uniform that rounds to ``to`` is ``from``."""
    declarations = []
    for kind, rounded in (("uniform", f"""
  const float u = philox_raw_float(philox_word(state, c));
  const float value = {rounding}(fmaf(to - from, u, from));
  return value == {rounding}(to) ? {rounding}(from) : value;"""), ("normal", f"""
  return {rounding}(normalf_of(state, c, from, to));""")):
        of = f"__device__ __forceinline__ float {kind}_{suffix}_of("
        at = f"__device__ __forceinline__ float rng_{kind}_{suffix}("
        declarations.append(f"""{of}const PhiloxState& state, unsigned int c,
{" " * len(of)}float from, float to) {{{rounded}
}}
{at}PhiloxState& state, unsigned long long seed,
{" " * len(at)}unsigned long long offset, unsigned long long index,
{" " * len(at)}float from, float to) {{
  philox_at(state, seed, offset, index / 4);
  return {kind}_{suffix}_of(state, (unsigned int)(index % 4), from, to);
}}""")
    body = "\n".join(declarations)
    return f"""
// {name}: the float value rounded; a uniform that rounds to `to` is `from`. (For normal,
// `from` and `to` are the mean and the deviation.)
{body}
"""


PHILOX_HALF = _rounded("Half", "half", "round_to_float16")
PHILOX_BFLOAT = _rounded("Bfloat16", "bfloat", "round_to_bfloat16")
