#include "nn/prototxt.h"

#include <cctype>
#include <fstream>
#include <sstream>

#include "nn/config_error.h"

namespace rudra::nn {
namespace {

class Parser {
public:
    Parser(const std::string& text, const std::string& file) : s_(text), file_(file) {}

    TextMessage parse_all() {
        TextMessage m = parse_fields(/*closing=*/'\0');
        return m;
    }

private:
    const std::string& s_;
    const std::string& file_;
    size_t pos_ = 0;
    int line_ = 1, col_ = 1;
    static constexpr int kMaxDepth = 100;
    int depth_ = 0;

    [[noreturn]] void fail(const std::string& what) const { throw ConfigError(file_, line_, col_, what); }

    char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
    char get() {
        char c = s_[pos_++];
        if (c == '\n') {
            ++line_;
            col_ = 1;
        } else {
            ++col_;
        }
        return c;
    }
    void skip_space() {
        while (pos_ < s_.size()) {
            char c = peek();
            if (c == '#') {
                while (pos_ < s_.size() && peek() != '\n') get();
            } else if (std::isspace(static_cast<unsigned char>(c))) {
                get();
            } else {
                break;
            }
        }
    }
    static bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
    static bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

    std::string identifier() {
        std::string out;
        while (pos_ < s_.size() && ident_char(peek())) out += get();
        return out;
    }

    TextMessage parse_fields(char closing) {
        TextMessage msg;
        for (;;) {
            skip_space();
            if (pos_ >= s_.size()) {
                if (closing) fail(std::string("unexpected end of file: missing '") + closing + "'");
                return msg;
            }
            if (closing && peek() == closing) {
                get();
                return msg;
            }
            if (!ident_start(peek())) fail(std::string("expected a field name, found '") + peek() + "'");
            TextField f;
            f.line = line_;
            f.col = col_;
            f.name = identifier();
            skip_space();
            bool colon = false;
            if (peek() == ':') {
                get();
                colon = true;
                skip_space();
            }
            if (peek() == '{' || peek() == '<') {
                // Recursion: a limit keeps a hostile file from overflowing the stack (Caffe's
                // files nest four or five levels).
                if (depth_ == kMaxDepth)
                    fail("messages nested more than " + std::to_string(kMaxDepth) + " levels deep");
                char close = get() == '{' ? '}' : '>';
                f.kind = TextField::Kind::Message;
                ++depth_;
                f.message = parse_fields(close);
                --depth_;
            } else {
                if (!colon) fail("expected ':' or '{' after field '" + f.name + "'");
                parse_scalar(f);
            }
            msg.fields.push_back(std::move(f));
            skip_space();
            if (peek() == ',' || peek() == ';') get();
        }
    }

    void parse_scalar(TextField& f) {
        char c = peek();
        if (c == '"' || c == '\'') {
            f.kind = TextField::Kind::String;
            // Adjacent string literals concatenate, as in protobuf.
            while (peek() == '"' || peek() == '\'') {
                f.text += quoted();
                skip_space();
            }
            return;
        }
        if (c == '-' || c == '+' || c == '.' || std::isdigit(static_cast<unsigned char>(c))) {
            f.kind = TextField::Kind::Number;
            while (pos_ < s_.size() &&
                   (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '.' ||
                    peek() == '-' || peek() == '+'))
                f.text += get();
            return;
        }
        if (ident_start(c)) {
            f.kind = TextField::Kind::Identifier;
            f.text = identifier();
            return;
        }
        if (c == '\0') fail("unexpected end of file: missing value for field '" + f.name + "'");
        fail(std::string("unexpected character '") + c + "' in the value of field '" + f.name + "'");
    }

    std::string quoted() {
        char q = get();
        std::string out;
        for (;;) {
            if (pos_ >= s_.size() || peek() == '\n') fail("unterminated string");
            char c = get();
            if (c == q) return out;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (pos_ >= s_.size()) fail("unterminated string");
            char e = get();
            switch (e) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'r': out += '\r'; break;
                case '\\': out += '\\'; break;
                case '"': out += '"'; break;
                case '\'': out += '\''; break;
                default: fail(std::string("unsupported escape '\\") + e + "' in string");
            }
        }
    }
};

}  // namespace

TextMessage parse_prototxt(const std::string& text, const std::string& file) {
    return Parser(text, file).parse_all();
}

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConfigError(path + ": cannot open file");
    std::stringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw ConfigError(path + ": read error");
    return ss.str();
}

TextMessage parse_prototxt_file(const std::string& path) { return parse_prototxt(read_text_file(path), path); }

}  // namespace rudra::nn
