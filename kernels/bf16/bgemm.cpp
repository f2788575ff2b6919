// The loops around the BF16 micro-kernel (BLIS's five, as in kernels/sgemm/sgemm.cpp): for each
// nc-wide panel of B and kc-deep slice of k the threads pack B's slivers together, then for each
// mc-tall block of A its panels, and split the register tiles. Packing rounds to BF16, so A and B
// stay FP32 in memory and each value is rounded once per block that reads it.
#include "kernels/bf16/bgemm.h"

#include <omp.h>

#include <algorithm>

#include "kernels/aligned_buffer.h"
#include "kernels/transpose.h"

namespace rudra::kernels {
namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

void split(int count, int tid, int nt, int& begin, int& end) {
    begin = static_cast<int>(static_cast<int64_t>(count) * tid / nt);
    end = static_cast<int>(static_cast<int64_t>(count) * (tid + 1) / nt);
}

// One operand as the loops see it: `lanes` (rows of op(A), columns of op(B)) by k. Lane l at
// depth p is src[p * ld + l] when the lanes lie contiguous (A transposed, B not), else
// src[l * ld + p].
struct Operand {
    const float* src;
    int64_t ld;
    bool lanes_contiguous;
};

// Packs lanes [l0, l0 + count) x depths [p0, p0 + kc) into a sliver of `width` lanes: kc / 2
// (rounded up) steps of `width` pair words. `tmp` holds kc x width floats.
void pack_sliver(const Bf16MicroKernel& uk, const Operand& x, int l0, int count, int width, int p0, int kc,
                 float* tmp, uint32_t* dst) {
    const int kp = (kc + 1) / 2;
    if (x.lanes_contiguous) {
        const float* rows = x.src + p0 * x.ld + l0;
        for (int p = 0; p < kc; p += 2, dst += width) {
            const float* r0 = rows + p * x.ld;
            uk.pair_rows(r0, p + 1 < kc ? r0 + x.ld : nullptr, count, width, dst);
        }
        return;
    }
    // A lane's consecutive k are consecutive in memory, so rounding its row gives its pair words
    // in order; a transpose of the 32-bit words (moved as floats, bits unchanged) makes the sliver.
    if (uk.pack_lanes) {
        uk.pack_lanes(x.src + l0 * x.ld + p0, x.ld, count, width, kc, dst);
        return;
    }
    uint16_t* halves = reinterpret_cast<uint16_t*>(tmp);
    for (int l = 0; l < count; ++l) {
        uint16_t* row = halves + static_cast<int64_t>(l) * 2 * kp;
        uk.round_row(x.src + (l0 + l) * x.ld + p0, row, static_cast<size_t>(kc));
        if (kc % 2) row[kc] = 0;
    }
    float* words = tmp;
    float* out = reinterpret_cast<float*>(dst);
    transpose(words, count, kp, kp, out, width);
    if (count < width)
        for (int q = 0; q < kp; ++q) std::fill(dst + static_cast<int64_t>(q) * width + count, dst + (q + 1) * static_cast<int64_t>(width), 0u);
}

// B's slivers in the panel lie a cache line further apart than their kc / 2 x nr words: 64 KiB
// apart, every sliver's start fell in the same cache sets.
int64_t panel_sliver_words(const Bf16MicroKernel& uk, int kp) { return static_cast<int64_t>(kp) * uk.nr + 16; }

// Slivers [q0, q1) of B's panel at lane j0 over depths [p0, p0 + kc), lanes contiguous (B not
// transposed: each depth is a row of the matrix), 16 pairs of rows at a time, every sliver in
// turn: a sliver at a time read its few values from each of kc rows, and rows 16 KiB or more
// apart (a fully connected layer's 4096 or 9216 outputs) fall in the same cache sets.
void pack_slivers_by_rows(const Bf16MicroKernel& uk, const Operand& x, int j0, int n, int q0, int q1, int p0, int kc,
                          uint32_t* panel) {
    constexpr int kPairs = 16;
    const int NR = uk.nr, kp = (kc + 1) / 2;
    const int64_t stride = panel_sliver_words(uk, kp);
    for (int s0 = 0; s0 < kp; s0 += kPairs) {
        const int steps = std::min(kPairs, kp - s0);
        for (int q = q0; q < q1; ++q) {
            const int j = j0 + q * NR, count = std::min(NR, n - j);
            uint32_t* dst = panel + q * stride + static_cast<int64_t>(s0) * NR;
            for (int s = 0; s < steps; ++s, dst += NR) {
                const int p = 2 * (s0 + s);
                const float* r0 = x.src + (p0 + p) * x.ld + j;
                uk.pair_rows(r0, p + 1 < kc ? r0 + x.ld : nullptr, count, NR, dst);
            }
        }
    }
}

struct Problem {
    int m, n, k;
    float alpha;
    Operand a, b;
    float beta;
    float* c;
    int ldc;
    const uint32_t* a_packed;   // A packed whole by pack_bf16_a, or nullptr
    const uint32_t* b_slivers;  // B packed whole as slivers over all of k, or nullptr
};

// The depth of the k-blocks: all of k when it is at most a quarter more than kc (kernels/sgemm),
// always even.
int k_block(const Bf16MicroKernel& uk, int k) { return k <= uk.kc + uk.kc / 4 ? (k + 1) / 2 * 2 : uk.kc; }

struct Workspace {
    uint32_t* b_panel;  // nc / nr slivers of kc / 2 x nr pair words, panel_sliver_words apart
    uint32_t* a_block;  // kc / 2 x mc pair words
    float* tmp;         // per thread: kc x max(mr, nr) floats, for transposed packing
    int64_t tmp_stride;
};

void run_thread(const Bf16MicroKernel& uk, const Problem& P, const Workspace& ws, int kb, int tid, int nt) {
    auto barrier = [nt] {
        if (nt > 1) {
#pragma omp barrier
        }
    };
    const int MR = uk.mr, NR = uk.nr;
    float* tmp = ws.tmp + tid * ws.tmp_stride;
    alignas(64) float tile[16 * 64];
    for (int jc = 0; jc < P.n; jc += uk.nc) {
        const int nc = std::min(uk.nc, P.n - jc), n_jr = ceil_div(nc, NR);
        for (int pc = 0; pc < P.k; pc += kb) {
            const int kc = std::min(kb, P.k - pc), kp = (kc + 1) / 2;
            const float beta = pc == 0 ? P.beta : 1.0f;
            int q0, q1;
            split(n_jr, tid, nt, q0, q1);
            const int64_t sliver_stride = panel_sliver_words(uk, kp);
            if (!P.b_slivers && P.b.lanes_contiguous) {
                pack_slivers_by_rows(uk, P.b, jc, P.n, q0, q1, pc, kc, ws.b_panel);
            } else if (!P.b_slivers) {
                for (int q = q0; q < q1; ++q) {
                    const int j = jc + q * NR;
                    pack_sliver(uk, P.b, j, std::min(NR, P.n - j), NR, pc, kc, tmp, ws.b_panel + q * sliver_stride);
                }
            }
            const int64_t m_round = static_cast<int64_t>(ceil_div(P.m, MR)) * MR;
            for (int ic = 0; ic < P.m; ic += uk.mc) {
                const int mc = std::min(uk.mc, P.m - ic), n_ir = ceil_div(mc, MR);
                const uint32_t* a_block = ws.a_block;
                if (P.a_packed) {
                    // Block (pc, ic) of the whole packed A: pc-slices of m_round rows, panels in order.
                    a_block = P.a_packed + m_round * (pc / 2) + static_cast<int64_t>(ic) * kp;
                } else {
                    split(n_ir, tid, nt, q0, q1);
                    for (int q = q0; q < q1; ++q) {
                        const int i = ic + q * MR;
                        pack_sliver(uk, P.a, i, std::min(MR, P.m - i), MR, pc, kc, tmp,
                                    ws.a_block + static_cast<int64_t>(q) * MR * kp);
                    }
                }
                barrier();  // B's slivers (first block) and A's panels are complete
                int t0, t1;
                split(n_jr * n_ir, tid, nt, t0, t1);
                for (int t = t0; t < t1; ++t) {
                    const int jr = t / n_ir, ir = t % n_ir;
                    const int j = jc + jr * NR, i = ic + ir * MR;
                    const int nr_v = std::min(NR, P.n - j), mr_v = std::min(MR, P.m - i);
                    const uint32_t* as = a_block + static_cast<int64_t>(ir) * MR * kp;
                    const uint32_t* bs =
                        P.b_slivers ? P.b_slivers + (static_cast<int64_t>(j / NR) * ((P.k + 1) / 2) + pc / 2) * NR
                                    : ws.b_panel + jr * sliver_stride;
                    float* cij = P.c + static_cast<int64_t>(i) * P.ldc + j;
                    if (mr_v == MR && nr_v == NR) {
                        uk.run(kp, as, bs, cij, P.ldc, P.alpha, beta);
                        continue;
                    }
                    if (uk.edge) {
                        uk.edge(mr_v, nr_v, kp, as, bs, cij, P.ldc, P.alpha, beta);
                        continue;
                    }
                    uk.run(kp, as, bs, tile, NR, 1.0f, 0.0f);
                    for (int r = 0; r < mr_v; ++r) {
                        float* cr = cij + static_cast<int64_t>(r) * P.ldc;
                        for (int s = 0; s < nr_v; ++s)
                            cr[s] = P.alpha * tile[r * NR + s] + (beta == 0.0f ? 0.0f : beta * cr[s]);
                    }
                }
                barrier();  // before the next block is packed over this one
            }
        }
    }
}

thread_local AlignedBuffer t_scratch;

bool trivial(int m, int n, int k, float alpha, float beta, float* c, int ldc) {
    if (m <= 0 || n <= 0) return true;
    if (k > 0 && alpha != 0.0f) return false;
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            float& v = c[static_cast<int64_t>(i) * ldc + j];
            v = beta == 0.0f ? 0.0f : beta * v;
        }
    return true;
}

void run(const Bf16MicroKernel& uk, const Problem& P, int threads) {
    const int m = P.m, n = P.n, k = P.k;
    int nt = threads > 0 ? threads : omp_get_max_threads();
    if (omp_in_parallel()) nt = 1;
    const double flops = 2.0 * m * n * static_cast<double>(k);
    nt = std::max(1, std::min<int>(nt, static_cast<int>(flops / 2e6)));

    const int kb = k_block(uk, k);
    const int64_t kp = kb / 2;
    const int64_t nc = static_cast<int64_t>(ceil_div(std::min(uk.nc, n), uk.nr)) * uk.nr;
    const int64_t mc = static_cast<int64_t>(ceil_div(std::min(uk.mc, m), uk.mr)) * uk.mr;
    auto round16 = [](int64_t v) { return (v + 15) / 16 * 16; };
    const int64_t b_words = P.b_slivers ? 0 : round16(panel_sliver_words(uk, static_cast<int>(kp)) * (nc / uk.nr)),
                  a_words = P.a_packed ? 0 : round16(kp * mc);
    const int64_t tmp_floats = round16(static_cast<int64_t>(kb) * std::max(uk.mr, uk.nr));
    const size_t floats = static_cast<size_t>(b_words + a_words + nt * tmp_floats);
    if (t_scratch.size() < floats) t_scratch = AlignedBuffer(floats);
    float* base = t_scratch.data();
    static_assert(sizeof(uint32_t) == sizeof(float));
    const Workspace ws{reinterpret_cast<uint32_t*>(base), reinterpret_cast<uint32_t*>(base + b_words),
                       base + b_words + a_words, tmp_floats};
    if (nt == 1) {
        run_thread(uk, P, ws, kb, 0, 1);
        return;
    }
#pragma omp parallel num_threads(nt)
    run_thread(uk, P, ws, kb, omp_get_thread_num(), omp_get_num_threads());
}

}  // namespace

void gemm_bf16_with(const Bf16MicroKernel& uk, Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a,
                    int lda, const float* b, int ldb, float beta, float* c, int ldc, int threads) {
    if (trivial(m, n, k, alpha, beta, c, ldc)) return;
    run(uk, Problem{m, n, k, alpha, Operand{a, lda, ta == Trans::Yes}, Operand{b, ldb, tb == Trans::No}, beta, c, ldc,
                    nullptr, nullptr},
        threads);
}

size_t bf16_packed_a_words(const Bf16MicroKernel& uk, int m, int k) {
    return static_cast<size_t>(ceil_div(m, uk.mr)) * uk.mr * static_cast<size_t>((k + 1) / 2 * 2) / 2;
}

void pack_bf16_a(const Bf16MicroKernel& uk, Trans ta, int m, int k, const float* a, int lda, uint32_t* out) {
    const Operand op{a, lda, ta == Trans::Yes};
    const int kb = k_block(uk, k);
    const int64_t m_round = static_cast<int64_t>(ceil_div(m, uk.mr)) * uk.mr;
    AlignedBuffer tmp(static_cast<size_t>(kb) * uk.mr);
    for (int pc = 0; pc < k; pc += kb) {
        const int kc = std::min(kb, k - pc), kp = (kc + 1) / 2;
        uint32_t* slice = out + m_round * (pc / 2);
        for (int q = 0; q < ceil_div(m, uk.mr); ++q) {
            const int i = q * uk.mr;
            pack_sliver(uk, op, i, std::min(uk.mr, m - i), uk.mr, pc, kc, tmp.data(),
                        slice + static_cast<int64_t>(q) * uk.mr * kp);
        }
    }
}

void gemm_bf16_prepacked_a(const Bf16MicroKernel& uk, int m, int n, int k, float alpha, const uint32_t* packed_a,
                           Trans tb, const float* b, int ldb, float beta, float* c, int ldc, int threads) {
    if (trivial(m, n, k, alpha, beta, c, ldc)) return;
    run(uk,
        Problem{m, n, k, alpha, Operand{nullptr, 0, false}, Operand{b, ldb, tb == Trans::No}, beta, c, ldc, packed_a,
                nullptr},
        threads);
}

void gemm_bf16_b_slivers(const Bf16MicroKernel& uk, Trans ta, int m, int n, int k, float alpha, const float* a,
                         int lda, const uint32_t* b_slivers, float beta, float* c, int ldc, int threads) {
    if (trivial(m, n, k, alpha, beta, c, ldc)) return;
    run(uk,
        Problem{m, n, k, alpha, Operand{a, lda, ta == Trans::Yes}, Operand{nullptr, 0, true}, beta, c, ldc, nullptr,
                b_slivers},
        threads);
}

void gemm_bf16_prepacked(const Bf16MicroKernel& uk, int m, int n, int k, float alpha, const uint32_t* packed_a,
                         const uint32_t* b_slivers, float beta, float* c, int ldc, int threads) {
    if (trivial(m, n, k, alpha, beta, c, ldc)) return;
    run(uk,
        Problem{m, n, k, alpha, Operand{nullptr, 0, false}, Operand{nullptr, 0, true}, beta, c, ldc, packed_a,
                b_slivers},
        threads);
}

void gemm_bf16(Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
               float beta, float* c, int ldc, int threads) {
    gemm_bf16_with(selected_bf16_micro_kernel(), ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads);
}

}  // namespace rudra::kernels
