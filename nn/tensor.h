// Shapes and blobs. Activations are NCHW float32; a Blob is a view into the net's arenas.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "base/checked.h"

namespace rudra::nn {

struct Shape {
    std::vector<int> dims;

    Shape() = default;
    Shape(std::initializer_list<int> d) : dims(d) {}
    explicit Shape(std::vector<int> d) : dims(std::move(d)) {}

    // The product of the dims; SizeOverflow (base/checked.h) naming the shape when it does not
    // fit in 64 bits (dims come from files and options).
    int64_t count() const { return count_from(0); }
    // Product of dims from `axis` on (Caffe's count(axis)).
    int64_t count_from(size_t axis) const {
        int64_t c = 1;
        for (size_t i = axis; i < dims.size(); ++i)
            if (__builtin_mul_overflow(c, int64_t{dims[i]}, &c)) too_large();
        return c;
    }
    size_t rank() const { return dims.size(); }
    int operator[](size_t i) const { return dims[i]; }
    bool operator==(const Shape& o) const { return dims == o.dims; }
    bool operator!=(const Shape& o) const { return dims != o.dims; }
    [[noreturn]] void too_large() const {
        throw SizeOverflow("the shape " + str() + " has more elements than 64 bits can count");
    }
    std::string str() const {
        std::string s;
        for (size_t i = 0; i < dims.size(); ++i) {
            if (i) s += 'x';
            s += std::to_string(dims[i]);
        }
        return s.empty() ? "scalar" : s;
    }
};

struct Blob {
    std::string name;
    Shape shape;
    float* data = nullptr;
    float* diff = nullptr;
    int64_t count() const { return shape.count(); }
};

enum class Phase { Train, Test };

inline const char* phase_name(Phase p) { return p == Phase::Train ? "TRAIN" : "TEST"; }

}  // namespace rudra::nn
