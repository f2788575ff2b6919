#include "kernels/problems.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <stdexcept>


namespace rudra::kernels {

std::string printable(const std::string& text) {
    std::string out;
    for (const unsigned char c : text) {
        if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            static const char kHex[] = "0123456789abcdef";
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 15];
        }
    }
    return out;
}

namespace {

[[noreturn]] void bad(const std::string& text, const std::string& why) {
    throw std::invalid_argument("problem '" + printable(text) + "': " + why);
}

// Splits "mb128ic3" into {mb:128, ic:3}; n"name" becomes the name, ta/tb flags. The fields are
// `whole` from `start` on (after a "kind:" prefix); errors quote `whole`.
std::map<std::string, long> fields(const std::string& whole, size_t start, std::string& name,
                                   std::vector<std::string>& flags) {
    const std::string& text = whole;
    std::map<std::string, long> out;
    size_t i = start;
    while (i < text.size()) {
        if (text[i] == '_') {  // optional separator, e.g. m75n1024k32ta_n"name"
            ++i;
            continue;
        }
        size_t j = i;
        while (j < text.size() && std::isalpha(static_cast<unsigned char>(text[j]))) ++j;
        std::string key = text.substr(i, j - i);
        if (key.empty()) bad(text, "expected a letter at position " + std::to_string(i + 1));
        if (j < text.size() && text[j] == '"') {  // n"name"
            if (key != "n") bad(text, "only n takes a quoted name");
            const size_t end = text.find('"', j + 1);
            if (end == std::string::npos) bad(text, "unterminated name");
            name = text.substr(j + 1, end - j - 1);
            i = end + 1;
            continue;
        }
        size_t k = j;
        while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) ++k;
        if (k == j) {
            if (key == "ta" || key == "tb") {
                flags.push_back(key);
                i = j;
                continue;
            }
            bad(text, "'" + key + "' needs a number");
        }
        if (out.count(key)) bad(text, "'" + key + "' given twice");
        // Every field is an int where it is used: a larger number would wrap.
        const std::string digits = text.substr(j, k - j);
        if (digits.size() > 10 || std::stoll(digits) > 2147483647)
            bad(text, "'" + key + "' is " + digits + ", more than 2147483647");
        out[key] = std::stol(digits);
        i = k;
    }
    return out;
}

}  // namespace

bool Problem::memory_bound() const {
    return kind == ProblemKind::PoolMax || kind == ProblemKind::PoolAve || kind == ProblemKind::LrnAcross ||
           kind == ProblemKind::LrnWithin;
}

int Problem::minibatch() const {
    if (kind == ProblemKind::Gemm) return 0;
    return kind == ProblemKind::Conv ? conv.num : mb;
}

double Problem::bytes() const {
    const double planes = static_cast<double>(mb) * channels;
    if (kind == ProblemKind::PoolMax || kind == ProblemKind::PoolAve) {
        const double in = planes * pool.height * pool.width, out = planes * pool.pooled_h() * pool.pooled_w();
        return 4.0 * (in + out * (kind == ProblemKind::PoolMax ? 2 : 1));  // x, y (and argmax)
    }
    if (kind == ProblemKind::LrnAcross || kind == ProblemKind::LrnWithin)
        return 4.0 * 3 * planes * lrn.height * lrn.width;  // x, y, scale
    return 0.0;
}

double Problem::flops() const {
    if (is_gemm) return 2.0 * gemm.m * gemm.n * static_cast<double>(gemm.k);
    if (kind == ProblemKind::InnerProduct) return 2.0 * mb * static_cast<double>(channels) * ip_outputs;
    if (memory_bound()) return 0.0;
    const ConvGeometry& g = conv.geom;
    return 2.0 * conv.num * conv.out_channels * static_cast<double>(g.out_h()) * g.out_w() * (g.channels / conv.groups) *
           g.kernel_h * g.kernel_w;
}

namespace {

// kh kw sh sw ph pw of a convolution or pooling window; missing width values copy the height ones.
template <class Geometry, class Take>
void take_window(Geometry& g, Take& take, long default_kernel) {
    g.kernel_h = static_cast<int>(take("kh", default_kernel));
    g.kernel_w = static_cast<int>(take("kw", g.kernel_h));
    g.stride_h = static_cast<int>(take("sh", 1));
    g.stride_w = static_cast<int>(take("sw", g.stride_h));
    g.pad_h = static_cast<int>(take("ph", 0));
    g.pad_w = static_cast<int>(take("pw", g.pad_h));
}

const std::map<std::string, ProblemKind> kLayerKinds = {
    {"pool_max", ProblemKind::PoolMax},     {"pool_ave", ProblemKind::PoolAve}, {"lrn_across", ProblemKind::LrnAcross},
    {"lrn_within", ProblemKind::LrnWithin}, {"ip", ProblemKind::InnerProduct},
};

// The fields of a pooling, LRN or inner-product descriptor (after "kind:").
void parse_layer(const std::string& text, Problem& p, const std::function<long(const char*, long)>& take) {
    p.mb = static_cast<int>(take("mb", 2));
    p.channels = static_cast<int>(take("ic", 0));
    const int ih = static_cast<int>(take("ih", p.kind == ProblemKind::InnerProduct ? 1 : 0));
    const int iw = static_cast<int>(take("iw", ih));
    if (p.mb <= 0 || p.channels <= 0 || ih <= 0 || iw <= 0) bad(text, "needs mb, ic and ih > 0");
    if (double{1} * p.mb * p.channels * ih * iw > 1099511627776.0)  // 2^40, in double: past 64 bits otherwise
        bad(text, "the input of all mb samples has more than 2^40 values");
    if (p.kind == ProblemKind::InnerProduct) {
        if (int64_t{p.channels} * ih * iw > 2147483647) bad(text, "ic x ih x iw is more than 2147483647");
        p.channels *= ih * iw;
        p.ip_outputs = static_cast<int>(take("oc", 0));
        if (p.ip_outputs <= 0) bad(text, "an inner product needs oc > 0");
        return;
    }
    if (p.kind == ProblemKind::LrnAcross || p.kind == ProblemKind::LrnWithin) {
        LrnGeometry& g = p.lrn;
        g.channels = p.channels;
        g.height = ih;
        g.width = iw;
        g.local_size = static_cast<int>(take("ls", 5));
        g.alpha = 5e-5f;
        g.beta = 0.75f;
        g.across_channels = p.kind == ProblemKind::LrnAcross;
        if (g.local_size <= 0 || g.local_size % 2 == 0) bad(text, "ls must be odd and > 0");
        return;
    }
    PoolGeometry& g = p.pool;
    g.height = ih;
    g.width = iw;
    take_window(g, take, 2);
    if (g.kernel_h <= 0 || g.kernel_w <= 0 || g.stride_h <= 0 || g.stride_w <= 0 || g.pad_h < 0 || g.pad_w < 0)
        bad(text, "kernel and stride must be > 0, padding >= 0");
    if (g.pad_h >= g.kernel_h || g.pad_w >= g.kernel_w) bad(text, "padding must be smaller than the kernel (as in Caffe)");
    if (const std::string why = geometry_problem(g); !why.empty()) bad(text, why);
}

}  // namespace

Problem parse_problem(const std::string& text) {
    Problem p;
    p.text = text;
    std::vector<std::string> flags;
    std::string body = text;
    if (const size_t colon = text.find(':'); colon != std::string::npos && text.find('"') > colon) {
        const auto kind = kLayerKinds.find(text.substr(0, colon));
        if (kind == kLayerKinds.end()) bad(text, "unknown kind '" + text.substr(0, colon) + "' (pool_max, pool_ave, lrn_across, lrn_within, ip)");
        p.kind = kind->second;
        body = text.substr(colon + 1);
    }
    auto f = fields(text, text.size() - body.size(), p.name, flags);
    auto take = [&](const char* key, long fallback) {
        auto it = f.find(key);
        if (it == f.end()) return fallback;
        const long v = it->second;
        f.erase(it);
        return v;
    };
    if (p.kind != ProblemKind::Conv) {
        if (!flags.empty()) bad(text, "ta/tb apply to GEMM problems only");
        parse_layer(text, p, take);
    } else if (f.count("m") || f.count("k")) {
        p.is_gemm = true;
        p.kind = ProblemKind::Gemm;
        p.gemm.m = static_cast<int>(take("m", 0));
        p.gemm.n = static_cast<int>(take("n", 0));
        p.gemm.k = static_cast<int>(take("k", 0));
        if (p.gemm.m <= 0 || p.gemm.n <= 0 || p.gemm.k <= 0) bad(text, "a GEMM needs m, n and k > 0");
        for (const std::string& fl : flags)
            (fl == "ta" ? p.gemm.ta : p.gemm.tb) = Trans::Yes;
    } else {
        if (!flags.empty()) bad(text, "ta/tb apply to GEMM problems only");
        for (const char* key : {"id", "od", "kd", "sd", "pd", "dd"})
            if (f.count(key)) bad(text, std::string("a 3-D convolution ('") + key + "' given): only 2-D ones are supported");
        if (!f.count("ih") && f.count("iw"))
            bad(text, "a 1-D convolution (iw without ih): only 2-D ones are supported (write ih1 for a 2-D one of one row)");
        ConvProblem& c = p.conv;
        ConvGeometry& g = c.geom;
        c.num = static_cast<int>(take("mb", 2));
        g.channels = static_cast<int>(take("ic", 0));
        c.out_channels = static_cast<int>(take("oc", 0));
        c.groups = static_cast<int>(take("g", 1));
        g.height = static_cast<int>(take("ih", 0));
        g.width = static_cast<int>(take("iw", g.height));
        const bool ph_given = f.count("ph") > 0, pw_given = f.count("pw") > 0 || ph_given;
        take_window(g, take, 1);
        g.dilation_h = static_cast<int>(take("dh", 0)) + 1;
        g.dilation_w = static_cast<int>(take("dw", g.dilation_h - 1)) + 1;
        const long oh = take("oh", 0), ow = take("ow", oh ? oh : 0);
        if (c.num <= 0 || g.channels <= 0 || c.out_channels <= 0 || g.height <= 0 || g.width <= 0)
            bad(text, "a convolution needs mb, ic, oc and ih > 0");
        if (g.kernel_h <= 0 || g.kernel_w <= 0 || g.stride_h <= 0 || g.stride_w <= 0 || c.groups <= 0)
            bad(text, "kernel, stride and group must be > 0");
        if (g.pad_h < 0 || g.pad_w < 0) bad(text, "padding must be >= 0");
        if (g.channels % c.groups || c.out_channels % c.groups) bad(text, "ic and oc must be divisible by g");
        // A given output size sets the padding after the last row and column as benchdnn and
        // oneDNN do: (o - 1) s + (k - 1) d + 1 - i - p, which may differ from p (asymmetric)
        // or be negative (the last inputs unread). Without ph, p itself is half the total.
        auto end_pad = [&](long o, int in, int k, int s, int d, int& pad, bool pad_given, const char* o_key) {
            const long total = (o - 1) * s + static_cast<long>(k - 1) * d + 1 - in;
            if (!pad_given) pad = static_cast<int>(std::max(0L, total / 2));
            const long end = total - pad;
            if (end >= static_cast<long>(k - 1) * d + 1 || (o > 0 && -end >= in))
                bad(text, std::string(o_key) + std::to_string(o) + " does not fit the geometry: it needs " +
                              std::to_string(end) + " padding after the input (at most the kernel's span less one)");
            return static_cast<int>(end);
        };
        if (oh > 0) g.pad_bottom = end_pad(oh, g.height, g.kernel_h, g.stride_h, g.dilation_h, g.pad_h, ph_given, "oh");
        if (ow > 0) g.pad_right = end_pad(ow, g.width, g.kernel_w, g.stride_w, g.dilation_w, g.pad_w, pw_given, "ow");
        if (g.pad_bottom == g.pad_h) g.pad_bottom = ConvGeometry::kSameAsStart;  // symmetric after all
        if (g.pad_right == g.pad_w) g.pad_right = ConvGeometry::kSameAsStart;
        if (const std::string why = geometry_problem(g); !why.empty()) bad(text, why);
        // In double: four ints multiplied may pass 64 bits.
        constexpr double kMostValues = 1099511627776.0;  // 2^40
        if (double{1} * c.num * g.channels * g.height * g.width > kMostValues ||
            double{1} * c.num * c.out_channels * g.out_h() * g.out_w() > kMostValues)
            bad(text, "the input or output of all mb images has more than 2^40 values");
        if (oh < 0 || (oh && oh != g.out_h()))
            bad(text, "oh" + std::to_string(oh) + " does not match the geometry (it gives " + std::to_string(g.out_h()) + ")");
        if (ow < 0 || (ow && ow != g.out_w()))
            bad(text, "ow" + std::to_string(ow) + " does not match the geometry (it gives " + std::to_string(g.out_w()) + ")");
    }
    if (!f.empty()) bad(text, "unknown field '" + f.begin()->first + "'");
    return p;
}

Problem with_minibatch(const Problem& p, int mb) {
    if (p.is_gemm) return p;
    Problem q = p;
    q.conv.num = mb;
    q.mb = mb;
    // The "mb" field: a run of letters that is exactly "mb", outside a quoted name.
    size_t at = std::string::npos, end = 0;
    for (size_t i = 0; i < p.text.size();) {
        if (p.text[i] == '"') {
            const size_t close = p.text.find('"', i + 1);
            i = close == std::string::npos ? p.text.size() : close + 1;
            continue;
        }
        size_t j = i;
        while (j < p.text.size() && std::isalpha(static_cast<unsigned char>(p.text[j]))) ++j;
        if (j == i) {
            ++i;
            continue;
        }
        if (p.text.compare(i, j - i, "mb") == 0) {
            at = i;
            for (end = j; end < p.text.size() && std::isdigit(static_cast<unsigned char>(p.text[end]));) ++end;
            break;
        }
        i = j;
    }
    const size_t colon = p.kind == ProblemKind::Conv ? 0 : p.text.find(':') + 1;  // after "kind:"
    q.text = at == std::string::npos ? p.text.substr(0, colon) + "mb" + std::to_string(mb) + p.text.substr(colon)
                                     : p.text.substr(0, at) + "mb" + std::to_string(mb) + p.text.substr(end);
    return q;
}

}  // namespace rudra::kernels
