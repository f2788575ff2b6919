// Convolution as im2col + GEMM (Caffe's method) on the own SGEMM or on BLIS. With at least as
// many images as threads the images are spread over the threads, each with its own column
// buffer and weight-gradient accumulator, and every GEMM is single-threaded: small images make
// small GEMMs, and this keeps every core busy at any mini-batch above one. With fewer images
// the GEMMs themselves are threaded. A 1x1 stride-1 convolution reads the image as its column
// matrix and skips im2col. On the own SGEMM, each pass takes the first algorithm of its
// implementation list that takes the layer: the tiles of kernels/conv_implicit.h, which build no
// column matrix, before im2col or col2im.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "kernels/aligned_buffer.h"
#include "kernels/bf16/bgemm.h"
#include "kernels/conv.h"
#include "kernels/conv_implicit.h"
#include "kernels/gemm.h"
#include "kernels/impl_list.h"
#include "kernels/sgemm/sgemm.h"

namespace rudra::kernels {
namespace {

// A pass's algorithms: without a column matrix, tiled over output pixels (implicit GEMM,
// kernels/conv_implicit.h) or over output channels (the gather tile), and through the column
// matrix (im2col, or col2im, and the GEMM), which takes every layer.
enum class ConvAlgo { Implicit, Gather, Columns };

// What the algorithms of a pass decide on.
struct PassProblem {
    const ConvProblem& p;
    bool own_packed;  // on the own SGEMM, one group
    const MicroKernel& uk;
};

// One entry of a pass's implementation list: its name, and why it declines a pass ("" when it
// takes it; nullptr: it takes every pass).
struct ConvAlgorithm {
    const char* name;
    ConvAlgo algo;
    std::string (*declines)(const PassProblem&);
};

// The first algorithm of `list` that takes the pass; `choice` says why the earlier ones did not.
template <size_t N>
ConvAlgo choose_algorithm(const ConvAlgorithm (&list)[N], const PassProblem& pp, ImplChoice& choice) {
    const auto why_not = [&](const ConvAlgorithm& a) { return a.declines ? a.declines(pp) : std::string(); };
    return first_taker(list, why_not, choice).algo;
}

std::string not_own_packed(const ConvProblem& p) {
    return p.groups > 1 ? std::to_string(p.groups) + " groups" : "not on the own SGEMM";
}

// The gather tiles compute whole slivers of nr output channels. Below this share of useful
// channels im2col + SGEMM was faster: AlexNet conv2's backward-data, 48 channels a group in
// slivers of 32 on AVX-512, ran at 0.69-0.73x oneDNN's speed gathered, 0.84x through col2im.
std::string sliver_fill_declines(int channels, const MicroKernel& uk) {
    const int rounded = (channels + uk.nr - 1) / uk.nr * uk.nr;
    if (channels >= 0.85 * rounded) return "";
    return std::to_string(channels) + " channels fill under 85% of slivers of " + std::to_string(uk.nr);
}

// Backward-data as a forward convolution of dy (stride 1, no dilation, pad <= kernel - 1): its
// geometry, or nothing with `why`.
std::optional<ConvGeometry> transposed_geometry(const ConvProblem& p, std::string& why) {
    const ConvGeometry& g = p.geom;
    why.clear();
    if ((g.stride_h != 1 || g.stride_w != 1 || g.dilation_h != 1 || g.dilation_w != 1))
        why = "strided or dilated";
    if (why.empty() && (std::max(g.pad_h, g.pad_b()) > g.kernel_h - 1 || std::max(g.pad_w, g.pad_r()) > g.kernel_w - 1))
        why = "padding not below the kernel";
    if (!why.empty()) return std::nullopt;
    ConvGeometry gb = g;
    gb.channels = p.out_channels;
    gb.height = g.out_h();
    gb.width = g.out_w();
    gb.pad_h = g.kernel_h - 1 - g.pad_h;
    gb.pad_w = g.kernel_w - 1 - g.pad_w;
    gb.pad_bottom = g.kernel_h - 1 - g.pad_b();
    gb.pad_right = g.kernel_w - 1 - g.pad_r();
    if (gb.out_h() != g.height || gb.out_w() != g.width) {
        why = "not the transpose of a stride-1 convolution";
        return std::nullopt;
    }
    return gb;
}
// The same for the own SGEMM's implicit and gather tiles, which need its packed weights.
std::optional<ConvGeometry> backward_data_geometry(const PassProblem& pp, std::string& why) {
    if (!pp.own_packed) {
        why = not_own_packed(pp.p);
        return std::nullopt;
    }
    return transposed_geometry(pp.p, why);
}

std::string implicit_forward_declines(const PassProblem& pp) {
    return pp.own_packed ? ImplicitConvForward::declines(pp.uk, pp.p.geom) : not_own_packed(pp.p);
}
// Not for a 1x1 stride-1 layer, which is a plain GEMM on the image.
std::string gather_forward_declines(const PassProblem& pp) {
    if (!pp.own_packed) return not_own_packed(pp.p);
    if (std::string why = GatherConvForward::declines(pp.uk, pp.p.geom); !why.empty()) return why;
    if (pp.p.geom.is_pointwise()) return "1x1: the image is its own column matrix";
    return sliver_fill_declines(pp.p.out_channels, pp.uk);
}
std::string implicit_backward_data_declines(const PassProblem& pp) {
    std::string why;
    const std::optional<ConvGeometry> gb = backward_data_geometry(pp, why);
    return gb ? ImplicitConvForward::declines(pp.uk, *gb) : why;
}
std::string gather_backward_data_declines(const PassProblem& pp) {
    std::string why;
    const std::optional<ConvGeometry> gb = backward_data_geometry(pp, why);
    if (!gb) return why;
    if (std::string w = GatherConvForward::declines(pp.uk, *gb); !w.empty()) return w;
    if (gb->is_pointwise()) return "1x1: the image is its own column matrix";
    return sliver_fill_declines(pp.p.geom.channels, pp.uk);
}
std::string implicit_backward_weights_declines(const PassProblem& pp) {
    if (!pp.own_packed) return not_own_packed(pp.p);
    if (pp.p.geom.is_pointwise()) return "1x1: the image is its own column matrix";
    return ImplicitConvWeights::declines(pp.uk, pp.p.geom);
}

// Each pass's implementation list, in order of preference.
constexpr ConvAlgorithm kForwardAlgorithms[] = {{"implicit", ConvAlgo::Implicit, implicit_forward_declines},
                                                {"gather", ConvAlgo::Gather, gather_forward_declines},
                                                {"im2col", ConvAlgo::Columns, nullptr}};
constexpr ConvAlgorithm kBackwardDataAlgorithms[] = {
    {"implicit", ConvAlgo::Implicit, implicit_backward_data_declines},
    {"gather", ConvAlgo::Gather, gather_backward_data_declines},
    {"col2im", ConvAlgo::Columns, nullptr}};
constexpr ConvAlgorithm kBackwardWeightsAlgorithms[] = {
    {"implicit", ConvAlgo::Implicit, implicit_backward_weights_declines}, {"im2col", ConvAlgo::Columns, nullptr}};

// The pass that backward-data computes: the forward convolution of dy (algorithm Implicit or
// Gather was chosen, so the geometry exists).
ConvGeometry backward_data_as_forward(const PassProblem& pp) {
    std::string why;
    return *backward_data_geometry(pp, why);
}

class GemmConv final : public ConvKernel {
public:
    // in_stride, out_stride: see in_stride() (0: the image's size).
    GemmConv(const ConvProblem& p, GemmBackend backend, int threads, const IsaGate& gate, long in_stride = 0,
             long out_stride = 0)
        : p_(p), g_(p.geom), in_stride_(in_stride), out_stride_(out_stride), backend_(backend), own_packed_(backend == GemmBackend::Own && p.groups == 1),
          uk_(micro_kernel_for(gate).kernel), transpose_(choose_transpose(gate, &transpose_choice_)),
          algo_{choose_algorithm(kForwardAlgorithms, {p, own_packed_, uk_}, choice_[0]),
                choose_algorithm(kBackwardDataAlgorithms, {p, own_packed_, uk_}, choice_[1]),
                choose_algorithm(kBackwardWeightsAlgorithms, {p, own_packed_, uk_}, choice_[2])},
          nr_(own_packed_ ? uk_.nr : 1), threads_(std::max(1, threads)), team_(std::min(threads_, p.num)),
          implicit_(algo_[0] == ConvAlgo::Implicit ? std::optional<ImplicitConvForward>(
                                                         std::in_place, uk_, p.geom, p.out_channels, p.num, std::max(1, team_))
                                                   : std::nullopt),
          gather_(algo_[0] == ConvAlgo::Gather
                      ? std::optional<GatherConvForward>(std::in_place, uk_, p.geom, p.out_channels, transpose_)
                      : std::nullopt),
          implicit_bwd_(algo_[1] == ConvAlgo::Implicit
                            ? std::optional<ImplicitConvForward>(std::in_place, uk_,
                                                                 backward_data_as_forward({p, own_packed_, uk_}),
                                                                 p.geom.channels, p.num, std::max(1, team_))
                            : std::nullopt),
          gather_bwd_(algo_[1] == ConvAlgo::Gather
                          ? std::optional<GatherConvForward>(std::in_place, uk_,
                                                             backward_data_as_forward({p, own_packed_, uk_}),
                                                             p.geom.channels, transpose_)
                          : std::nullopt),
          implicit_w_(algo_[2] == ConvAlgo::Implicit
                          ? std::optional<ImplicitConvWeights>(std::in_place, uk_, p.geom, p.out_channels, transpose_)
                          : std::nullopt),
          bf16_dy_geom_(backend == GemmBackend::OwnBf16 && !p.geom.is_pointwise() ? bf16_transposed(p) : std::nullopt),
          col_floats_(std::max((implicit_ || gather_) && (implicit_bwd_ || gather_bwd_) && implicit_w_
                                   ? 0
                                   : column_floats(g_, own_packed_ || backend == GemmBackend::OwnBf16,
                                                   backend == GemmBackend::OwnBf16
                                                       ? runnable_bf16_micro_kernels(gate).front()->nr
                                                       : nr_),
                               bf16_dy_geom_ ? rotated_slivers_floats(*bf16_dy_geom_, p.groups,
                                                                      runnable_bf16_micro_kernels(gate).front()->nr)
                                             : 0)),
          grad_floats_(round16(std::max(static_cast<size_t>(p.out_channels) * k_g(),
                                        implicit_w_ ? implicit_w_->acc_floats() : 0) +
                               p.out_channels)),
          work_floats_(round16(std::max(im2col_scratch_floats(g_, own_packed_                        ? nr_
                                                      : backend_ == GemmBackend::OwnBf16 ? 2 * kBf16SliverWidthMax
                                                                                      : 0),
                                        std::max({implicit_ ? implicit_->scratch_floats() : 0,
                                                  gather_ ? gather_->scratch_floats() : 0,
                                                  implicit_bwd_ ? implicit_bwd_->scratch_floats() : 0,
                                                  gather_bwd_ ? gather_bwd_->scratch_floats() : 0,
                                                  implicit_w_ ? implicit_w_->scratch_floats() : 0,
                                                  bf16_dy_geom_ ? im2col_scratch_floats(*bf16_dy_geom_, 0) : 0})))),
          scratch_(std::max(1, team_) * (col_floats_ + grad_floats_ + work_floats_)),
          packed_w_(implicit_  ? implicit_->packed_floats()
                    : gather_  ? gather_->packed_floats()
                    : own_packed_ ? packed_a_floats(uk_, m_g(), k_g())
                                  : 0),
          packed_wt_(own_packed_ && !implicit_bwd_ && !gather_bwd_ ? packed_a_floats(uk_, k_g(), m_g()) : 0),
          packed_rotated_w_(implicit_bwd_   ? implicit_bwd_->packed_floats()
                            : gather_bwd_ ? gather_bwd_->packed_floats()
                                          : 0),
          buk_(*runnable_bf16_micro_kernels(gate).front()),
          bf16_w_words_(backend == GemmBackend::OwnBf16 ? bf16_packed_a_words(buk_, m_g(), k_g()) : 0),
          bf16_wt_words_(backend == GemmBackend::OwnBf16 ? bf16_packed_a_words(buk_, k_g(), m_g()) : 0),
          bf16_w_(p.groups * (bf16_w_words_ + bf16_wt_words_)),
          bf16_rotated_words_(bf16_dy_geom_ ? bf16_packed_a_words(buk_, k_g() / taps(), m_g() * taps()) : 0),
          bf16_rotated_(bf16_dy_geom_ ? p.groups * bf16_rotated_words_ + static_cast<size_t>(m_g()) * k_g() : 0) {}

    void forward(const float* x, const float* w, const float* bias, float* y) override {
        // The own SGEMM packs the weights once for all images.
        const MicroKernel& uk = uk_;
        if (implicit_) {
            implicit_->pack_weights(w, packed_w_.data(), threads_);
            const int group = implicit_->images_per_call();
            for_image_groups(group, [&](int n0, int t, int gemm_threads) {
                implicit_->run(packed_w_.data(), x + n0 * in_stride(), in_stride(), y + n0 * out_stride(), out_stride(),
                               work_buffer(t), gemm_threads);
                if (bias)
                    for (int n = n0; n < n0 + group; ++n) add_bias(bias, y + n * out_stride());
            });
            return;
        }
        if (gather_) {
            gather_->pack_weights(w, packed_w_.data(), threads_);
            for_images([&](int n, int t, int gemm_threads) {
                gather_->run(packed_w_.data(), x + n * in_stride(), y + n * out_stride(), work_buffer(t), gemm_threads);
                if (bias) add_bias(bias, y + n * out_stride());
            });
            return;
        }
        if (own_packed_) pack_a_matrix(uk, Trans::No, m_g(), k_g(), w, k_g(), packed_w_.data());
        if (bf16())  // the weights rounded and packed once for all images
            for (int g = 0; g < p_.groups; ++g)
                pack_bf16_a(buk_, Trans::No, m_g(), k_g(), w + g * m_g() * k_g(), k_g(), bf16_w(g));
        if (bf16() && !g_.is_pointwise()) {
            // Each group's im2col rows straight into the BF16 GEMM's B slivers.
            for_images([&](int n, int t, int gemm_threads) {
                float* yn = y + n * out_stride();
                uint32_t* slivers_of_thread = reinterpret_cast<uint32_t*>(col_buffer(t));
                for (int g = 0; g < p_.groups; ++g) {
                    im2col_bf16_slivers(x + n * in_stride(), g_, g * k_g(), (g + 1) * k_g(), buk_.nr, buk_.pair_runs,
                                        slivers_of_thread, work_buffer(t));
                    gemm_bf16_prepacked(buk_, m_g(), pixels(), k_g(), 1.0f, bf16_w(g), slivers_of_thread, 0.0f,
                                        yn + g * m_g() * pixels(), pixels(), gemm_threads);
                }
                if (bias) add_bias(bias, yn);
            });
            return;
        }
        for_images([&](int n, int t, int gemm_threads) {
            float* yn = y + n * out_stride();
            const float* col = column(x + n * in_stride(), t);
            if (bf16())
                for (int g = 0; g < p_.groups; ++g)
                    gemm_bf16_prepacked_a(buk_, m_g(), pixels(), k_g(), 1.0f, bf16_w(g), Trans::No,
                                          col + g * k_g() * pixels(), pixels(), 0.0f, yn + g * m_g() * pixels(),
                                          pixels(), gemm_threads);
            else if (own_packed_)
                sgemm_prepacked_a(uk, m_g(), pixels(), k_g(), 1.0f, packed_w_.data(), Trans::No, col, pixels(), 0.0f,
                                  yn, pixels(), gemm_threads);
            else
                for (int g = 0; g < p_.groups; ++g)
                    sgemm(Trans::No, Trans::No, m_g(), pixels(), k_g(), 1.0f, w + g * m_g() * k_g(), k_g(),
                          col + g * k_g() * pixels(), pixels(), 0.0f, yn + g * m_g() * pixels(), pixels(),
                          gemm_threads, backend_);
            if (bias) add_bias(bias, yn);
        });
    }

    void backward_data(const float* dy, const float* w, float* dx) override {
        const MicroKernel& uk = uk_;
        if (gather_bwd_) {
            // The same convolution on the gather tiles, with the weights rotated as they are packed.
            gather_bwd_->pack_rotated_weights(w, packed_rotated_w_.data(), threads_);
            for_images([&](int n, int t, int gemm_threads) {
                gather_bwd_->run(packed_rotated_w_.data(), dy + n * out_stride(), dx + n * in_stride(),
                                 work_buffer(t), gemm_threads);
            });
            return;
        }
        if (implicit_bwd_) {
            // dx is the stride-1 convolution of dy, padded by kernel - 1 - pad, with the weights
            // rotated by 180 degrees and input and output channels swapped (packed so directly).
            implicit_bwd_->pack_rotated_weights(w, packed_rotated_w_.data(), threads_);
            for_image_groups(implicit_bwd_->images_per_call(), [&](int n0, int t, int gemm_threads) {
                implicit_bwd_->run(packed_rotated_w_.data(), dy + n0 * out_stride(), out_stride(), dx + n0 * in_stride(),
                                   in_stride(), work_buffer(t), gemm_threads);
            });
            return;
        }
        if (bf16_dy_geom_) {
            backward_data_bf16_rotated(dy, w, dx);
            return;
        }
        if (own_packed_) pack_a_matrix(uk, Trans::Yes, k_g(), m_g(), w, k_g(), packed_wt_.data());
        if (bf16())
            for (int g = 0; g < p_.groups; ++g)
                pack_bf16_a(buk_, Trans::Yes, k_g(), m_g(), w + g * m_g() * k_g(), k_g(), bf16_wt(g));
        for_images([&](int n, int t, int gemm_threads) {
            const float* dyn = dy + n * out_stride();
            float* dxn = dx + n * in_stride();
            float* dcol = g_.is_pointwise() ? dxn : col_buffer(t);
            if (bf16())
                for (int g = 0; g < p_.groups; ++g)
                    gemm_bf16_prepacked_a(buk_, k_g(), pixels(), m_g(), 1.0f, bf16_wt(g), Trans::No,
                                          dyn + g * m_g() * pixels(), pixels(), 0.0f, dcol + g * k_g() * pixels(),
                                          pixels(), gemm_threads);
            else if (own_packed_)
                sgemm_prepacked_a(uk, k_g(), pixels(), m_g(), 1.0f, packed_wt_.data(), Trans::No, dyn, pixels(), 0.0f,
                                  dcol, pixels(), gemm_threads);
            else
                for (int g = 0; g < p_.groups; ++g)
                    sgemm(Trans::Yes, Trans::No, k_g(), pixels(), m_g(), 1.0f, w + g * m_g() * k_g(), k_g(),
                          dyn + g * m_g() * pixels(), pixels(), 0.0f, dcol + g * k_g() * pixels(), pixels(),
                          gemm_threads, backend_);
            if (!g_.is_pointwise()) col2im(dcol, g_, dxn, work_buffer(t));
        });
    }

    // dx as the forward convolution of dy padded by kernel - 1 - pad with the weights rotated:
    // the forward's BF16 slivers straight from dy, and no FP32 column matrix or col2im.
    void backward_data_bf16_rotated(const float* dy, const float* w, float* dx) {
        const ConvGeometry& gb = *bf16_dy_geom_;
        const int c_g = k_g() / taps(), rows = m_g() * taps();
        float* rotated = reinterpret_cast<float*>(bf16_rotated_.data()) + p_.groups * bf16_rotated_words_;
        for (int g = 0; g < p_.groups; ++g) {
            // rotated[c][o taps + t] = w[o][c][taps - 1 - t], o and c within group g.
            for (int c = 0; c < c_g; ++c)
                for (int o = 0; o < m_g(); ++o) {
                    const float* wo = w + (static_cast<long>(g) * m_g() + o) * k_g() + static_cast<long>(c) * taps();
                    float* out = rotated + static_cast<long>(c) * rows + static_cast<long>(o) * taps();
                    for (int t = 0; t < taps(); ++t) out[t] = wo[taps() - 1 - t];
                }
            pack_bf16_a(buk_, Trans::No, c_g, rows, rotated, rows, bf16_rotated(g));
        }
        for_images([&](int n, int t, int gemm_threads) {
            const float* dyn = dy + n * out_stride();
            float* dxn = dx + n * in_stride();
            uint32_t* slivers = reinterpret_cast<uint32_t*>(col_buffer(t));
            for (int g = 0; g < p_.groups; ++g) {
                im2col_bf16_slivers(dyn, gb, g * rows, (g + 1) * rows, buk_.nr, buk_.pair_runs, slivers,
                                    work_buffer(t));
                gemm_bf16_prepacked(buk_, c_g, gb.col_cols(), rows, 1.0f, bf16_rotated(g), slivers, 0.0f,
                                    dxn + static_cast<long>(g) * c_g * gb.col_cols(), gb.col_cols(), gemm_threads);
            }
        });
    }

    void backward_weights(const float* x, const float* dy, float* dw, float* db) override {
        if (implicit_w_) {
            // Every thread accumulates dW^T and the bias gradient in its own buffer, cleared by
            // that thread before its first image.
            const int team = std::max(1, team_);
            const size_t wt = implicit_w_->acc_floats();
            std::vector<char> cleared(static_cast<size_t>(team), 0);
            std::vector<const float*> accs;
            for_images([&](int n, int t, int gemm_threads) {
                if (!cleared[static_cast<size_t>(t)]) {
                    std::memset(grad_buffer(t), 0, sizeof(float) * grad_floats_);
                    cleared[static_cast<size_t>(t)] = 1;
                }
                const float* dyn = dy + n * out_stride();
                implicit_w_->accumulate(x + n * in_stride(), dyn, grad_buffer(t), work_buffer(t), gemm_threads);
                if (db) add_bias_gradient(dyn, grad_buffer(t) + wt);
            });
            for (int t = 0; t < team; ++t) {
                if (!cleared[static_cast<size_t>(t)]) continue;  // a thread that had no image
                accs.push_back(grad_buffer(t));
                if (db)
                    for (int c = 0; c < p_.out_channels; ++c) db[c] += grad_buffer(t)[wt + c];
            }
            implicit_w_->add_to(accs.data(), static_cast<int>(accs.size()), dw, threads_);
            return;
        }
        const int wcount = p_.out_channels * k_g();
        const bool bf16_slivers = bf16() && !g_.is_pointwise() && buk_.nr <= kBf16SliverWidthMax;
        // One thread accumulates straight into dw; a team each into its own buffer, then reduces.
        const bool direct = team_ <= 1;
        if (!direct)
            for (int t = 0; t < team_; ++t) std::memset(grad_buffer(t), 0, sizeof(float) * grad_floats_);
        for_images([&](int n, int t, int gemm_threads) {
            float* acc_w = direct ? dw : grad_buffer(t);
            float* acc_b = direct ? db : grad_buffer(t) + wcount;
            const float* dyn = dy + n * out_stride();
            if (bf16_slivers) {
                // Each group's col^T straight into the BF16 GEMM's B slivers.
                uint32_t* slivers = reinterpret_cast<uint32_t*>(col_buffer(t));
                for (int g = 0; g < p_.groups; ++g) {
                    im2col_bf16_row_slivers(x + n * in_stride(), g_, g * k_g(), (g + 1) * k_g(), buk_.nr,
                                            buk_.round_runs, slivers, work_buffer(t), transpose_);
                    gemm_bf16_b_slivers(buk_, Trans::No, m_g(), k_g(), pixels(), 1.0f, dyn + g * m_g() * pixels(),
                                        pixels(), slivers, 1.0f, acc_w + g * m_g() * k_g(), k_g(), gemm_threads);
                }
            } else if (own_packed_) {
                // col^T straight into the SGEMM's packed-B layout: no separate packing pass.
                im2col_slivers(x + n * in_stride(), g_, nr_, col_buffer(t), work_buffer(t), transpose_);
                sgemm_packed_b_slivers(uk_, Trans::No, m_g(), k_g(), pixels(), 1.0f, dyn,
                                       pixels(), col_buffer(t), 1.0f, acc_w, k_g(), gemm_threads);
            } else {
                const float* col = column(x + n * in_stride(), t);
                for (int g = 0; g < p_.groups; ++g)
                sgemm(Trans::No, Trans::Yes, m_g(), k_g(), pixels(), 1.0f, dyn + g * m_g() * pixels(), pixels(),
                          col + g * k_g() * pixels(), pixels(), 1.0f, acc_w + g * m_g() * k_g(), k_g(), gemm_threads,
                          backend_);
            }
            if (acc_b) add_bias_gradient(dyn, acc_b);
        });
        if (direct) return;
        for (int t = 0; t < team_; ++t) {
            const float* acc = grad_buffer(t);
            for (int i = 0; i < wcount; ++i) dw[i] += acc[i];
            if (db)
                for (int c = 0; c < p_.out_channels; ++c) db[c] += acc[wcount + c];
        }
    }

    // e.g. "fwd implicit_avx512, bwd_data implicit_avx512, bwd_weights implicit_avx512 (transpose
    // avx512_16x16)", or "fwd im2col+sgemm_reference (not implicit: micro-kernel reference has
    // no indirect tile), ...".
    std::string describe() const override {
        const bool own = backend_ == GemmBackend::Own;
        const std::string gemm = own ? std::string("sgemm_") + uk_.name : gemm_backend_name(backend_);
        auto pass = [&](const char* name, int i, const char* around) {
            std::string s = std::string(name) + " ";
            if (algo_[i] == ConvAlgo::Implicit) s += std::string("implicit_") + uk_.name;
            else if (algo_[i] == ConvAlgo::Gather) s += std::string("gather_") + uk_.name;
            else if (i == 1 && bf16_dy_geom_) s += "rotated_im2col+" + gemm;
            else s += (g_.is_pointwise() && (i != 2 || !own_packed_) ? "" : around) + gemm;
            return own && choice_[i].why != "first choice" ? s + " (" + choice_[i].why + ")" : s;
        };
        std::string s = pass("fwd", 0, "im2col+") + ", " + pass("bwd_data", 1, "col2im+") + ", " +
                        pass("bwd_weights", 2, "im2col+");
        if (own_packed_) s += " (transpose " + transpose_choice_.name + ")";
        return s;
    }

private:
    // f(first image, thread, gemm_threads) for groups of `group` consecutive images (group
    // divides the mini-batch), spread over the threads (see the file comment).
    template <class F>
    void for_image_groups(int group, F&& f) {
        const int groups = p_.num / group, team = std::min(team_, groups);
        if (team <= 1) {
            for (int gi = 0; gi < groups; ++gi) f(gi * group, 0, threads_);
            return;
        }
#pragma omp parallel for num_threads(team) schedule(static)
        for (int gi = 0; gi < groups; ++gi) f(gi * group, omp_get_thread_num(), 1);
    }
    void add_bias(const float* bias, float* yn) const {
        for (int c = 0; c < p_.out_channels; ++c) {
            const float b = bias[c];
            float* row = yn + static_cast<long>(c) * pixels();
            for (int i = 0; i < pixels(); ++i) row[i] += b;
        }
    }
    // f(image, thread, gemm_threads) for every image.
    template <class F>
    void for_images(F&& f) {
        for_image_groups(1, std::forward<F>(f));
    }

    // Sums each channel's dy over the image in 16 independent partial sums: one running sum is
    // a chain of dependent additions that the compiler may not reorder, and it had cost as much
    // as a fifth of conv1's backward pass.
    void add_bias_gradient(const float* dyn, float* acc_b) const {
        constexpr int kLanes = 16;
        const int n = pixels(), whole = n / kLanes * kLanes;
        for (int c = 0; c < p_.out_channels; ++c) {
            const float* row = dyn + static_cast<long>(c) * n;
            float part[kLanes] = {};
            for (int i = 0; i < whole; i += kLanes)
                for (int j = 0; j < kLanes; ++j) part[j] += row[i + j];
            float s = 0.0f;
            for (int j = 0; j < kLanes; ++j) s += part[j];
            for (int i = whole; i < n; ++i) s += row[i];
            acc_b[c] += s;
        }
    }
    static size_t round16(size_t n) { return (n + 15) / 16 * 16; }  // keeps 64-byte alignment
    // A column buffer holds the im2col matrix, or its transpose in nr-wide slivers (rows rounded
    // up to nr) for backward-weights on the own SGEMM.
    // One group's BF16 slivers of dy's im2col (the rotated backward-data), in floats.
    static size_t rotated_slivers_floats(const ConvGeometry& gb, int groups, int nr) {
        const size_t lanes = (static_cast<size_t>(gb.col_cols()) + nr - 1) / nr * nr;
        return round16((static_cast<size_t>(gb.col_rows() / groups) + 1) / 2 * lanes);
    }
    static size_t column_floats(const ConvGeometry& g, bool slivers, int nr) {
        const size_t K = static_cast<size_t>(g.col_rows()), P = static_cast<size_t>(g.col_cols());
        size_t n = g.is_pointwise() ? 0 : K * P;
        if (slivers) n = std::max(n, (K + nr - 1) / nr * nr * P);
        return round16(n);
    }
    float* col_buffer(int t) { return scratch_.data() + t * col_floats_; }
    float* grad_buffer(int t) { return scratch_.data() + team_ * col_floats_ + t * grad_floats_; }
    float* work_buffer(int t) { return scratch_.data() + team_ * (col_floats_ + grad_floats_) + t * work_floats_; }
    const float* column(const float* image, int t) {
        if (g_.is_pointwise()) return image;
        im2col(image, g_, col_buffer(t), work_buffer(t));
        return col_buffer(t);
    }
    bool bf16() const { return backend_ == GemmBackend::OwnBf16; }
    uint32_t* bf16_w(int g) { return reinterpret_cast<uint32_t*>(bf16_w_.data()) + g * bf16_w_words_; }
    uint32_t* bf16_wt(int g) {
        return reinterpret_cast<uint32_t*>(bf16_w_.data()) + p_.groups * bf16_w_words_ + g * bf16_wt_words_;
    }
    int m_g() const { return p_.out_channels / p_.groups; }
    int taps() const { return g_.kernel_h * g_.kernel_w; }
    // Not where the rotated product has under 16 rows (input channels per group) or the image is
    // under 12 wide (runs of under 12 values): on 2 Zen 5 cores at mini-batch 128, cifar10_full's
    // conv1 (3 channels) ran 4.0 ms through col2im, 5.6 rotated, its conv3 (8 x 8) 1.8 and 2.7;
    // AlexNet's conv2-conv5 ran 1.2-1.3x faster rotated.
    static std::optional<ConvGeometry> bf16_transposed(const ConvProblem& p) {
        std::string why;
        if (p.geom.channels / p.groups < 16 || p.geom.width < 12) return std::nullopt;
        return transposed_geometry(p, why);
    }
    uint32_t* bf16_rotated(int g) { return reinterpret_cast<uint32_t*>(bf16_rotated_.data()) + g * bf16_rotated_words_; }
    int k_g() const { return g_.col_rows() / p_.groups; }
    int pixels() const { return g_.col_cols(); }
    // From one image to the next in x and y: the image's size, or the whole image's when this
    // kernel is one group of a grouped convolution (GroupedConv).
    long in_stride() const { return in_stride_ ? in_stride_ : static_cast<long>(g_.channels) * g_.height * g_.width; }
    long out_stride() const { return out_stride_ ? out_stride_ : static_cast<long>(p_.out_channels) * pixels(); }

    ConvProblem p_;
    ConvGeometry g_;
    long in_stride_, out_stride_;
    GemmBackend backend_;
    bool own_packed_;  // own SGEMM, one group: packed weights, backward-weights through im2col_slivers
    MicroKernel uk_;   // the own SGEMM's micro-kernel, chosen from the gate when the kernel is made
    ImplChoice transpose_choice_;
    TransposeFn transpose_;
    ImplChoice choice_[3];  // forward, backward-data, backward-weights: the algorithm and why
    ConvAlgo algo_[3];
    int nr_;
    int threads_, team_;
    std::optional<ImplicitConvForward> implicit_;      // forward without im2col, where the layer allows
    std::optional<GatherConvForward> gather_;          // forward without im2col where implicit_ declines
    std::optional<ImplicitConvForward> implicit_bwd_;  // backward-data without col2im, likewise
    std::optional<GatherConvForward> gather_bwd_;      // the same where implicit_bwd_ declines
    std::optional<ImplicitConvWeights> implicit_w_;    // backward-weights without im2col, likewise
    // On own_bf16 where backward-data is a stride-1 convolution of dy (kernels of stride 1, no
    // dilation): dy's geometry (its rotated weights are bf16_rotated_, below).
    std::optional<ConvGeometry> bf16_dy_geom_;
    size_t col_floats_, grad_floats_, work_floats_;  // per thread: im2col, dW accumulator, im2col's scratch
    AlignedBuffer scratch_;
    // The weights packed as A of forward and of backward-data (transposed, or rotated for the
    // implicit backward-data).
    AlignedBuffer packed_w_, packed_wt_, packed_rotated_w_;
    // On own_bf16: the BF16 micro-kernel, and each group's weights rounded and packed as A of
    // forward and of backward-data (pair words, in a float buffer of the same size).
    Bf16MicroKernel buk_;
    size_t bf16_w_words_, bf16_wt_words_;
    AlignedBuffer bf16_w_;
    // Where bf16_dy_geom_ is set: each group's weights rotated by 180 degrees with input and
    // output channels swapped, packed as A (then an FP32 copy of one group's, for the packing).
    size_t bf16_rotated_words_;
    AlignedBuffer bf16_rotated_;
};

// A grouped convolution on the own SGEMM as `groups` convolutions of one group's channels each,
// all on one GemmConv made for a group: a group is a slice of each image's channels, reached
// with the whole image's stride, so it takes the implicit tiles and the packed weights like any
// ungrouped layer (AlexNet's conv2, conv4 and conv5 have 2 groups).
class GroupedConv final : public ConvKernel {
public:
    GroupedConv(const ConvProblem& p, int threads, const IsaGate& gate)
        : groups_(p.groups), one_(one_group(p), GemmBackend::Own, threads, gate,
                                  static_cast<long>(p.geom.channels) * p.geom.height * p.geom.width,
                                  static_cast<long>(p.out_channels) * p.geom.col_cols()) {
        const ConvProblem g = one_group(p);
        x_ = static_cast<long>(g.geom.channels) * g.geom.height * g.geom.width;
        y_ = static_cast<long>(g.out_channels) * g.geom.col_cols();
        w_ = static_cast<long>(g.out_channels) * g.geom.col_rows();
        b_ = g.out_channels;
    }
    void forward(const float* x, const float* w, const float* bias, float* y) override {
        for (int g = 0; g < groups_; ++g) one_.forward(x + g * x_, w + g * w_, bias ? bias + g * b_ : nullptr, y + g * y_);
    }
    void backward_data(const float* dy, const float* w, float* dx) override {
        for (int g = 0; g < groups_; ++g) one_.backward_data(dy + g * y_, w + g * w_, dx + g * x_);
    }
    void backward_weights(const float* x, const float* dy, float* dw, float* db) override {
        for (int g = 0; g < groups_; ++g)
            one_.backward_weights(x + g * x_, dy + g * y_, dw + g * w_, db ? db + g * b_ : nullptr);
    }
    void backward(const float* x, const float* dy, const float* w, float* dx, float* dw, float* db) override {
        for (int g = 0; g < groups_; ++g)
            one_.backward(x + g * x_, dy + g * y_, w + g * w_, dx ? dx + g * x_ : nullptr, dw + g * w_,
                          db ? db + g * b_ : nullptr);
    }
    std::string describe() const override { return "each of " + std::to_string(groups_) + " groups: " + one_.describe(); }

private:
    static ConvProblem one_group(ConvProblem p) {
        p.geom.channels /= p.groups;
        p.out_channels /= p.groups;
        p.groups = 1;
        return p;
    }
    int groups_;
    GemmConv one_;
    long x_ = 0, y_ = 0, w_ = 0, b_ = 0;  // one group's offset in an image of x, of y, in w and in the bias
};

class ReferenceConv final : public ConvKernel {
public:
    explicit ReferenceConv(const ConvProblem& p) : p_(p) {}
    void forward(const float* x, const float* w, const float* bias, float* y) override {
        conv_forward_reference(p_, x, w, bias, y);
    }
    void backward_data(const float* dy, const float* w, float* dx) override {
        conv_backward_data_reference(p_, dy, w, dx);
    }
    void backward_weights(const float* x, const float* dy, float* dw, float* db) override {
        conv_backward_weights_reference(p_, x, dy, dw, db);
    }
    std::string describe() const override { return "direct loops"; }

private:
    ConvProblem p_;
};

}  // namespace

std::unique_ptr<ConvKernel> make_gemm_conv(const ConvProblem& p, GemmBackend backend, int threads,
                                           const IsaGate& gate) {
    if (p.groups > 1 && backend == GemmBackend::Own) return std::make_unique<GroupedConv>(p, threads, gate);
    return std::make_unique<GemmConv>(p, backend, threads, gate);
}

std::unique_ptr<ConvKernel> make_reference_conv(const ConvProblem& p) { return std::make_unique<ReferenceConv>(p); }

}  // namespace rudra::kernels
