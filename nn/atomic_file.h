// Files that are either whole or absent under their name: the bytes go to "<path>.tmp", are
// flushed to the disk (fsync), and the file is renamed into place, then the directory is synced
// so that the rename itself survives a power cut. A crash at any point leaves the previous file
// (or none) under the real name, and at most a stale .tmp beside it.
#pragma once
#include <stdexcept>
#include <string>

namespace rudra::nn {

// A file that could not be written (no room, no permission, a folder that is gone): the message
// names the file and the operating system's reason. Distinct from bad input, so that a run can
// stop on it with an exit code of its own instead of blaming its input or a peer.
class WriteError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Throws WriteError naming the file and the problem (cannot create, disk full, rename). The
// temporary file is created exclusively and never through a symbolic link; one left by a writer
// that was killed is replaced.
void write_file_atomically(const std::string& path, const std::string& bytes);

// Removes "<path>.tmp" left by a writer that was killed; true when there was one.
bool remove_stale_tmp(const std::string& path);

// Throws WriteError unless a file can be created in the folder that would hold `path` (it exists
// and is writable): checked before work whose result would be written there.
void check_can_write(const std::string& path, const std::string& what);

}  // namespace rudra::nn
