// The rows implementation of pooling (avx512_rows, avx2_rows), written once over vector traits V
// (kernels/simd/): kLanes outputs of a row per step, for any row width, column strides 1 and 2
// (every published net's pooling). Each tap's inputs are loaded contiguously (stride 2: 2 *
// kLanes values, even lanes kept) under a mask of the lanes whose tap lies inside the image, so
// clipped windows at the borders take the same path as whole ones; comparisons and selects run
// under the same masks.
//
// No include guard: pool_rows.cpp includes it once per level, inside that level's target region
// and a namespace of its own, with V naming the level's traits.

constexpr int kMaxVectorKernelW = 16;  // wider windows take the portable path

// Tap kw of one step of outputs starting at output column px: the input column of each lane,
// the lanes inside the image, and the masks of the contiguous load(s) that fetch them. They
// depend on the column only, so each row of the window reuses them.
template <int SW>
struct Tap {
    int first;  // input column of lane 0
    typename V::I cols;
    typename V::M lanes, m_lo, m_hi;
};

// n: the outputs of this step (1 .. kLanes).
template <int SW>
RUDRA_SIMD Tap<SW> make_tap(const PoolGeometry& g, int px, int n, int kw) {
    Tap<SW> t;
    t.first = SW * px + kw - g.pad_w;
    t.cols = V::addi(V::set1i(t.first), V::muli(V::iota(), V::set1i(SW)));
    t.lanes = V::both(V::first(n), V::in_range(t.cols, 0, g.width));
    t.m_lo = t.lanes;
    t.m_hi = V::none();
    if constexpr (SW == 2) {
        // Values first .. first + 2 kLanes - 1, inside the image and below the last lane's column.
        const typename V::I lo = V::addi(V::set1i(t.first), V::iota());
        const int end = std::min(t.first + SW * (n - 1) + 1, g.width);  // one past the last lane's column
        t.m_lo = V::in_range(lo, 0, end);
        t.m_hi = V::in_range(V::addi(lo, V::set1i(V::kLanes)), 0, end);
    }
    return t;
}

// The tap's values in one input row (zero outside the image).
template <int SW>
RUDRA_SIMD typename V::F load_tap(const Tap<SW>& t, const float* row) {
    if constexpr (SW == 1) {
        return V::load(t.m_lo, row + t.first);
    } else {
        return V::evens(V::load(t.m_lo, row + t.first), V::load(t.m_hi, row + t.first + V::kLanes));
    }
}

// Whether every tap of the step at output column px (n outputs) lies inside the row: then its
// loads need only the step's masks of n lanes, and the first tap starts every lane's maximum.
template <int SW>
bool interior_step(const PoolGeometry& g, int px, int n) {
    const int first = SW * px - g.pad_w;
    return first >= 0 && first + g.kernel_w - 1 + SW * (n - 1) < g.width;
}

// Whether an interior step may load whole vectors (load_step's Full): kLanes outputs, and every
// tap's SW kLanes values from its first inside the row.
template <int SW>
bool full_step(const PoolGeometry& g, int px, int n) {
    return n == V::kLanes && SW * px - g.pad_w + g.kernel_w - 1 + SW * V::kLanes <= g.width;
}

// One tap's inputs of the step's n outputs, from p on. A full step (full_step) loads whole
// vectors; else
// SW (n - 1) + 1 values under the step's masks lo and hi (the second kLanes values), so no load
// reaches past the last lane's input.
template <int SW, bool Full>
RUDRA_SIMD typename V::F load_step(const float* p, typename V::M lo, typename V::M hi) {
    if constexpr (SW == 1) {
        return Full ? V::load(p) : V::load(lo, p);
    } else if constexpr (Full) {
        return V::evens(V::load(p), V::load(p + V::kLanes));
    } else {
        return V::evens(V::load(lo, p), V::load(hi, p + V::kLanes));
    }
}

// The step of max_row where interior_step holds. The general step's masks, a dozen per window
// row, spilled out of AVX-512's eight mask registers and ran AlexNet's pool1 (rows of 55) at a
// third of pool2's bandwidth.
template <int SW, bool Full>
RUDRA_SIMD void max_interior_step(const float* xp, const PoolGeometry& g, pool::Window rows, int px, int n,
                                  float* best, int32_t* arg) {
    const int first = SW * px - g.pad_w;
    const int values = SW * (n - 1) + 1;  // of each tap's load
    const typename V::M lo = V::first(values), hi = V::first(values - V::kLanes);
    const typename V::I cols = V::addi(V::set1i(first), V::muli(V::iota(), V::set1i(SW)));
    const float* row = xp + static_cast<long>(rows.h0) * g.width + first;
    typename V::F b = load_step<SW, Full>(row, lo, hi);
    typename V::I a = V::addi(cols, V::set1i(rows.h0 * g.width));
    for (int h = rows.h0; h < rows.h1; ++h, row += g.width) {
        const typename V::I row_cols = V::addi(cols, V::set1i(h * g.width));
        for (int kw = h == rows.h0 ? 1 : 0; kw < g.kernel_w; ++kw) {
            const typename V::F v = load_step<SW, Full>(row + kw, lo, hi);
            const typename V::M take = V::greater(v, b);
            b = V::select(take, b, v);
            a = V::select(take, a, V::addi(row_cols, V::set1i(kw)));
        }
    }
    const typename V::M out = V::first(n);
    V::store(best + px, out, b);
    V::store(arg + px, out, a);
}

// Output row py, all columns. The first tap inside the image starts each maximum, then strictly
// greater values replace it: the first maximum in scan order wins, as in Caffe. A window wholly
// in the padding gives 0 with index -1, as the portable path does.
template <int SW>
void max_row(const float* xp, const PoolGeometry& g, int py, int pw, float* best, int32_t* arg) {
    const pool::Window rows = pool::window(g, py, 0);  // its rows [h0, h1) are those of the whole output row
    Tap<SW> taps[kMaxVectorKernelW];
    for (int px = 0; px < pw; px += V::kLanes) {
        const int n = std::min(V::kLanes, pw - px);
        if (rows.h0 < rows.h1 && interior_step<SW>(g, px, n)) {
            if (full_step<SW>(g, px, n))
                max_interior_step<SW, true>(xp, g, rows, px, n, best, arg);
            else
                max_interior_step<SW, false>(xp, g, rows, px, n, best, arg);
            continue;
        }
        for (int kw = 0; kw < g.kernel_w; ++kw) taps[kw] = make_tap<SW>(g, px, n, kw);
        typename V::F b = V::zero();
        typename V::I a = V::set1i(-1);
        typename V::M seen = V::none();
        for (int h = rows.h0; h < rows.h1; ++h) {
            const float* row = xp + static_cast<long>(h) * g.width;
            const typename V::I row_start = V::set1i(h * g.width);
            for (int kw = 0; kw < g.kernel_w; ++kw) {
                const Tap<SW>& t = taps[kw];
                const typename V::F v = load_tap<SW>(t, row);
                const typename V::M take = V::either(V::both(t.lanes, V::greater(v, b)), V::only_b(seen, t.lanes));
                seen = V::either(seen, t.lanes);
                b = V::select(take, b, v);
                a = V::select(take, a, V::addi(row_start, t.cols));
            }
        }
        const typename V::M m = V::first(n);
        V::store(best + px, m, b);
        V::store(arg + px, m, a);
    }
}

// Window extents clipped to the padded image, the divisor of Caffe's average pooling, per lane.
RUDRA_SIMD typename V::F avg_divisors(const PoolGeometry& g, int py, int px, int sw) {
    const int h0 = py * g.stride_h - g.pad_h;
    const int dh = std::min(h0 + g.kernel_h, g.height + g.pad_h) - h0;
    const typename V::I w0 = V::addi(V::set1i(px * sw - g.pad_w), V::muli(V::iota(), V::set1i(sw)));
    const typename V::I w1 = V::mini(V::addi(w0, V::set1i(g.kernel_w)), V::set1i(g.width + g.pad_w));
    return V::to_float(V::muli(V::subi(w1, w0), V::set1i(dh)));
}

template <int SW>
void avg_row(const float* xp, const PoolGeometry& g, int py, int pw, float* out) {
    const pool::Window rows = pool::window(g, py, 0);
    Tap<SW> taps[kMaxVectorKernelW];
    for (int px = 0; px < pw; px += V::kLanes) {
        const int n = std::min(V::kLanes, pw - px);
        typename V::F sum = V::zero();
        for (int kw = 0; kw < g.kernel_w; ++kw) taps[kw] = make_tap<SW>(g, px, n, kw);
        for (int h = rows.h0; h < rows.h1; ++h)
            for (int kw = 0; kw < g.kernel_w; ++kw)
                sum = V::add(sum, load_tap<SW>(taps[kw], xp + static_cast<long>(h) * g.width));
        V::store(out + px, V::first(n), V::div(sum, avg_divisors(g, py, px, SW)));
    }
}

// One plane, every output row; the plane loops (and their OpenMP) are in pool_rows.cpp, outside
// the target region.
void max_plane(const float* xp, const PoolGeometry& g, float* yp, int32_t* ap) {
    const int ph = g.pooled_h(), pw = g.pooled_w();
    for (int py = 0; py < ph; ++py) {
        const long o = static_cast<long>(py) * pw;
        if (g.stride_w == 2)
            max_row<2>(xp, g, py, pw, yp + o, ap + o);
        else
            max_row<1>(xp, g, py, pw, yp + o, ap + o);
    }
}

void avg_plane(const float* xp, const PoolGeometry& g, float* yp, int32_t*) {
    const int ph = g.pooled_h(), pw = g.pooled_w();
    for (int py = 0; py < ph; ++py) {
        float* out = yp + static_cast<long>(py) * pw;
        if (g.stride_w == 2)
            avg_row<2>(xp, g, py, pw, out);
        else
            avg_row<1>(xp, g, py, pw, out);
    }
}
