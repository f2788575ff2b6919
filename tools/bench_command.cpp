// `rudra bench`: kernel throughput, side by side. Every problem runs on every backend in the
// same process, interleaved repetition by repetition so that a noisy neighbour slows them all
// alike; the best time of each is reported with GFLOP/s and the percentage of the peak that an
// FMA loop measures here at the same thread count.
#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <stdexcept>

#include "kernels/aligned_buffer.h"

#include "base/clock.h"
#include "kernels/conv.h"
#include "kernels/bf16/bgemm.h"
#include "kernels/bf16/onednn_matmul.h"
#include "kernels/gemm.h"
#include "kernels/peak.h"
#include "kernels/sgemm/sgemm.h"
#include "tools/bench_layers.h"
#include "tools/bench_problems.h"
#include "tools/commands.h"

namespace rudra::tools {
namespace {

using Clock = std::chrono::steady_clock;
using kernels::Trans;

void fill_random(kernels::AlignedBuffer& b, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (size_t i = 0; i < b.size(); ++i) b.data()[i] = u(rng);
}

// OpenBLAS, when installed, is opened at run time with its own symbol scope: it exports the
// same cblas_* names as BLIS, so it cannot be linked next to it.
class OpenBlas {
public:
    OpenBlas() {
        for (const char* lib : {"libopenblas.so.0", "libopenblasp.so.0", "libopenblaso.so.0"}) {
            handle_ = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
            if (handle_) break;
        }
        if (!handle_) return;
        sgemm_ = reinterpret_cast<SgemmFn>(dlsym(handle_, "cblas_sgemm"));
        set_threads_ = reinterpret_cast<void (*)(int)>(dlsym(handle_, "openblas_set_num_threads"));
        if (!sgemm_) {
            dlclose(handle_);
            handle_ = nullptr;
        }
    }
    ~OpenBlas() {
        if (handle_) dlclose(handle_);
    }
    bool available() const { return handle_ != nullptr; }
    void sgemm(const GemmShape& s, const float* a, int lda, const float* b, int ldb, float* c, int ldc, int threads) {
        if (set_threads_) set_threads_(threads);
        constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
        sgemm_(kRowMajor, s.ta == Trans::Yes ? kTrans : kNoTrans, s.tb == Trans::Yes ? kTrans : kNoTrans, s.m, s.n,
               s.k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
    }

private:
    using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                             float*, int);
    void* handle_ = nullptr;
    SgemmFn sgemm_ = nullptr;
    void (*set_threads_)(int) = nullptr;
};

// One timed thing: a backend's pass over a problem at a thread count.
struct Candidate {
    std::string backend, pass;
    std::function<void()> run;
    double best = 1e30;
    std::string impl;  // what runs, where the backend says (kernels/isa.h's choices)
};

// Interleaves the candidates round by round: at least 3 rounds and `min_time` seconds each.
void time_candidates(std::vector<Candidate>& cs, double min_time) {
    for (Candidate& c : cs) c.run();  // warm-up: first-touch, packing buffers, JIT
    double spent = 0.0;
    for (int round = 0; round < 3 || spent < min_time * static_cast<double>(cs.size()); ++round) {
        for (Candidate& c : cs) {
            const auto t0 = Clock::now();
            c.run();
            const double s = seconds_since(t0);
            c.best = std::min(c.best, s);
            spent += s;
        }
        if (round > 1000) break;
    }
}

class Report {
public:
    Report(const std::string& format, const std::string& path) : format_(format), path_(path) {
        if (!path.empty()) {
            file_.open(path + ".tmp");
            if (!file_) throw std::runtime_error(path + ": cannot write");
        }
    }
    void add(const nlohmann::json& r) {
        if ((format_ == "table" || !path_.empty()) && r["gflops"].get<double>() > 0.0)
            std::printf("%-44s %-9s %-11s %2d thr  %9.3f ms  %7.1f GFLOP/s  %5.1f%% of peak\n",
                        r["problem"].get<std::string>().c_str(), r["backend"].get<std::string>().c_str(),
                        r["pass"].get<std::string>().c_str(), r["threads"].get<int>(), r["ms"].get<double>(),
                        r["gflops"].get<double>(), r["pct_peak"].get<double>());
        else if (format_ == "table" || !path_.empty())  // pooling and LRN: bytes, not arithmetic
            std::printf("%-44s %-9s %-11s %2d thr  %9.3f ms  %7.1f GB/s (x and y once)\n",
                        r["problem"].get<std::string>().c_str(), r["backend"].get<std::string>().c_str(),
                        r["pass"].get<std::string>().c_str(), r["threads"].get<int>(), r["ms"].get<double>(),
                        r["gbs"].get<double>());
        std::ostream& out = path_.empty() ? std::cout : file_;
        if (format_ == "jsonl") out << r.dump() << "\n";
        if (format_ == "csv") {
            if (rows_++ == 0) out << "problem,name,backend,pass,threads,mb,ms,gflops,pct_peak,gbs\n";
            out << r["problem"].get<std::string>() << ',' << r["name"].get<std::string>() << ','
                << r["backend"].get<std::string>() << ',' << r["pass"].get<std::string>() << ',' << r["threads"] << ','
                << r["mb"] << ',' << r["ms"] << ',' << r["gflops"] << ',' << r["pct_peak"] << ',' << r["gbs"] << "\n";
        }
        out.flush();
    }
    // A line for a reader of the table (which implementations run); not part of CSV or JSON lines.
    void note(const std::string& text) {
        if (format_ == "table" || !path_.empty()) std::printf("  %s\n", text.c_str());
    }
    // The file appears complete or not at all.
    void finish() {
        if (path_.empty()) return;
        file_.close();
        if (std::rename((path_ + ".tmp").c_str(), path_.c_str()) != 0) throw std::runtime_error(path_ + ": cannot rename");
    }

private:
    std::string format_, path_;
    std::ofstream file_;
    long rows_ = 0;
};

const char* kind_name(ProblemKind k) {
    switch (k) {
        case ProblemKind::Gemm: return "gemm";
        case ProblemKind::PoolMax: return "pool_max";
        case ProblemKind::PoolAve: return "pool_ave";
        case ProblemKind::LrnAcross: return "lrn_across";
        case ProblemKind::LrnWithin: return "lrn_within";
        case ProblemKind::InnerProduct: return "ip";
        default: return "conv";
    }
}

std::vector<Candidate> gemm_candidates(const GemmShape& s, const std::vector<std::string>& backends, int threads,
                                       kernels::AlignedBuffer& a, kernels::AlignedBuffer& b, kernels::AlignedBuffer& c,
                                       OpenBlas& openblas, std::vector<std::string>& notes) {
    const int lda = s.ta == Trans::No ? s.k : s.m, ldb = s.tb == Trans::No ? s.n : s.k, ldc = s.n;
    std::vector<Candidate> cs;
    for (const std::string& be : backends) {
        std::function<void()> run;
        std::string impl;
        if (be == "own") {
            run = [=, &a, &b, &c] {
                kernels::sgemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), ldc,
                               threads, kernels::GemmBackend::Own);
            };
        } else if (be == "blis") {
            run = [=, &a, &b, &c] {
                kernels::sgemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), ldc,
                               threads, kernels::GemmBackend::Blis);
            };
        } else if (be == "onednn") {
            if (kernels::gemm_backend_available(kernels::GemmBackend::Onednn))
                run = [=, &a, &b, &c] {
                    omp_set_num_threads(threads);  // dnnl_sgemm sizes its team from the OpenMP setting
                    kernels::sgemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(),
                                   ldc, threads, kernels::GemmBackend::Onednn);
                };
        } else if (be == "openblas") {
            if (openblas.available())
                run = [=, &a, &b, &c, &openblas] { openblas.sgemm(s, a.data(), lda, b.data(), ldb, c.data(), ldc, threads); };
        } else if (be == "own_bf16") {
            run = [=, &a, &b, &c] {
                kernels::gemm_bf16(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), ldc,
                                   threads);
            };
            impl = std::string("micro-kernel ") + kernels::bf16_micro_kernel_choice();
        } else if (be == "onednn_bf16") {
#ifdef RUDRA_HAVE_DNNL
            std::shared_ptr<kernels::OnednnBf16Gemm> g;
            try {
                g = std::make_shared<kernels::OnednnBf16Gemm>(s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb);
            } catch (const std::exception& e) {
                notes.push_back(be + ": not run: " + e.what());
            }
            if (g) {
                run = [=, &c] {
                    omp_set_num_threads(threads);
                    g->run(c.data(), ldc);
                };
                impl = g->implementation();
            }
#endif
        }
        if (be == "own") impl = std::string("micro-kernel ") + kernels::selected_micro_kernel().kernel.name;
        if (run) cs.push_back({be, "gemm", run, 1e30, impl});
    }
    return cs;
}

}  // namespace

int run_bench(const BenchOptions& o) {
    std::vector<BenchProblem> problems;
    for (const std::string& text : o.problems) problems.push_back(parse_problem(text));
    for (const std::string& file : o.batch_files)
        for (BenchProblem& p : read_batch_file(file)) problems.push_back(p);
    if (problems.empty()) throw std::runtime_error("no problems: give descriptors (e.g. mb128ic3ih32oc32oh32kh5ph2 or m2048n2048k2048) or --batch-file");
    if (!o.minibatches.empty()) {
        std::vector<BenchProblem> swept;
        for (const BenchProblem& p : problems) {
            if (p.is_gemm) {
                swept.push_back(p);
                continue;
            }
            for (int mb : o.minibatches) swept.push_back(with_minibatch(p, mb));
        }
        problems = swept;
    }
    const std::vector<int> thread_counts = o.threads.empty() ? std::vector<int>{omp_get_max_threads()} : o.threads;
    const std::vector<std::string>& backends = o.backends;
    OpenBlas openblas;
    std::printf("ISA gate: %s\n", kernels::isa_gate().describe().c_str());
    std::printf("sgemm micro-kernel: %s (%s)\n", kernels::selected_micro_kernel().kernel.name,
                kernels::selected_micro_kernel().reason.c_str());
    std::map<int, double> peak, bf16_peak;
    bool any_bf16 = false;
    for (const std::string& be : backends) any_bf16 = any_bf16 || be.ends_with("_bf16");
    for (int t : thread_counts) {
        // Best of three short runs: a busy neighbour lowers a run, never raises it.
        kernels::PeakResult pr = kernels::measure_peak(t, 0.15);
        for (int rep = 0; rep < 2; ++rep) pr.gflops = std::max(pr.gflops, kernels::measure_peak(t, 0.15).gflops);
        peak[t] = pr.gflops;
        std::printf("peak (FMA loop, %s, %d thread%s): %.1f GFLOP/s\n", pr.isa, t, t == 1 ? "" : "s", pr.gflops);
        if (!any_bf16) continue;
        kernels::PeakResult bp = kernels::measure_bf16_peak(t, 0.15);
        for (int rep = 0; rep < 2 && bp.gflops > 0; ++rep)
            bp.gflops = std::max(bp.gflops, kernels::measure_bf16_peak(t, 0.15).gflops);
        bf16_peak[t] = bp.gflops;
        if (bp.gflops > 0)
            std::printf("BF16 peak (dot-product loop, %s, %d thread%s): %.1f GFLOP/s (the _bf16 rows' %% of peak)\n",
                        bp.isa, t, t == 1 ? "" : "s", bp.gflops);
        else
            std::printf("BF16 peak: none, this level has no BF16 dot products (the _bf16 rows' %% is of the FP32 peak)\n");
    }
    std::fflush(stdout);

    Report report(o.format, o.output);
    for (const BenchProblem& p : problems) {
        for (int t : thread_counts) {
            omp_set_num_threads(t);  // the candidates of one row share it; oneDNN sizes its team from it
            std::vector<Candidate> cs;
            kernels::AlignedBuffer a, b, c;
            std::vector<std::unique_ptr<kernels::ConvBench>> convs;
            std::vector<std::unique_ptr<LayerBench>> layers;
            if (p.kind != ProblemKind::Conv && p.kind != ProblemKind::Gemm) {
                for (const std::string& be : backends) {
                    // Pooling and LRN have the own kernels only; an inner product runs on any GEMM.
                    kernels::GemmBackend gb = kernels::GemmBackend::Own;
                    if (be == "blis")
                        gb = kernels::GemmBackend::Blis;
                    else if (be == "onednn")
                        gb = kernels::GemmBackend::Onednn;
                    else if (be != "own")
                        continue;
                    if ((p.kind != ProblemKind::InnerProduct && be != "own") || !kernels::gemm_backend_available(gb))
                        continue;
                    layers.push_back(std::make_unique<LayerBench>(p, gb, t));
                    LayerBench* lb = layers.back().get();
                    for (const std::string& ps : o.passes)
                        if (LayerBench::has_pass(p, ps)) cs.push_back({be, ps, [lb, ps] { lb->run(ps); }, 1e30, lb->describe()});
                }
            } else if (p.is_gemm) {
                const GemmShape& s = p.gemm;
                a = kernels::AlignedBuffer(static_cast<size_t>(s.m) * s.k);
                b = kernels::AlignedBuffer(static_cast<size_t>(s.k) * s.n);
                c = kernels::AlignedBuffer(static_cast<size_t>(s.m) * s.n);
                fill_random(a, 1);
                fill_random(b, 2);
                std::vector<std::string> notes;
                cs = gemm_candidates(s, backends, t, a, b, c, openblas, notes);
                for (const std::string& n : notes) report.note(p.text + " " + n);
            } else {
                for (const std::string& be : backends) {
                    auto kind = kernels::conv_backend_from_name(be);
                    if (!kind || !kernels::conv_backend_available(*kind)) continue;
                    // A backend that refuses the problem (oneDNN 2.6 takes no negative end
                    // padding) is reported and skipped; the other backends still run.
                    try {
                        convs.push_back(std::make_unique<kernels::ConvBench>(p.conv, *kind, t));
                    } catch (const std::exception& e) {
                        report.note(p.text + " " + be + ": not run: " + e.what());
                        continue;
                    }
                    kernels::ConvBench* cb = convs.back().get();
                    for (const std::string& ps : o.passes)
                        cs.push_back({be, ps, [cb, ps] { cb->run(ps); }, 1e30, cb->describe()});
                }
            }
            time_candidates(cs, o.min_time);
            std::set<std::string> said;  // each backend's implementations once per problem
            for (const Candidate& cd : cs)
                if (!cd.impl.empty() && said.insert(cd.backend).second)
                    report.note(p.text + " " + cd.backend + ": " + cd.impl);
            for (const Candidate& cd : cs) {
                const double gflops = p.flops() / cd.best * 1e-9;
                const double top = cd.backend.ends_with("_bf16") && bf16_peak[t] > 0 ? bf16_peak[t] : peak[t];
                report.add({{"problem", p.text}, {"name", p.name}, {"kind", kind_name(p.kind)},
                            {"backend", cd.backend}, {"pass", cd.pass}, {"threads", t},
                            {"mb", p.minibatch()}, {"ms", cd.best * 1e3}, {"gflops", gflops},
                            {"peak_gflops", top}, {"pct_peak", 100.0 * gflops / top},
                            {"gbs", p.bytes() / cd.best * 1e-9}, {"impl", cd.impl}});
            }
        }
    }
    report.finish();
    return 0;
}

}  // namespace rudra::tools
