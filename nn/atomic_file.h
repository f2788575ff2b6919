// Files that are either whole or absent under their name: the bytes go to "<path>.tmp", are
// flushed to the disk (fsync), and the file is renamed into place, then the directory is synced
// so that the rename itself survives a power cut. A crash at any point leaves the previous file
// (or none) under the real name, and at most a stale .tmp beside it.
#pragma once
#include <string>

namespace rudra::nn {

// Throws std::runtime_error naming the file and the problem (cannot create, disk full, rename).
void write_file_atomically(const std::string& path, const std::string& bytes);

// Removes "<path>.tmp" left by a writer that was killed; true when there was one.
bool remove_stale_tmp(const std::string& path);

}  // namespace rudra::nn
