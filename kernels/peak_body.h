// The FMA loop of kernels/peak.cpp over the vector traits V, included once per level inside the
// level's target region (kernels/simd/target_region.h), where kChains is defined.
double fma_loop(int64_t reps, float* sink) {
    typename V::F acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = V::set1(0.001f * i);
    const typename V::F x = V::set1(0.999999f), y = V::set1(1e-7f);
    for (int64_t r = 0; r < reps; ++r)
#pragma GCC unroll 12
        for (int i = 0; i < kChains; ++i) acc[i] = V::fma(acc[i], x, y);
    typename V::F s = acc[0];
    for (int i = 1; i < kChains; ++i) s = V::add(s, acc[i]);
    float out[V::kLanes];
    V::store(out, s);
    *sink = out[0] + out[V::kLanes - 1];
    return 2.0 * V::kLanes * kChains * static_cast<double>(reps);
}
