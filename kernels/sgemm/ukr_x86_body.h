// The x86 micro-kernel and its tiles, written once over vector traits V (kernels/simd/) for a
// register tile of MR rows and NR = 2 vectors: each step broadcasts MR values of A and does 2 MR
// FMAs on two vectors of B. ukr_x86.cpp includes it once per level, inside that level's target
// region and a namespace that defines V, MR and NR (AVX-512: 12 x 32, 24 of the 32 registers
// accumulate; AVX2: 6 x 16, 12 of the 16).
//
// No include guard: included once per level.

using F = typename V::F;
constexpr int kNV = V::kLanes;  // floats per vector; NR = 2 kNV

template <int ROWS>
RUDRA_SIMD void clear(F (&lo)[ROWS], F (&hi)[ROWS]) {
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) lo[i] = hi[i] = V::zero();
}

// acc += a[i] (x) (b0, b1) for the ROWS rows.
template <int ROWS>
RUDRA_SIMD void step(F (&lo)[ROWS], F (&hi)[ROWS], const float* a, F b0, F b1) {
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i) {
        const F ai = V::broadcast(a + i);
        lo[i] = V::fma(ai, b0, lo[i]);
        hi[i] = V::fma(ai, b1, hi[i]);
    }
}

// The full tile: C = alpha acc + beta C. On AVX2, C's rows are prefetched before the k loop and
// A 16 steps ahead in a loop unrolled 4 times (2048^3 went from 0.86-0.93x to 0.92-0.97x BLIS's
// speed); the AVX-512 kernel is faster without (the unrolled loop cost cifar10_full conv1's
// forward GEMM, k = 75, 11%).
void run(int64_t k, const float* a, const float* b, int64_t rs_b, float* c, int64_t rs_c, float alpha, float beta) {
    F lo[MR], hi[MR];
    clear<MR>(lo, hi);
    if constexpr (kNV == 8) {
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {
            V::prefetch(c + i * rs_c);
            V::prefetch(c + i * rs_c + NR - 1);
        }
#pragma GCC unroll 4
        for (int64_t p = 0; p < k; ++p, a += MR, b += rs_b) {
            V::prefetch(a + 16 * MR);
            step<MR>(lo, hi, a, V::load(b), V::load(b + kNV));
        }
    } else {
        for (int64_t p = 0; p < k; ++p, a += MR, b += rs_b) step<MR>(lo, hi, a, V::load(b), V::load(b + kNV));
    }
    const F va = V::set1(alpha), vb = V::set1(beta);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i, c += rs_c) {
        F r0 = V::mul(va, lo[i]), r1 = V::mul(va, hi[i]);
        if (beta != 0.0f) {
            r0 = V::fma(vb, V::load(c), r0);
            r1 = V::fma(vb, V::load(c + kNV), r1);
        }
        V::store(c, r0);
        V::store(c + kNV, r1);
    }
}

// Edge tiles: ROWS < MR rows and/or fewer than NR columns, with masked loads and stores of C.
// Small-m GEMMs (inner products at mini-batch 1-8, 32 output channels) would otherwise compute
// MR rows to keep a few.
template <int ROWS>
void edge_rows(int cols, int64_t k, const float* a, const float* b, int64_t rs_b, float* c, int64_t rs_c, float alpha,
               float beta) {
    F lo[ROWS], hi[ROWS];
    clear<ROWS>(lo, hi);
    for (int64_t p = 0; p < k; ++p, a += MR, b += rs_b) step<ROWS>(lo, hi, a, V::load(b), V::load(b + kNV));
    const typename V::M m0 = V::first(cols), m1 = V::first(cols - kNV);
    const F va = V::set1(alpha), vb = V::set1(beta);
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i, c += rs_c) {
        F r0 = V::mul(va, lo[i]), r1 = V::mul(va, hi[i]);
        if (beta != 0.0f) {
            r0 = V::fma(vb, V::load(m0, c), r0);
            r1 = V::fma(vb, V::load(m1, c + kNV), r1);
        }
        V::store(c, m0, r0);
        V::store(c + kNV, m1, r1);
    }
}

// C = acc (beta 0) or C + acc (beta 1): the indirect and gather tiles' ending.
template <int ROWS>
RUDRA_SIMD void store_tile(F (&lo)[ROWS], F (&hi)[ROWS], float* c, int64_t rs_c, float beta) {
#pragma GCC unroll 16
    for (int i = 0; i < ROWS; ++i, c += rs_c) {
        if (beta != 0.0f) {
            lo[i] = V::add(lo[i], V::load(c));
            hi[i] = V::add(hi[i], V::load(c + kNV));
        }
        V::store(c, lo[i]);
        V::store(c + kNV, hi[i]);
    }
}

// B rows read in place at offsets, in PARTS pieces: two of a vector each, or four of half a
// vector (AVX-512's rows of 8 pixels).
template <int ROWS, int PARTS>
void indirect_rows(int64_t k, const float* a, const float* const* bases, const int32_t* offsets, float* c,
                   int64_t rs_c, float beta) {
    F lo[ROWS], hi[ROWS];
    clear<ROWS>(lo, hi);
    const float *q0 = bases[0], *q1 = bases[1], *q2 = bases[PARTS == 4 ? 2 : 0], *q3 = bases[PARTS == 4 ? 3 : 0];
    for (int64_t p = 0; p < k; ++p, a += MR) {
        const int32_t o = offsets[p];
        if constexpr (PARTS == 2)
            step<ROWS>(lo, hi, a, V::load(q0 + o), V::load(q1 + o));
        else
            step<ROWS>(lo, hi, a, V::load_halves(q0 + o, q1 + o), V::load_halves(q2 + o, q3 + o));
    }
    store_tile<ROWS>(lo, hi, c, rs_c, beta);
}

// A gathered in runs of `run` consecutive values (see MicroKernelGatherAFn): within a run the
// addresses follow from p alone.
template <int ROWS>
void gather_a_rows(int64_t k, int64_t run, const float* const* a_rows, const int32_t* run_offsets, const float* b,
                   float* c, int64_t rs_c, float beta) {
    F lo[ROWS], hi[ROWS];
    clear<ROWS>(lo, hi);
    for (int64_t s = 0; s < k / run; ++s) {
        const float* rows[ROWS];
#pragma GCC unroll 16
        for (int i = 0; i < ROWS; ++i) rows[i] = a_rows[i] + run_offsets[s];
        for (int64_t p = 0; p < run; ++p, b += NR) {
            const F b0 = V::load(b), b1 = V::load(b + kNV);
#pragma GCC unroll 16
            for (int i = 0; i < ROWS; ++i) {
                const F ai = V::broadcast(rows[i] + p);
                lo[i] = V::fma(ai, b0, lo[i]);
                hi[i] = V::fma(ai, b1, hi[i]);
            }
        }
    }
    store_tile<ROWS>(lo, hi, c, rs_c, beta);
}

// The entry points, each choosing its ROWS instance from a table built for 1 .. MR.
template <int... R>
void edge_by_rows(std::integer_sequence<int, R...>, int rows, int cols, int64_t k, const float* a, const float* b,
                  int64_t rs_b, float* c, int64_t rs_c, float alpha, float beta) {
    using Fn = void (*)(int, int64_t, const float*, const float*, int64_t, float*, int64_t, float, float);
    static constexpr Fn kByRows[] = {edge_rows<R + 1>...};
    kByRows[rows - 1](cols, k, a, b, rs_b, c, rs_c, alpha, beta);
}

template <int PARTS, int... R>
void indirect_by_rows(std::integer_sequence<int, R...>, int rows, int64_t k, const float* a, const float* const* bases,
                      const int32_t* offsets, float* c, int64_t rs_c, float beta) {
    using Fn = void (*)(int64_t, const float*, const float* const*, const int32_t*, float*, int64_t, float);
    static constexpr Fn kByRows[] = {indirect_rows<R + 1, PARTS>...};
    kByRows[rows - 1](k, a, bases, offsets, c, rs_c, beta);
}

template <int... R>
void gather_by_rows(std::integer_sequence<int, R...>, int rows, int64_t k, int64_t run, const float* const* a_rows,
                    const int32_t* run_offsets, const float* b, float* c, int64_t rs_c, float beta) {
    using Fn = void (*)(int64_t, int64_t, const float* const*, const int32_t*, const float*, float*, int64_t, float);
    static constexpr Fn kByRows[] = {gather_a_rows<R + 1>...};
    kByRows[rows - 1](k, run, a_rows, run_offsets, b, c, rs_c, beta);
}

void edge(int rows, int cols, int64_t k, const float* a, const float* b, int64_t rs_b, float* c, int64_t rs_c,
          float alpha, float beta) {
    edge_by_rows(std::make_integer_sequence<int, MR>{}, rows, cols, k, a, b, rs_b, c, rs_c, alpha, beta);
}

// parts: 2, or 4 where half a vector holds at least 8 floats (the implicit convolution's pieces).
void indirect(int rows, int parts, int64_t k, const float* a, const float* const* bases, const int32_t* offsets,
              float* c, int64_t rs_c, float beta) {
    if (kNV >= 16 && parts == 4)
        indirect_by_rows<4>(std::make_integer_sequence<int, MR>{}, rows, k, a, bases, offsets, c, rs_c, beta);
    else
        indirect_by_rows<2>(std::make_integer_sequence<int, MR>{}, rows, k, a, bases, offsets, c, rs_c, beta);
}

void gather_a(int rows, int64_t k, int64_t run, const float* const* a_rows, const int32_t* run_offsets, const float* b,
              float* c, int64_t rs_c, float beta) {
    gather_by_rows(std::make_integer_sequence<int, MR>{}, rows, k, run, a_rows, run_offsets, b, c, rs_c, beta);
}
