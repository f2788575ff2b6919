// The register transpose of kernels/transpose.cpp over the vector traits V, included once per
// level inside the level's target region (kernels/simd/target_region.h): kLanes x kLanes tiles
// transposed in registers (V::transpose). A partial tile (fewer rows or columns) loads its rows
// under a column mask, zeros the others, and stores its `cols` destination rows under a mask of
// `rows` lanes: the packing of the SGEMM's panels of 6 or 12 rows is such a tile.
template <bool kPartial>
void tile(const float* src, int64_t ld_src, float* dst, int64_t ld_dst, int rows = V::kLanes, int cols = V::kLanes) {
    constexpr int L = V::kLanes;
    typename V::F r[L];
    const typename V::M col_mask = V::first(cols), row_mask = V::first(rows);
#pragma GCC unroll 16
    for (int i = 0; i < L; ++i) {
        if constexpr (kPartial)
            r[i] = i >= rows       ? V::zero()
                   : cols == L     ? V::load(src + i * ld_src)
                                   : V::load(col_mask, src + i * ld_src);
        else
            r[i] = V::load(src + i * ld_src);
    }
    V::transpose(r);
#pragma GCC unroll 16
    for (int j = 0; j < L; ++j) {
        if constexpr (kPartial) {
            if (j < cols) V::store(dst + j * ld_dst, row_mask, r[j]);
        } else {
            V::store(dst + j * ld_dst, r[j]);
        }
    }
}

void transpose_tiles(const float* src, int rows, int cols, int64_t ld_src, float* dst, int64_t ld_dst) {
    constexpr int L = V::kLanes;
    for (int r = 0; r < rows; r += L)
        for (int c = 0; c < cols; c += L) {
            const float* s = src + r * ld_src + c;
            float* d = dst + c * ld_dst + r;
            if (r + L <= rows && c + L <= cols)
                tile<false>(s, ld_src, d, ld_dst);
            else
                tile<true>(s, ld_src, d, ld_dst, std::min(L, rows - r), std::min(L, cols - c));
        }
}
