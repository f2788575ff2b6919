// Protocol-buffer text format (what Caffe's .prototxt files use), parsed into a plain tree with
// source positions. No schema here: nn/field_reader.h checks fields against what each part accepts.
#pragma once
#include <string>
#include <vector>

namespace rudra::nn {

struct TextField;

struct TextMessage {
    std::vector<TextField> fields;
};

struct TextField {
    enum class Kind { String, Number, Identifier, Message };
    std::string name;
    int line = 0, col = 0;
    Kind kind = Kind::Identifier;
    std::string text;     // unescaped string, number text or identifier
    TextMessage message;  // for Kind::Message
};

// Throws ConfigError naming `file`, line and column on any syntax error.
TextMessage parse_prototxt(const std::string& text, const std::string& file);
TextMessage parse_prototxt_file(const std::string& path);
// Whole file as text; throws ConfigError naming the file when it cannot be read.
std::string read_text_file(const std::string& path);

}  // namespace rudra::nn
