#include "session/training_session.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "data/sample_reader.h"
#include "data/skip_log.h"
#include "session/data_setup.h"

namespace rudra::session {
namespace {

nn::NetOptions net_options(const SessionSpec& spec, ConvChoices& choices, nn::Phase phase, int batch,
                           const data::Dataset& d) {
    nn::NetOptions o;
    o.kernels = spec.kernels.choose_auto ? spec.kernels : with_choices(spec.kernels, choices);
    o.phase = phase;
    o.batch = batch;
    o.data_chw = {d.channels, d.height, d.width};
    o.seed = spec.seed;
    return o;
}

// Copies the samples from `first` on (test order, no randomness) into the net's input blobs;
// rows past the end of the set are zero with label 0. Returns how many rows are real; `labels`
// gets the real rows' labels (-1 for a record skipped under --bad-image skip).
int fill_test_batch(nn::Net& net, const data::Dataset& d, const data::Transform& t, int64_t first,
                    std::vector<int>& labels, data::SkipLog* skipped) {
    nn::Blob& x = net.input_data();
    nn::Blob* y = net.input_label();
    const int batch = net.batch();
    const int64_t per = x.count() / batch;
    const int real = static_cast<int>(std::min<int64_t>(batch, d.size() - first));
    data::ReadScratch scratch;
    for (int i = 0; i < batch; ++i) {
        if (i < real) {
            const uint8_t* pixels = nullptr;
            int label = -1;
            try {
                label = d.read(first + i, scratch, pixels);
            } catch (const data::DataError& e) {
                if (!skipped) throw;
                skipped->record(e.what());
            }
            labels[i] = label;  // -1: skipped, not counted
            if (label < 0) {
                std::memset(x.data + i * per, 0, sizeof(float) * per);
                if (y) y->data[i] = 0.0f;
                continue;
            }
            data::transform_pixels(d, pixels, t, /*train=*/false, 0, x.data + i * per);
            if (y) y->data[i] = static_cast<float>(label);
        } else {
            std::memset(x.data + i * per, 0, sizeof(float) * per);
            if (y) y->data[i] = 0.0f;
        }
    }
    return real;
}

// Every label must be one of the net's classes (the width of the scores its loss layer reads):
// the first that is not is named with its file and record, before any training.
void check_labels(const data::Dataset& d, nn::Net& net, const std::string& net_file) {
    const std::string scores = net.scores_blob();
    if (scores.empty()) return;
    const int64_t classes = net.blob(scores).count() / net.batch();
    if (d.is_streamed()) {
        // Read record by record: each label is checked as it is read (an LMDB's are known only
        // then); a set whose classes are known up front (folders, lists) is checked now.
        d.reader->limit_labels(static_cast<int>(classes));
        if (d.num_classes > classes)
            throw data::DataError(d.label_source + ": " + std::to_string(d.num_classes) + " classes, but the net (" +
                                  net_file + ") has " + std::to_string(classes) + " (" + scores + " is " +
                                  net.blob(scores).shape.str() + ")");
        return;
    }
    if (d.num_classes <= 0) return;
    if (d.num_classes <= classes) return;
    for (int64_t i = 0; i < d.size(); ++i)
        if (d.labels[i] >= classes)
            throw data::DataError(d.label_source + ": record " + std::to_string(i) + " has label " +
                                  std::to_string(d.labels[i]) + ", but the net (" + net_file + ") has " +
                                  std::to_string(classes) + " classes (" + scores + " is " +
                                  net.blob(scores).shape.str() + ")");
}

}  // namespace

TrainingSession::TrainingSession(const SessionSpec& spec, const data::TrainTest& sets, SessionParts parts)
    : spec_(spec), sets_(sets), choices_(spec.kernels.auto_cache) {
    notes_ = spec.solver.notes;
    notes_.insert(notes_.end(), spec.net.notes.begin(), spec.net.notes.end());
    notes_.insert(notes_.end(), sets.notes.begin(), sets.notes.end());
    const nn::LayerSpec* train_layer = spec.net.data_layer(nn::Phase::Train);
    const nn::LayerSpec* test_layer = spec.net.data_layer(nn::Phase::Test);
    const std::string& net_file = spec.net.file;
    std::vector<float> mean;  // computed once for both transforms
    if (train_layer) train_tf_ = make_transform(train_layer->transform, sets, mean, notes_);
    test_tf_ = test_layer ? make_transform(test_layer->transform, sets, mean, notes_) : train_tf_;

    if (parts.train_net) {
        if (!train_layer) throw std::runtime_error(net_file + ": the net has no Data layer for phase TRAIN");
        train_net_ =
            std::make_unique<nn::Net>(spec.net, net_options(spec, choices_, nn::Phase::Train, spec.batch, sets.train));
        if (!train_net_->input_label())
            throw std::runtime_error(net_file + ": the TRAIN Data layer has no label top");
        if (train_net_->input_data().count() / train_net_->batch() !=
            static_cast<int64_t>(sets.train.channels) * train_tf_.out_h(sets.train) * train_tf_.out_w(sets.train))
            throw std::runtime_error("data set and net input shapes differ");
        check_labels(sets.train, *train_net_, net_file);
    }
    if (parts.test_net) {
        const int batch = spec.test_batch > 0 ? spec.test_batch
                          : test_layer        ? 0
                          : train_net_        ? train_net_->batch()
                                              : spec.batch;
        test_net_ = std::make_unique<nn::Net>(spec.net, net_options(spec, choices_, nn::Phase::Test, batch, sets.test),
                                              train_net_ ? &train_net_->params() : nullptr);
        check_labels(sets.test, *test_net_, net_file);
    }
    if (!train_net_ && !test_net_) throw std::logic_error("TrainingSession: neither a TRAIN nor a TEST net");
    if (parts.solver) solver_ = std::make_unique<nn::Solver>(spec.solver, params());
    params().fill(spec.seed);
}

TrainingSession::~TrainingSession() = default;

nn::ParamStore& TrainingSession::params() { return train_net_ ? train_net_->params() : test_net_->params(); }

const nn::ParamStore& TrainingSession::params() const {
    return train_net_ ? train_net_->params() : test_net_->params();
}

nn::Net& TrainingSession::train_net() {
    if (!train_net_) throw std::logic_error("TrainingSession: no TRAIN net was built");
    return *train_net_;
}

nn::Net& TrainingSession::test_net() {
    if (!test_net_) throw std::logic_error("TrainingSession: no TEST net was built");
    return *test_net_;
}

nn::Solver& TrainingSession::solver() {
    if (!solver_) throw std::logic_error("TrainingSession: no solver was built");
    return *solver_;
}

int TrainingSession::batch() const { return train_net_ ? train_net_->batch() : test_net_->batch(); }

double TrainingSession::compute_gradient(const data::Batch& b) { return compute_gradient(b, [](size_t) {}); }

double TrainingSession::compute_gradient(const data::Batch& b, const std::function<void(size_t layer)>& after_layer) {
    nn::Net& net = train_net();
    nn::Blob& x = net.input_data();
    nn::Blob& y = *net.input_label();
    std::memcpy(x.data, b.data.data(), sizeof(float) * x.count());
    std::memcpy(y.data, b.labels.data(), sizeof(float) * y.count());
    net.params().zero_grads();
    const float loss = net.forward();
    if (!std::isfinite(loss))
        throw Diverged(loss, "training diverged at sample " + std::to_string(b.first_position) + " (loss " +
                                 std::to_string(loss) + "); lower base_lr");
    net.backward(after_layer);
    return loss;
}

double TrainingSession::step(const data::Batch& b, int64_t iteration) {
    const double loss = compute_gradient(b);
    solver().apply(params().grads(), iteration);
    return loss;
}

namespace {

// Correct at k when fewer than k classes score strictly higher than the label (Caffe's Accuracy).
bool in_top(const float* s, int classes, int label, int k) {
    int higher = 0;
    for (int c = 0; c < classes && higher < k; ++c) higher += s[c] > s[label];
    return higher < k;
}

// The test net's Accuracy layers: their top, the blob they rank and their top_k.
struct AccuracySpec {
    std::string top, scores;
    int top_k = 1;
};

std::vector<AccuracySpec> accuracy_layers(const nn::NetSpec& net) {
    std::vector<AccuracySpec> out;
    for (const nn::LayerSpec& l : net.layers) {
        if (l.type != "Accuracy" || !l.applies_to(nn::Phase::Test) || l.tops.empty() || l.bottoms.empty()) continue;
        AccuracySpec a{l.tops[0], l.bottoms[0], 1};
        // The layer checked its accuracy_param when the net was built: only top_k is wanted here.
        for (const nn::TextField& p : l.message.fields)
            if (p.name == "accuracy_param")
                for (const nn::TextField& k : p.message.fields)
                    if (k.name == "top_k") a.top_k = std::max(1, std::atoi(k.text.c_str()));
        out.push_back(a);
    }
    return out;
}

}  // namespace

EvalResult TrainingSession::evaluate() {
    nn::Net& net = test_net();
    const data::Dataset& d = sets_.test;
    const std::string scores_name = net.scores_blob();
    if (scores_name.empty()) throw std::runtime_error("the test net has no loss layer to read scores from");
    nn::Blob& scores = net.blob(scores_name);
    const int classes = static_cast<int>(scores.count() / net.batch());
    const std::vector<AccuracySpec> acc = accuracy_layers(spec_.net);
    std::vector<int64_t> acc_correct(acc.size(), 0);
    EvalResult r;
    int64_t correct = 0, correct5 = 0;
    double loss = 0.0;
    std::vector<int> labels(net.batch());
    for (int64_t first = 0; first < d.size(); first += net.batch()) {
        const int real = fill_test_batch(net, d, test_tf_, first, labels, sets_.skipped.get());
        net.forward();
        for (int i = 0; i < real; ++i) {
            const float* s = scores.data + static_cast<int64_t>(i) * classes;
            const int label = labels[i];
            if (label < 0) continue;
            ++r.images;
            const int best = static_cast<int>(std::max_element(s, s + classes) - s);
            correct += best == label;
            if (classes >= 5) correct5 += in_top(s, classes, label, 5);
            const float mx = s[best];
            double sum = 0.0;
            for (int c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(s[c] - mx));
            loss += std::log(sum) - (s[label] - mx);
        }
        for (size_t a = 0; a < acc.size(); ++a) {
            const nn::Blob& b = net.blob(acc[a].scores);
            const int k_classes = static_cast<int>(b.count() / net.batch());
            for (int i = 0; i < real; ++i)
                if (labels[i] >= 0)
                    acc_correct[a] += in_top(b.data + static_cast<int64_t>(i) * k_classes, k_classes, labels[i], acc[a].top_k);
        }
    }
    const double n = static_cast<double>(std::max<int64_t>(r.images, 1));
    r.accuracy = r.images ? correct / n : 0.0;
    if (classes >= 5) r.top5 = r.images ? correct5 / n : 0.0;
    r.loss = r.images ? loss / r.images : 0.0;
    for (size_t a = 0; a < acc.size(); ++a) r.layers.push_back({acc[a].top, acc[a].top_k, r.images ? acc_correct[a] / n : 0.0});
    return r;
}

nn::Snapshot TrainingSession::snapshot(uint64_t iteration, uint64_t samples_seen, uint64_t data_seed) const {
    const nn::ParamStore& p = params();
    nn::Snapshot s;
    s.iteration = iteration;
    s.samples_seen = samples_seen;
    s.data_seed = data_seed;
    s.layout_hash = p.layout_hash();
    s.solver_type = static_cast<uint32_t>(spec_.solver.type);
    s.params.assign(p.values(), p.values() + p.size());
    if (solver_) s.history.assign(solver_->history(), solver_->history() + solver_->history_size());
    return s;
}

void TrainingSession::restore(const nn::Snapshot& s, const std::string& source, History history) {
    nn::ParamStore& p = params();
    if (s.layout_hash != p.layout_hash() || s.params.size() != p.size())
        throw std::runtime_error(source + ": the snapshot's parameters do not match net " + spec_.net.file);
    const bool matching = solver_ && s.history.size() == solver_->history_size() &&
                          s.solver_type == static_cast<uint32_t>(spec_.solver.type);
    if (history == History::Required && !matching)
        throw std::runtime_error(source + ": the snapshot was taken with a different solver type");
    std::copy(s.params.begin(), s.params.end(), p.values());
    if (history != History::Ignored && matching) std::copy(s.history.begin(), s.history.end(), solver_->history());
}

std::string snapshot_path(const std::string& dir, const std::string& prefix, int64_t iteration) {
    namespace fs = std::filesystem;
    std::string base = prefix.empty() ? "snapshot" : fs::path(prefix).filename().string();
    if (base.empty()) base = "snapshot";
    return (fs::path(dir) / (base + "_iter_" + std::to_string(iteration) + ".rudra")).string();
}

}  // namespace rudra::session
