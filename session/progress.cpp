#include "session/progress.h"

#include <cstdio>

namespace rudra::session {

std::string format_duration(double s) {
    if (!(s >= 0) || s > 1e7) return "--:--";
    long t = static_cast<long>(s + 0.5);
    char buf[32];
    if (t >= 3600)
        std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
    else
        std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
    return buf;
}

void ProgressBar::update(long done, long total, double ips, double images_per_s, double loss, int epoch) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    if (shown_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    constexpr int kWidth = 30;  // from here on the bar is redrawn: at most ten times a second
    const double frac = total > 0 ? static_cast<double>(done) / total : 1.0;
    const int fill = static_cast<int>(frac * kWidth);
    std::string bar(fill, '=');
    if (fill < kWidth) bar += '>' + std::string(kWidth - fill - 1, ' ');
    const double eta = ips > 0 ? (total - done) / ips : -1;
    std::fprintf(stderr, "\r\033[Kepoch %d [%s] %3.0f%% %ld/%ld %.0f img/s loss %.4f ETA %s", epoch, bar.c_str(),
                 frac * 100.0, done, total, images_per_s, loss, format_duration(eta).c_str());
    std::fflush(stderr);
    shown_ = true;
}

void ProgressBar::clear() {
    if (!enabled_ || !shown_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
}

std::string with_thousands(uint64_t n) {
    std::string s = std::to_string(n);
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), 1, ',');
    return s;
}

}  // namespace rudra::session
