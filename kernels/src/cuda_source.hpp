// kernels/src/cuda_source.hpp: text helpers shared by the signature parser, the struct checks
// and the kernel compiler (private to the kernels layer).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace cunumpy::detail {

// The source with // and /* */ comments removed (newlines kept; literals untouched).
std::string strip_comments(std::string_view source);
// C tokens: identifiers, numbers, "::", string literals and single punctuation characters.
std::vector<std::string> tokenize(std::string_view source);
// Whether a token is a name (starts with a letter or '_').
bool is_identifier(std::string_view token);
// Index of the token that closes the bracket opened at `open` (tokens[open] is "(", "<", "["
// or "{"), counting nested ones; tokens.size() when it is never closed.
std::size_t closing(const std::vector<std::string>& tokens, std::size_t open);
// Tokens of a declaration put back as C++ is written: "const double* x", "Array2D<double> a".
std::string as_written(const std::vector<std::string>& tokens);
// The whole file; ValueError naming it when it cannot be read.
std::string read_file(const std::filesystem::path& path);

}  // namespace cunumpy::detail
