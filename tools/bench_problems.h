// `rudra bench`'s problems: the descriptor grammar of kernels/problems.h, and batch files of them.
#pragma once
#include <string>
#include <vector>

#include "kernels/problems.h"

namespace rudra::tools {

using BenchProblem = kernels::Problem;
using kernels::GemmShape;
using kernels::ProblemKind;
using kernels::parse_problem;
using kernels::with_minibatch;

// Reads one problem per line; '#' starts a comment. Errors name file:line.
std::vector<BenchProblem> read_batch_file(const std::string& path);

}  // namespace rudra::tools
