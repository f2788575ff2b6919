// The loops around the micro-kernel, written once for every ISA (BLIS's five loops):
//   jc: nc-wide panels of B and C          pc: kc-deep slices of k (B panel packed here)
//   ic: mc-tall blocks of A (packed here)  jr, ir: nr x mr register tiles (micro-kernel)
// Threads share the packed buffers: they pack them together, meet at a barrier, then split the
// register tiles of the block between them. B may instead be read in place or come pre-packed,
// and A may come pre-packed (BSource, Problem::a_packed).
#include "kernels/sgemm/sgemm.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "kernels/aligned_buffer.h"
#include "kernels/transpose.h"

namespace rudra::kernels {
namespace {

// Where the micro-kernel reads B from: slivers packed per (jc, pc) block, the matrix itself, or
// slivers the caller packed over all of k (sgemm_packed_b_slivers).
enum class BSource { Pack, InPlace, Slivers };

struct Problem {
    Trans ta, tb;
    int m, n, k;
    float alpha;
    const float* a;
    int lda;
    const float* b;
    int ldb;
    float beta;
    float* c;
    int ldc;
    BSource b_source;
    bool a_packed;  // A already packed whole by pack_a_matrix (a points at it)
};

// Packed per block, unless A fits one block and op(B) = B (then every sliver is read by one
// ic block only, and packing it would only add a copy) and B's rows are close enough for the
// kernel to read in place (MicroKernel::in_place_max_ldb).
// Nor when the rows lie 16 KiB or more apart, a multiple of 4 KiB, and a k-block holds many of
// them: they fall in the same cache sets and evict each other before the next tile reads them
// (AVX-512, Zen 5: m128 k4096 with n 4096 and 9216, fc7's and fc6's backward data, ran at 53-55%
// of the peak in place and 61-64% packed; n 3025 and 5000 at 68-69% in place, 63-64% packed;
// n 1024 and 2048, rows 4 and 8 KiB apart, 71-82% in place, 66-78% packed).
BSource b_source_for(const MicroKernel& uk, Trans tb, int m, int k, int64_t ldb) {
    const bool near = uk.in_place_max_ldb == 0 || ldb <= uk.in_place_max_ldb;
    const bool aliased = ldb >= 4096 && ldb % 1024 == 0 && k > 256;
    return tb == Trans::No && m <= uk.mc && near && !aliased ? BSource::InPlace : BSource::Pack;
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// copy_lanes for a full panel of W lanes, W known to the compiler.
template <int W>
void copy_full_lanes(const float* src, int64_t ld, int kc, float* d) {
    for (int p = 0; p < kc; ++p, src += ld, d += W)
        for (int l = 0; l < W; ++l) d[l] = src[l];
}

// kc steps of a packed panel whose lanes lie contiguous in the source: d[p * width + l] =
// src[p * ld + l] for l < count, zero for the lanes past it.
void copy_lanes(const float* src, int64_t ld, int count, int width, int kc, float* d) {
    // Full panels of the micro-kernels' widths with the width known to the compiler, which then
    // moves each step in a few vector copies (a 6-wide loop went float by float: m800 n64 k64,
    // A transposed, spent a fifth of its time packing on AVX2).
    if (count == width) switch (width) {
            case 6: return copy_full_lanes<6>(src, ld, kc, d);
            case 8: return copy_full_lanes<8>(src, ld, kc, d);
            case 12: return copy_full_lanes<12>(src, ld, kc, d);
            case 16: return copy_full_lanes<16>(src, ld, kc, d);
            case 32: return copy_full_lanes<32>(src, ld, kc, d);
            default: break;
        }
    for (int p = 0; p < kc; ++p, src += ld, d += width) {
        for (int l = 0; l < count; ++l) d[l] = src[l];
        for (int l = count; l < width; ++l) d[l] = 0.0f;
    }
}

// The same for lanes that lie in `count` source rows of kc values each: the panel is their
// transpose (16 x 16 register tiles where the CPU has them), op(A) for A and op(B) for B^T.
void transpose_lanes(const float* src, int64_t ld, int count, int width, int kc, float* d) {
    transpose(src, count, kc, ld, d, width);
    if (count < width)
        for (int p = 0; p < kc; ++p) std::fill(d + p * width + count, d + (p + 1) * width, 0.0f);
}

// Packs rows [i0, i0 + mc) x columns [p0, p0 + kc) of op(A), panels [q0, q1) of mr rows each:
// panel q holds, for each p, its mr values contiguous. Rows past m are zero.
void pack_a(const Problem& P, int mr, int i0, int mc, int p0, int kc, int q0, int q1, float* dst) {
    for (int q = q0; q < q1; ++q) {
        float* d = dst + static_cast<int64_t>(q) * mr * kc;
        const int row0 = i0 + q * mr, rows = std::min(mr, i0 + mc - row0);
        if (P.ta == Trans::No) {
            transpose_lanes(P.a + static_cast<int64_t>(row0) * P.lda + p0, P.lda, rows, mr, kc, d);
        } else {
            copy_lanes(P.a + static_cast<int64_t>(p0) * P.lda + row0, P.lda, rows, mr, kc, d);
        }
    }
}

// Packs rows [p0, p0 + kc) x columns [j0, j0 + nc) of op(B), slivers [q0, q1) of nr columns:
// sliver q holds, for each p, its nr values contiguous. Columns past n are zero.
void pack_b(const Problem& P, int nr, int j0, int nc, int p0, int kc, int q0, int q1, float* dst) {
    for (int q = q0; q < q1; ++q) {
        float* d = dst + static_cast<int64_t>(q) * nr * kc;
        const int col0 = j0 + q * nr, cols = std::min(nr, j0 + nc - col0);
        if (P.tb == Trans::No) {
            copy_lanes(P.b + static_cast<int64_t>(p0) * P.ldb + col0, P.ldb, cols, nr, kc, d);
        } else {
            transpose_lanes(P.b + static_cast<int64_t>(col0) * P.ldb + p0, P.ldb, cols, nr, kc, d);
        }
    }
}

// [begin, end) of `count` items for thread `tid` of `nt`.
void split(int count, int tid, int nt, int& begin, int& end) {
    begin = static_cast<int>(static_cast<int64_t>(count) * tid / nt);
    end = static_cast<int>(static_cast<int64_t>(count) * (tid + 1) / nt);
}

struct Workspace {
    float* b_panel;  // kc x nc, packed B slivers (unused when B is read in place; private_b: one per thread)
    float* a_block;  // mc x kc, packed A panels (split by rows: one per thread, a_stride apart)
    float* b_edge;   // per thread: one kc x nr sliver for the last, partial columns read in place
    int64_t edge_stride, a_stride, b_stride;
    bool by_rows;    // how the threads split the work: see run_thread
    bool private_b;  // by rows, B small: each thread packs all of B for itself
};

// Threads share the work of each block (ic, pc) of A: they pack its panels together and split
// its tiles; or, split by rows (ws.by_rows), each thread takes whole rows of C, packs the A
// panels of its rows itself and meets the others only to pack B. By rows, a small product does
// not wait on the other threads for half of every A block and on two barriers per block, which
// on a product as small as a convolution's per image left it no faster than one thread.
void run_thread(const Problem& P, const MicroKernel& uk, const Workspace& ws, int tid, int nt) {
    const int MR = uk.mr, NR = uk.nr, kb = k_block(uk, P.k);
    auto barrier = [nt] {
        if (nt > 1) {
#pragma omp barrier
        }
    };
    float* edge = ws.b_edge + tid * ws.edge_stride;
    alignas(64) float tile[16 * 64];  // edge tiles of C: mr x nr (at most 16 x 64)
    const int64_t m_round = static_cast<int64_t>(ceil_div(P.m, MR)) * MR;
    for (int jc = 0; jc < P.n; jc += uk.nc) {
        const int nc = std::min(uk.nc, P.n - jc), n_jr = ceil_div(nc, NR);
        for (int pc = 0; pc < P.k; pc += kb) {
            const int kc = std::min(kb, P.k - pc);
            const float beta = pc == 0 ? P.beta : 1.0f;
            int edge_jr = -1;  // which sliver `edge` holds for this pc
            float* b_panel = ws.private_b ? ws.b_panel + tid * ws.b_stride : ws.b_panel;
            // C's tile (jr, ir) of the block of A at `a_block`, whose first row is ic.
            auto compute = [&](int jr, int ir, int ic, const float* a_block) {
                const int j = jc + jr * NR, i = ic + ir * MR;
                const int nr_v = std::min(NR, P.n - j), mr_v = std::min(MR, P.m - i);
                const float* bs;
                int64_t rs_b = NR;
                if (P.b_source == BSource::Slivers) {
                    bs = P.b + static_cast<int64_t>(j / NR) * P.k * NR + static_cast<int64_t>(pc) * NR;
                } else if (P.b_source == BSource::Pack) {
                    bs = b_panel + static_cast<int64_t>(jr) * NR * kc;
                } else if (nr_v == NR) {
                    bs = P.b + static_cast<int64_t>(pc) * P.ldb + j;
                    rs_b = P.ldb;
                } else {
                    if (edge_jr != jr) pack_b(P, NR, j, nr_v, pc, kc, 0, 1, edge);
                    edge_jr = jr;
                    bs = edge;
                }
                const float* as = a_block + static_cast<int64_t>(ir) * MR * kc;
                float* cij = P.c + static_cast<int64_t>(i) * P.ldc + j;
                if (mr_v == MR && nr_v == NR) {
                    uk.run(kc, as, bs, rs_b, cij, P.ldc, P.alpha, beta);
                    return;
                }
                if (uk.edge) {
                    uk.edge(mr_v, nr_v, kc, as, bs, rs_b, cij, P.ldc, P.alpha, beta);
                    return;
                }
                uk.run(kc, as, bs, rs_b, tile, NR, 1.0f, 0.0f);
                for (int r = 0; r < mr_v; ++r) {
                    float* cr = cij + static_cast<int64_t>(r) * P.ldc;
                    const float* tr = tile + r * NR;
                    for (int s = 0; s < nr_v; ++s) cr[s] = P.alpha * tr[s] + (beta == 0.0f ? 0.0f : beta * cr[s]);
                }
            };
            if (ws.by_rows) {
                int q0, q1;
                if (P.b_source == BSource::Pack && ws.private_b) {
                    pack_b(P, NR, jc, nc, pc, kc, 0, n_jr, b_panel);
                } else if (P.b_source == BSource::Pack) {
                    split(n_jr, tid, nt, q0, q1);
                    pack_b(P, NR, jc, nc, pc, kc, q0, q1, ws.b_panel);
                    barrier();
                }
                split(ceil_div(P.m, MR), tid, nt, q0, q1);
                const int rows_end = std::min(P.m, q1 * MR);
                float* own_a = ws.a_block + tid * ws.a_stride;
                for (int ic = q0 * MR; ic < rows_end; ic += uk.mc) {
                    const int mc = std::min(uk.mc, rows_end - ic), n_ir = ceil_div(mc, MR);
                    const float* a_block = P.a + m_round * pc + static_cast<int64_t>(ic) * kc;
                    if (!P.a_packed) {
                        pack_a(P, MR, ic, mc, pc, kc, 0, n_ir, own_a);
                        a_block = own_a;
                    }
                    for (int jr = 0; jr < n_jr; ++jr)
                        for (int ir = 0; ir < n_ir; ++ir) compute(jr, ir, ic, a_block);
                }
                if (P.b_source == BSource::Pack && !ws.private_b) barrier();  // before B's next block is packed
                continue;
            }
            for (int ic = 0; ic < P.m; ic += uk.mc) {
                const int mc = std::min(uk.mc, P.m - ic), n_ir = ceil_div(mc, MR);
                int q0, q1;
                const bool pack_b_now = P.b_source == BSource::Pack && ic == 0;
                if (pack_b_now) {
                    split(n_jr, tid, nt, q0, q1);
                    pack_b(P, NR, jc, nc, pc, kc, q0, q1, ws.b_panel);
                }
                const float* a_block = ws.a_block;
                if (P.a_packed) {
                    // Block (pc, ic) of a whole packed A: pc-slices of m_round x kc, panels in order.
                    a_block = P.a + m_round * pc + static_cast<int64_t>(ic) * kc;
                } else {
                    split(n_ir, tid, nt, q0, q1);
                    pack_a(P, MR, ic, mc, pc, kc, q0, q1, ws.a_block);
                }
                if (pack_b_now || !P.a_packed) barrier();  // what was packed is complete
                int t0, t1;
                split(n_jr * n_ir, tid, nt, t0, t1);
                for (int t = t0; t < t1; ++t) compute(t / n_ir, t % n_ir, ic, a_block);
                barrier();
            }
        }
    }
}

void scale_c(float* c, int m, int n, int ldc, float beta) {
    for (int i = 0; i < m; ++i) {
        float* row = c + static_cast<int64_t>(i) * ldc;
        for (int j = 0; j < n; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
    }
}

// Scratch memory of the calling thread, grown on demand and kept: a layer's GEMMs allocate on
// their first call only. Each OpenMP thread that issues its own GEMMs has its own.
thread_local AlignedBuffer t_scratch;

float* scratch(std::size_t floats) {
    if (t_scratch.size() < floats) t_scratch = AlignedBuffer(floats);
    return t_scratch.data();
}

void run(const MicroKernel& uk, const Problem& P, int threads) {
    int nt = threads > 0 ? threads : omp_get_max_threads();
    if (omp_in_parallel()) nt = 1;
    // About 2 MFLOP per thread or more, else the fork and barriers cost more than they save.
    const double flops = 2.0 * P.m * P.n * static_cast<double>(P.k);
    nt = std::max(1, std::min<int>(nt, static_cast<int>(flops / 2e6)));

    const int kc = k_block(uk, P.k);
    const int64_t nc = static_cast<int64_t>(ceil_div(std::min(uk.nc, P.n), uk.nr)) * uk.nr;
    const int64_t mc = static_cast<int64_t>(ceil_div(std::min(uk.mc, P.m), uk.mr)) * uk.mr;
    const int64_t b_floats = P.b_source == BSource::Pack ? kc * nc : 0, a_floats = P.a_packed ? 0 : mc * kc;
    const int64_t edge_floats = static_cast<int64_t>(kc) * uk.nr;
    // By rows (see run_thread) when every thread gets two row panels or more and C is at least
    // as tall as wide: each thread then reads all of B, so a wide C is better split by columns
    // (m32 n1024 k75 on 2 threads: 132 GFLOP/s by columns, 80 by rows, on AVX2).
    const bool by_rows = nt > 1 && ceil_div(P.m, uk.mr) >= 2 * nt && P.m >= P.n;
    // A packed B of at most 256 KiB, split by rows: each thread packs all of it for itself, and
    // the threads never meet. Shared, half of it came from the other core after a barrier, twice
    // per k-block: m75 n32 k1024 with B transposed ran at 99 GFLOP/s on 2 AVX2 threads, against
    // 167 with B read in place.
    const bool private_b = by_rows && b_floats > 0 && b_floats <= 65536;
    const int a_blocks = by_rows ? nt : 1, b_panels = private_b ? nt : 1;
    // Each part starts on a 64-byte boundary (16 floats).
    auto round16 = [](int64_t v) { return (v + 15) / 16 * 16; };
    float* base = scratch(static_cast<std::size_t>(b_panels * round16(b_floats) + a_blocks * round16(a_floats) +
                                                   nt * round16(edge_floats)));
    float* a_base = base + b_panels * round16(b_floats);
    const Workspace ws{base, a_base, a_base + a_blocks * round16(a_floats), round16(edge_floats), round16(a_floats),
                       round16(b_floats), by_rows, private_b};
    if (nt == 1) {
        run_thread(P, uk, ws, 0, 1);
        return;
    }
#pragma omp parallel num_threads(nt)
    run_thread(P, uk, ws, omp_get_thread_num(), omp_get_num_threads());
}

bool trivial(int m, int n, int k, float alpha, float beta, float* c, int ldc) {
    if (m <= 0 || n <= 0) return true;
    if (k <= 0 || alpha == 0.0f) {
        if (beta != 1.0f) scale_c(c, m, n, ldc, beta);
        return true;
    }
    return false;
}

}  // namespace

namespace {

// The share of the register tiles' work that lands in C when tiles of mr x nr cover m x n.
double tile_fill(const MicroKernel& uk, int m, int n) {
    return static_cast<double>(m) * n / (static_cast<double>(ceil_div(m, uk.mr)) * uk.mr * ceil_div(n, uk.nr) * uk.nr);
}

// Whether C^T = op(B)^T op(A)^T, computed into a scratch and transposed into C, does clearly less
// work: small C whose rows do not fill the tiles, e.g. a convolution's weight gradient
// (m32 n75: 69% of 12 x 32 tiles filled, against 89% for m75 n32). The transposed copy costs
// m n against m n k multiply-adds.
bool compute_transposed(const MicroKernel& uk, int m, int n, int k) {
    constexpr long kMaxScratchFloats = 1L << 16;
    return static_cast<long>(m) * n <= kMaxScratchFloats && k >= 64 &&
           tile_fill(uk, n, m) > 1.15 * tile_fill(uk, m, n);
}

Trans flip(Trans t) { return t == Trans::No ? Trans::Yes : Trans::No; }

thread_local AlignedBuffer t_transposed_c;

}  // namespace

void sgemm_packed(const MicroKernel& uk, Trans ta, Trans tb, int m, int n, int k, float alpha, const float* a,
                  int lda, const float* b, int ldb, float beta, float* c, int ldc, int threads) {
    if (trivial(m, n, k, alpha, beta, c, ldc)) return;
    if (!compute_transposed(uk, m, n, k)) {
        run(uk, Problem{ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, b_source_for(uk, tb, m, k, ldb), false},
            threads);
        return;
    }
    // op(B)^T is B read with the other transpose flag, and likewise op(A)^T.
    if (t_transposed_c.size() < static_cast<size_t>(m) * n) t_transposed_c = AlignedBuffer(static_cast<size_t>(m) * n);
    float* t = t_transposed_c.data();  // n x m
    run(uk, Problem{flip(tb), flip(ta), n, m, k, alpha, b, ldb, a, lda, 0.0f, t, m, b_source_for(uk, flip(ta), n, k, lda), false},
        threads);
    for (int i = 0; i < m; ++i) {
        float* row = c + static_cast<int64_t>(i) * ldc;
        for (int j = 0; j < n; ++j)
            row[j] = t[static_cast<int64_t>(j) * m + i] + (beta == 0.0f ? 0.0f : beta * row[j]);
    }
}

int k_block(const MicroKernel& uk, int k) { return k <= uk.kc + uk.kc / 4 ? std::max(k, 1) : uk.kc; }

size_t packed_a_floats(const MicroKernel& uk, int m, int k) {
    return static_cast<size_t>(ceil_div(m, uk.mr)) * uk.mr * static_cast<size_t>(k);
}

void pack_a_matrix(const MicroKernel& uk, Trans ta, int m, int k, const float* a, int lda, float* out) {
    const Problem P{ta, Trans::No, m, 0, k, 1.0f, a, lda, nullptr, 0, 0.0f, nullptr, 0, BSource::Pack, false};
    const int64_t m_round = static_cast<int64_t>(ceil_div(m, uk.mr)) * uk.mr;
    const int kb = k_block(uk, k);
    for (int pc = 0; pc < k; pc += kb) {
        const int kc = std::min(kb, k - pc);
        pack_a(P, uk.mr, 0, m, pc, kc, 0, ceil_div(m, uk.mr), out + m_round * pc);
    }
}

void sgemm_prepacked_a(const MicroKernel& uk, int m, int n, int k, float alpha, const float* packed_a, Trans tb,
                       const float* b, int ldb, float beta, float* c, int ldc, int threads) {
    if (trivial(m, n, k, alpha, beta, c, ldc)) return;
    run(uk, Problem{Trans::No, tb, m, n, k, alpha, packed_a, 0, b, ldb, beta, c, ldc, b_source_for(uk, tb, m, k, ldb), true},
        threads);
}

void sgemm_packed_b_slivers(const MicroKernel& uk, Trans ta, int m, int n, int k, float alpha, const float* a,
                            int lda, const float* b, float beta, float* c, int ldc, int threads) {
    if (trivial(m, n, k, alpha, beta, c, ldc)) return;
    run(uk, Problem{ta, Trans::No, m, n, k, alpha, a, lda, b, 0, beta, c, ldc, BSource::Slivers, false}, threads);
}

}  // namespace rudra::kernels
