#include "nn/net.h"

#include <unistd.h>

#include <cstdio>
#include <map>
#include <stdexcept>

#include "nn/config_error.h"
#include "nn/layer_factory.h"

namespace rudra::nn {
namespace {

size_t round16(size_t n) { return (n + 15) / 16 * 16; }

}  // namespace

namespace {

// The machine's memory in bytes (0 when unknown).
double physical_memory() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

std::string gib(double bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1 << 30));
    return buf;
}

}  // namespace

void Net::check_memory(const std::string& what, double more_floats) const {
    const double need = sizeof(float) * (2.0 * blob_floats_ + more_floats);
    const double have = memory_bytes_ > 0 ? memory_bytes_ : physical_memory();
    if (have > 0 && need > have)
        throw ConfigError(what + " need " + gib(need) + ", more than this machine's " + gib(have) +
                          " of memory (lower the mini-batch)");
}

int Net::add_blob(const std::string& name, const Shape& shape, const std::string& where) {
    for (const auto& b : blobs_)
        if (b.name == name) throw ConfigError(where + ": top blob '" + name + "' is produced twice");
    // Values and gradients of every blob so far: refused before anything that size is allocated.
    int64_t count = 0;
    try {
        count = shape.count();
    } catch (const SizeOverflow& e) {
        throw ConfigError(where + ": blob '" + name + "': " + e.what() + " (lower the mini-batch or the input shape)");
    }
    blob_floats_ += static_cast<double>(count);
    check_memory(where + ": the activations and their gradients up to blob '" + name + "' " + shape.str(), 0.0);
    blobs_.push_back(Blob{name, shape, nullptr, nullptr});
    blob_needs_backward_.push_back(false);
    return static_cast<int>(blobs_.size()) - 1;
}

Blob* Net::find_blob(const std::string& name) {
    for (auto& b : blobs_)
        if (b.name == name) return &b;
    return nullptr;
}

Blob& Net::blob(const std::string& name) {
    Blob* b = find_blob(name);
    if (!b) throw std::runtime_error("net has no blob '" + name + "'");
    return *b;
}

Net::Net(const NetSpec& spec, const NetOptions& opt, ParamStore* shared) : memory_bytes_(opt.memory_bytes) {
    std::vector<ParamEntry> entries;
    std::map<std::string, int> consumers;  // back-propagating consumers per blob, to refuse fan-out
    size_t scratch_total = 0;
    double param_floats = 0, own_floats = 0;
    std::map<std::string, int> name_lines;  // layer names of this phase and where they first appear
    for (const LayerSpec& ls : spec.layers) {
        if (!ls.applies_to(opt.phase)) continue;
        const std::string where = spec.file + ":" + std::to_string(ls.line) + ": layer '" + ls.name + "'";
        if (const auto [it, fresh] = name_lines.emplace(ls.name, ls.line); !fresh)
            throw ConfigError(where + ": the name is used again (first at line " + std::to_string(it->second) +
                              "); layer names must be unique within a phase");
        if (ls.is_data() || ls.is_input()) {
            if (input_data_ >= 0) throw ConfigError(where + ": a second data/input layer in phase " + phase_name(opt.phase));
            if (ls.is_data()) {
                if (opt.data_chw[0] <= 0)
                    throw ConfigError(where + ": a Data layer needs the sample shape (C, H, W) from the data set or --input-shape");
                transform_ = ls.transform;
                has_transform_ = true;
                batch_ = opt.batch > 0 ? opt.batch : ls.batch_size;
                const int crop = ls.transform.crop_size;
                const int h = crop ? crop : opt.data_chw[1], w = crop ? crop : opt.data_chw[2];
                if (crop && (crop > opt.data_chw[1] || crop > opt.data_chw[2]))
                    throw ConfigError(where + ": crop_size " + std::to_string(crop) + " exceeds the image size");
                input_data_ = add_blob(ls.tops[0], Shape{batch_, opt.data_chw[0], h, w}, where);
                if (ls.tops.size() > 1) input_label_ = add_blob(ls.tops[1], Shape{batch_}, where);
            } else {
                for (size_t t = 0; t < ls.tops.size(); ++t) {
                    Shape s = ls.input_shapes[ls.input_shapes.size() == 1 ? 0 : t];
                    if (opt.batch > 0) s.dims[0] = opt.batch;
                    int id = add_blob(ls.tops[t], s, where);
                    if (t == 0) {
                        input_data_ = id;
                        batch_ = s[0];
                    }
                }
            }
            continue;
        }
        LayerEntry e;
        e.layer = make_layer(ls, spec.file, opt.phase, opt.kernels);
        e.layer->seed(opt.seed * 1000003ull + layers_.size());
        std::vector<Shape> bottom_shapes;
        for (const auto& b : ls.bottoms) {
            int id = -1;
            for (size_t i = 0; i < blobs_.size(); ++i)
                if (blobs_[i].name == b) id = static_cast<int>(i);
            if (id < 0) throw ConfigError(where + ": unknown bottom blob '" + b + "' (no earlier layer produces it)");
            e.bottoms.push_back(id);
            bottom_shapes.push_back(blobs_[id].shape);
        }
        std::vector<Shape> top_shapes;
        try {
            top_shapes = e.layer->setup(bottom_shapes);
        } catch (const ConfigError&) {
            throw;
        } catch (const std::exception& ex) {
            throw ConfigError(spec.file + ":" + std::to_string(ls.line) + ": " + ex.what());
        }
        if (top_shapes.size() != ls.tops.size())
            throw ConfigError(where + ": has " + std::to_string(ls.tops.size()) + " tops, the layer makes " +
                              std::to_string(top_shapes.size()));
        // Gradient flow: a bottom needs its gradient when something upstream learns.
        bool any_down = false;
        for (int b : e.bottoms) {
            e.propagate_down.push_back(blob_needs_backward_[b]);
            any_down = any_down || blob_needs_backward_[b];
        }
        e.needs_backward = e.layer->can_backward() && (any_down || !e.layer->params().empty());
        if (e.needs_backward)
            for (size_t i = 0; i < e.bottoms.size(); ++i)
                if (e.propagate_down[i] && ++consumers[blobs_[e.bottoms[i]].name] > 1)
                    throw ConfigError(where + ": blob '" + blobs_[e.bottoms[i]].name +
                                      "' feeds two back-propagating layers; fan-out (Caffe's Split) is not supported yet");
        for (size_t t = 0; t < ls.tops.size(); ++t) {
            int in_place = -1;
            for (int b : e.bottoms)
                if (blobs_[b].name == ls.tops[t]) in_place = b;
            if (in_place >= 0) {
                if (!e.layer->can_run_in_place()) throw ConfigError(where + ": " + e.layer->type() + " cannot run in place");
                if (blobs_[in_place].shape != top_shapes[t]) throw ConfigError(where + ": in-place top changes shape");
                e.tops.push_back(in_place);
            } else {
                e.tops.push_back(add_blob(ls.tops[t], top_shapes[t], where));
            }
            blob_needs_backward_[e.tops.back()] = e.needs_backward;
            consumers[ls.tops[t]] = 0;  // an in-place top is a new value with its own consumers
        }
        if (e.layer->is_loss()) {
            e.loss_weight = ls.loss_weights.empty() ? 1.0f : ls.loss_weights[0];
            if (scores_blob_.empty() && !ls.bottoms.empty()) scores_blob_ = ls.bottoms[0];
        } else if (!ls.loss_weights.empty()) {
            e.loss_weight = ls.loss_weights[0];
        }
        const auto& decls = e.layer->params();
        for (const auto& d : decls) {
            try {
                param_floats += static_cast<double>(d.shape.count());
            } catch (const SizeOverflow& ex) {
                throw ConfigError(where + ": a parameter blob: " + ex.what());
            }
        }
        if (ls.param_mults.size() > decls.size())
            throw ConfigError(where + ": " + std::to_string(ls.param_mults.size()) + " 'param' blocks for " +
                              std::to_string(decls.size()) + " parameter blobs");
        for (size_t i = 0; i < decls.size(); ++i) {
            ParamEntry pe;
            pe.layer = ls.name;
            pe.index = static_cast<int>(i);
            pe.shape = decls[i].shape;
            pe.filler = decls[i].filler;
            if (i < ls.param_mults.size()) {
                pe.lr_mult = ls.param_mults[i].lr_mult;
                pe.decay_mult = ls.param_mults[i].decay_mult;
            }
            entries.push_back(pe);
        }
        e.scratch_offset = scratch_total;
        scratch_total = checked_add<size_t>(scratch_total, round16(e.layer->scratch_floats()), where + ": scratch floats");
        // The parameters (values, gradients and a solver's history), the layers' scratch and what
        // they hold of their own (kernels' buffers) too, before the layer builds its kernels.
        own_floats += e.layer->own_floats();
        check_memory(where + ": the activations, parameters, scratch and kernel buffers up to this layer",
                     3.0 * param_floats + static_cast<double>(scratch_total) + own_floats);
        try {
            e.layer->prepare();
        } catch (const ConfigError&) {
            throw;
        } catch (const std::exception& ex) {
            throw ConfigError(spec.file + ":" + std::to_string(ls.line) + ": " + ex.what());
        }
        layers_.push_back(std::move(e));
    }
    if (input_data_ < 0) throw ConfigError(spec.file + ": no Data or Input layer for phase " + phase_name(opt.phase));

    if (shared) {
        params_ = shared;
        for (const auto& pe : entries) {
            const ParamEntry* s = shared->find(pe.layer, pe.index);
            if (!s || s->shape != pe.shape)
                throw ConfigError(spec.file + ": layer '" + pe.layer + "' parameter " + std::to_string(pe.index) +
                                  " has no match of shape " + pe.shape.str() + " in the shared parameters");
        }
    } else {
        own_params_ = std::make_unique<ParamStore>(entries);
        params_ = own_params_.get();
    }

    size_t total = 0;
    for (const auto& b : blobs_) total += round16(static_cast<size_t>(b.count()));
    data_arena_ = kernels::AlignedBuffer(total);
    diff_arena_ = kernels::AlignedBuffer(total);
    size_t off = 0;
    for (auto& b : blobs_) {
        b.data = data_arena_.data() + off;
        b.diff = diff_arena_.data() + off;
        off += round16(static_cast<size_t>(b.count()));
    }
    scratch_arena_ = kernels::AlignedBuffer(scratch_total);
    for (auto& e : layers_) {
        std::vector<ParamView> views;
        for (size_t i = 0; i < e.layer->params().size(); ++i) {
            const ParamEntry* pe = params_->find(e.layer->name(), static_cast<int>(i));
            views.push_back({params_->values() + pe->offset, params_->grads() + pe->offset});
            e.param_offsets.push_back(pe->offset);
        }
        e.layer->bind(std::move(views), scratch_arena_.data() + e.scratch_offset);
        for (int b : e.bottoms) e.bottom_ptrs.push_back(&blobs_[b]);
        for (int t : e.tops) e.top_ptrs.push_back(&blobs_[t]);
    }
    bound_values_ = params_->values();
}

void Net::bind_values(float* arena) {
    bound_values_ = arena ? arena : params_->values();
    for (auto& e : layers_)
        for (size_t i = 0; i < e.param_offsets.size(); ++i) e.layer->rebind_values(i, bound_values_ + e.param_offsets[i]);
}

void Net::skip_passes(uint64_t passes) {
    for (auto& e : layers_) e.layer->skip_passes(passes);
}

void Net::forward_layer(size_t i) {
    LayerEntry& e = layers_[i];
    e.layer->forward(e.bottom_ptrs, e.top_ptrs);
}

void Net::backward_layer(size_t i) {
    LayerEntry& e = layers_[i];
    if (!e.needs_backward) return;
    if (e.layer->is_loss()) blobs_[e.tops[0]].diff[0] = e.loss_weight;
    e.layer->backward(e.top_ptrs, e.propagate_down, e.bottom_ptrs);
}

float Net::forward() {
    float loss = 0.0f;
    for (size_t i = 0; i < layers_.size(); ++i) {
        forward_layer(i);
        if (layers_[i].loss_weight != 0.0f) loss += layers_[i].loss_weight * blobs_[layers_[i].tops[0]].data[0];
    }
    return loss;
}

void Net::backward() {
    for (size_t i = layers_.size(); i-- > 0;) backward_layer(i);
}

void Net::backward(const std::function<void(size_t layer)>& after_layer) {
    for (size_t i = layers_.size(); i-- > 0;) {
        backward_layer(i);
        after_layer(i);
    }
}

}  // namespace rudra::nn
