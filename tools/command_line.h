// The `rudra` command line (CLI11): every subcommand and its options, parsed into the commands'
// typed option structs (tools/commands.h).
#pragma once
#include <CLI/CLI.hpp>

#include "tools/commands.h"

namespace rudra::tools {

struct CommandLine {
    CommandLine();  // defines every subcommand and option
    CommandLine(const CommandLine&) = delete;
    CommandLine& operator=(const CommandLine&) = delete;

    CLI::App app;
    int threads = 0;  // -t, --threads (0: the OpenMP setting)
    TrainOptions train;
    TestOptions test;
    TimeOptions time;
    InfoOptions info;
    ConvertOptions convert;
    MeanOptions mean;
    InputOptions input;
    BenchOptions bench;
#ifdef RUDRA_HAVE_MPI
    DistOptions dist;
    CheckpointOptions checkpoint;
#endif
};

}  // namespace rudra::tools
