#include "tools/command_line.h"

#include <string>

#include "dist/ps/protocol.h"
#include "kernels/isa.h"
#include "tools/cli_checks.h"

namespace rudra::tools {
namespace {

void add_data_options(CLI::App* cmd, DataOptions& d) {
    cmd->add_option("--data", d.dir,
                    "where the data sets are: a folder of IDX or CIFAR-10 binary files, a folder with train/ and val/ "
                    "folders of class folders, or the folder the net's Data-layer sources (LMDB, ImageData list, "
                    "class folders) are read under (default: the sources as the net names them, relative to the "
                    "working directory; /usr/share/datasets/fashion-mnist when it names none)");
    cmd->add_option("--format", d.format, "data set format")
        ->check(CLI::IsMember({"auto", "idx", "cifar10"}))
        ->capture_default_str();
    cmd->add_option("--train-limit", d.train_limit, "use only the first N training images (0: all)")
        ->check(checks::kNonNegativeInteger);
    cmd->add_option("--test-limit", d.test_limit, "use only the first N test images (0: all)")
        ->check(checks::kNonNegativeInteger);
    cmd->add_option("--mean", d.mean,
                    "the mean image to subtract: a Caffe mean file (binaryproto, as `rudra mean` or compute_image_mean "
                    "writes it) in place of the Data layers' mean_file, or 'compute' for the per-pixel mean of the "
                    "training set");
    cmd->add_option("--bad-image", d.bad_image,
                    "a record that cannot be read (a corrupt image, a Datum of the wrong size, a label outside the "
                    "net's classes): stop the run, or skip it (each skipped record is counted and logged)")
        ->check(CLI::IsMember({"stop", "skip"}))
        ->capture_default_str();
    cmd->add_option("--decode-threads", d.decode_threads,
                    "threads that read, decode and transform each training batch ahead of the computation (for "
                    "image files and LMDBs), placed on the I/O thread's CPUs")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
}

void add_resize_options(CLI::App* cmd, int& height, int& width) {
    cmd->add_option("--resize-height", height, "resize every image to this height (with --resize-width)")
        ->check(CLI::Range(1, 1 << 15));
    cmd->add_option("--resize-width", width, "resize every image to this width (with --resize-height)")
        ->check(CLI::Range(1, 1 << 15));
}

void add_kernel_options(CLI::App* cmd, nn::KernelOptions& k) {
    cmd->add_option("--conv-backend", k.conv,
                    "backend of the convolution and inner-product layers: own, own_bf16, blis, onednn, onednn_bf16, reference "
                    "or auto (measure each layer once, cached), optionally followed by per-layer choices, e.g. "
                    "auto,conv1=onednn or own,fc6=onednn+blis (the second for backward-data)")
        ->capture_default_str();
    cmd->add_option("--precision", k.precision,
                    "fp32, or bf16: convolutions and inner products on own (or auto) take BF16 inputs with FP32 "
                    "sums where the CPU has BF16 dot products (avx512_bf16, POWER10 mma); elsewhere it says so and runs fp32")
        ->check(CLI::IsMember({"fp32", "bf16"}))
        ->capture_default_str();
    cmd->add_option("--auto-cache", k.auto_cache,
                    "cache file of --conv-backend auto ('default': $RUDRA_CACHE_DIR, $XDG_CACHE_HOME/rudra or "
                    "~/.cache/rudra; '': do not cache)")
        ->capture_default_str();
}

void add_train(CLI::App& app, TrainOptions& train, int& threads) {
    auto* t = app.add_subcommand("train", "train a net from a Caffe solver file");
    t->add_option("solver", train.solver, "solver prototxt")->required()->check(CLI::ExistingFile);
    add_data_options(t, train.data);
    add_kernel_options(t, train.kernels);
    t->add_option("--bind", train.bind, "pin threads and memory with hwloc: on, auto (when cores are not oversubscribed), off")
        ->check(CLI::IsMember({"on", "auto", "off"}))
        ->capture_default_str();
    t->add_option("--epochs", train.epochs, "epochs to train (overrides the solver's max_iter)")
        ->check(checks::kPositiveNumber);
    t->add_option("--batch", train.batch, "mini-batch size (overrides the Data layer's batch_size)")
        ->check(checks::kPositiveInt);
    t->add_option("--seed", train.seed, "random seed for initialisation and sampling")->check(checks::kNonNegativeInteger);
    t->add_option("-o,--output", train.output, "directory for metrics.jsonl and snapshots")->capture_default_str();
    t->add_option("--resume", train.resume, "continue from this snapshot of a rudra train run (its weights, solver history and data position)")->check(CLI::ExistingFile);
    t->add_flag("--overwrite", train.overwrite,
                "replace the files of another run in the output directory (without it, a new run refuses them)");
    t->add_option("-t,--threads", threads, "OpenMP threads (default: all cores)")->check(checks::kPositiveInt);
}

void add_test(CLI::App& app, TestOptions& test, int& threads) {
    auto* e = app.add_subcommand("test", "evaluate a snapshot on the test set");
    e->add_option("model", test.model, "solver or net prototxt")->required()->check(CLI::ExistingFile);
    e->add_option("snapshot", test.snapshot, "snapshot file written by rudra train")->required()->check(CLI::ExistingFile);
    add_data_options(e, test.data);
    add_kernel_options(e, test.kernels);
    e->add_option("--batch", test.batch, "mini-batch size for evaluation")->check(checks::kPositiveInt);
    e->add_option("-t,--threads", threads, "OpenMP threads (default: all cores)")->check(checks::kPositiveInt);
}

void add_time(CLI::App& app, TimeOptions& time, int& threads) {
    auto* m = app.add_subcommand("time", "time forward and backward per layer");
    m->add_option("model", time.model, "solver or net prototxt")->required()->check(CLI::ExistingFile);
    add_kernel_options(m, time.kernels);
    m->add_option("--batch", time.batch, "mini-batch size (default: the file's)")->check(checks::kPositiveInt);
    m->add_option("--iterations", time.iterations, "timed iterations")->check(checks::kPositiveInt)->capture_default_str();
    m->add_option("--input-shape", time.input_shape, "sample shape C,H,W for nets with a Data layer");
    m->add_option("--phase", time.phase, "net phase")->check(CLI::IsMember({"train", "test"}))->capture_default_str();
    m->add_option("--json", time.json, "also write the timings as a JSON line to this file");
    m->add_option("-t,--threads", threads, "OpenMP threads (default: all cores)")->check(checks::kPositiveInt);
}

void add_info(CLI::App& app, InfoOptions& info) {
    auto* i = app.add_subcommand("info", "topology, CPU features and ISA gate, each operation's implementations, backends and the thread placement plan");
    i->add_option("--ranks", info.ranks, "ranks on one node to plan for")->check(checks::kPositiveInt)->capture_default_str();
    i->add_option("--threads-per-rank", info.threads, "threads of each rank (default: the OpenMP setting)")
        ->check(checks::kPositiveInt);
    i->add_option("--topology", info.topology, "plan on an hwloc synthetic topology, e.g. \"pack:2 numa:2 core:11 pu:4\"");
}

void add_convert(CLI::App& app, ConvertOptions& convert) {
    auto* cv = app.add_subcommand("convert", "images into an LMDB of Caffe Datums, as Caffe's convert_imageset: "
                                             "rudra convert (CLASS_FOLDERS | LIST --root DIR) OUT_LMDB");
    cv->add_option("input", convert.input, "a folder of class folders, or an ImageData list of 'path label' lines")
        ->required()
        ->check(CLI::ExistingPath);
    cv->add_option("output", convert.output, "the LMDB folder to make (must not exist)")->required();
    cv->add_option("--root", convert.root, "the list's root folder, prepended to its paths as written");
    cv->add_flag("--gray", convert.gray, "store one grey channel (default: B, G, R)");
    cv->add_flag("--encoded", convert.encoded, "store the image files' bytes (JPEG, PNG) instead of pixels");
    add_resize_options(cv, convert.new_height, convert.new_width);
    cv->add_flag("--shuffle", convert.shuffle, "store the images in a random order (seeded by --seed)");
    cv->add_option("--seed", convert.seed, "seed of --shuffle")->capture_default_str();
}

void add_mean(CLI::App& app, MeanOptions& mean) {
    auto* mn = app.add_subcommand("mean", "a set's mean image as a Caffe mean file (binaryproto), as compute_image_mean: "
                                          "rudra mean SET OUT.binaryproto");
    mn->add_option("input", mean.input,
                   "an LMDB, a folder of class folders, a folder of IDX or CIFAR-10 files (its training part), or an "
                   "ImageData list")
        ->required()
        ->check(CLI::ExistingPath);
    mn->add_option("output", mean.output, "the mean file to write")->required();
    mn->add_option("--root", mean.root, "a list's root folder");
    mn->add_flag("--gray", mean.gray, "read images as one grey channel");
    add_resize_options(mn, mean.new_height, mean.new_width);
}

void add_input(CLI::App& app, InputOptions& input) {
    auto* in = app.add_subcommand("input", "the input pipeline alone: read, decode, resize, crop, mirror and mean-subtract "
                                           "batches of a set with the decode threads, in images/s");
    in->add_option("input", input.input, "an LMDB, a folder of class folders, a folder of IDX or CIFAR-10 files, or a list")
        ->required()
        ->check(CLI::ExistingPath);
    in->add_option("--root", input.root, "a list's root folder");
    in->add_flag("--gray", input.gray, "read images as one grey channel");
    add_resize_options(in, input.new_height, input.new_width);
    in->add_option("--crop", input.crop, "random crop of this size (0: none)")->check(CLI::Range(0, 1 << 15));
    in->add_flag("--mirror", input.mirror, "random mirror");
    in->add_option("--mean-value", input.mean_values, "per-channel mean to subtract (B,G,R)")->delimiter(',');
    in->add_option("--scale", input.scale, "scale after the mean")->capture_default_str();
    in->add_option("--batch", input.batch, "images per batch")->check(checks::kPositiveInt)->capture_default_str();
    in->add_option("--batches", input.batches, "batches timed")->check(checks::kPositiveInt)->capture_default_str();
    in->add_option("--decode-threads", input.decode_threads, "threads that read and decode")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
}

void add_bench(CLI::App& app, BenchOptions& bench) {
    auto* b = app.add_subcommand("bench", "kernel throughput: own SGEMM and convolutions against BLIS, oneDNN and "
                                          "OpenBLAS, side by side, in GFLOP/s and % of the measured peak");
    b->add_option("problems", bench.problems,
                  "benchdnn-style descriptors: mb128ic3ih32oc32oh32kh5ph2 (convolution), m2048n2048k2048[ta][tb] (GEMM), "
                  "pool_max:mb128ic32ih32kh3sh2, pool_ave:..., lrn_within:mb128ic32ih16ls3, lrn_across:..., ip:mb128ic1024oc10");
    b->add_option("--batch-file", bench.batch_files, "file of descriptors, one per line ('#' comments)")
        ->check(CLI::ExistingFile);
    b->add_option("--mb", bench.minibatches, "mini-batch sweep for convolutions, e.g. 1,4,16,64,128,256")
        ->delimiter(',')
        ->check(checks::kPositiveInt);
    b->add_option("--backends", bench.backends, "comma-separated: own, blis, onednn, openblas (GEMM), own_bf16, onednn_bf16 (GEMM and convolution "
                   "with BF16 inputs and FP32 sums), reference (pooling and LRN: own only)")
        ->delimiter(',')
        ->check(CLI::IsMember({"own", "blis", "onednn", "openblas", "own_bf16", "onednn_bf16", "reference"}))
        ->capture_default_str();
    b->add_option("--threads", bench.threads, "comma-separated thread counts (default: the OpenMP setting)")
        ->delimiter(',')
        ->check(checks::kPositiveInt);
    b->add_option("--passes", bench.passes, "passes, comma-separated: fwd, bwd_data, bwd_weights (convolution and inner product)")
        ->delimiter(',')
        ->check(CLI::IsMember({"fwd", "bwd_data", "bwd_weights"}))
        ->capture_default_str();
    b->add_option("--format", bench.format, "output format")->check(CLI::IsMember({"table", "csv", "jsonl"}))->capture_default_str();
    b->add_option("-o,--output", bench.output, "write the csv/jsonl rows to this file (a table still goes to stdout)");
    b->add_option("--min-time", bench.min_time, "seconds of timing per problem and backend")
        ->check(checks::kPositiveNumber)
        ->capture_default_str();
}

#ifdef RUDRA_HAVE_MPI
// rudra dist: the ranks' threads and waits, the output, resume and checkpoints.
void add_dist_job_options(CLI::App* d, DistOptions& dist) {
    d->add_option("--threads-per-rank", dist.threads, "OpenMP threads of each rank")->check(checks::kPositiveInt)->capture_default_str();
    d->add_option("--wait-spin", dist.wait_spin, "MPI tests before sleeping while waiting (default 50)")
        ->check(checks::kNonNegativeInt);
    d->add_option("--wait-sleep-us", dist.wait_sleep_us,
                  "sleep between MPI tests; 0 spins (default: 2000 when the node's ranks x threads exceed its cores, else 20)")
        ->check(checks::integer_in(0, 1000000, "a number of microseconds"));
    d->add_option("-o,--output", dist.output,
                  "directory for metrics.jsonl, staleness.json, checkpoint.rudra and final.rudra (with --resume: the "
                  "checkpoint's)")
        ->capture_default_str();
    d->add_option("--resume", dist.resume,
                  "go on from a checkpoint (a file, or the output directory of the run): its weights, history, "
                  "statistics, sample positions and settings; --epochs may raise the total, and the learner count may "
                  "differ")
        ->check(CLI::ExistingPath);
    d->add_option("--replay", dist.replay,
                  "compute a finished (or stopped) parameter-server run again in one process, without mpiexec, from "
                  "the schedule its PS recorded (RUN/schedule.txt): the same gradients in the same order, so the same "
                  "final weights, compared with RUN/final.rudra; output in -o (default RUN/replay). It checkpoints like a run; "
                  "with --resume REPLAYDIR it goes on from a stopped replay's checkpoint; with --wire, the run's schedule "
                  "computed with the other rounding (not compared)")
        ->check(CLI::ExistingPath);
    d->add_option("--checkpoint-every", dist.checkpoint_every,
                  "checkpoint every N updates (all-reduce: steps), Ns seconds or Nm minutes (0: only at epoch ends "
                  "and on signals; gossip checkpoints at epoch ends only)")
        ->capture_default_str();
}

// rudra dist: the methods' own settings (backups, EASGD, gossip, a straggler, the trees), the
// display, the trace, the node's shared data and the fault timeouts.
void add_dist_method_options(CLI::App* d, DistOptions& dist) {
    d->add_option("--backup", dist.backup,
                  "hardsync: B backup learners; an update averages the first learners - B gradients of its "
                  "timestamp and drops the late ones")
        ->check(checks::kNonNegativeInt)
        ->capture_default_str();
    d->add_option("--k", dist.k,
                  "ksync: an update averages the first K gradients of the current weights (the late ones are "
                  "dropped); kasync: any K gradients (K-batch-async)")
        ->check(checks::kPositiveInt);
    d->add_option("--max-staleness", dist.max_staleness,
                  "softsync, async, kasync: the PS refuses (and counts) a gradient more than S updates old, and a learner "
                  "computes only on the weights its last pull brought (default: no bound)")
        ->check(checks::kNonNegativeInt);
    d->add_option("--tau", dist.tau, "easgd, gossip: local steps between exchanges (with the centre, or with a peer)")
        ->check(checks::kPositiveInt)
        ->capture_default_str();
    d->add_option("--beta", dist.beta, "easgd: moving rate in (0, 1] (default 0.9 / learners)");
    d->add_option("--straggler", dist.straggler,
                  "RANK:FACTOR[:P] or all:FACTOR[:P]: slow that learner's (every learner's) compute FACTOR times by "
                  "sleeping, each mini-batch with probability P (default 1) (experiments with stragglers)");
    d->add_flag("--json", dist.json,
                "print the metrics lines (epochs, lost learners, stops) on stdout as JSON, as metrics.jsonl has them, "
                "instead of readable lines");
    d->add_option("--progress", dist.progress,
                  "progress within an epoch: bar (redrawn on stderr), lines (one every 30 s), off; auto: bar when "
                  "rank 1's stderr is a terminal, else lines (under mpiexec it is a pipe: ask for bar)")
        ->check(CLI::IsMember({"auto", "bar", "lines", "off"}))
        ->capture_default_str();
    d->add_option("--topology", dist.topology,
                  "base: every learner talks to rank 0; adv: a tree of parameter servers, a leaf PS on each node "
                  "summing its learners' gradients (Rudra-adv); adv*: adv, and the weights go down a broadcast tree "
                  "over the learners instead of being pulled (Rudra-adv*)")
        ->check(CLI::IsMember({"base", "adv", "adv*"}))
        ->capture_default_str();
    d->add_option("--ranks-per-node", dist.ranks_per_node,
                  "adv, adv*: take each K consecutive ranks for a node (emulates nodes on one machine; default: the real nodes)")
        ->check(checks::kPositiveInt);
    d->add_option("--fan-out", dist.fan_out, "adv, adv*: leaf parameter servers below each parent (default: all below the root)")
        ->check(checks::kPositiveInt);
    d->add_option("--broadcast-fan-out", dist.broadcast_fan_out,
                  "adv*: learners the root, and then each learner, forwards the weights to")
        ->check(checks::kPositiveInt)
        ->capture_default_str();
    d->add_option("--timeline", dist.timeline,
                  "FILE: write every rank's compute, pull, push, wait and PS-update spans as a Chrome trace (open it in "
                  "Perfetto or chrome://tracing)");
    d->add_option_function<std::string>(
        "--ps-receive-ahead", [&dist](const std::string& v) { dist.ps_receive_ahead = v == "on"; },
        "on: a thread of the PS receives the next message while the PS applies the last one; off: the PS receives "
        "each message itself (default)")
        ->check(CLI::IsMember({"on", "off"}));
    d->add_option("--wire", dist.wire,
                  "fp32, or bf16: weights and gradients travel as BF16 (half the bytes, rounded to nearest even); "
                  "what each rank keeps stays FP32. Parameter-server protocols (learners push BF16 gradients, pull "
                  "BF16 weights; the PS keeps FP32 weights and solver state; a leaf PS sums in FP32 and sends the sum "
                  "up in BF16; adv* broadcasts BF16 weights), EASGD, all-reduce "
                  "(BF16 sums, each partial sum rounded) and gossip (BF16 models exchanged)")
        ->check(CLI::IsMember({"fp32", "bf16"}))
        ->capture_default_str();
    d->add_option("--node-data-dir", dist.node_data_dir,
                  "DIR: one rank per node writes the data set here (a memory file system) and every rank of the node "
                  "maps that one copy; \"\": each rank holds a copy of its own")
        ->capture_default_str();
    d->add_option("--peer-timeout", dist.peer_timeout,
                  "seconds without a heartbeat after which a rank is lost: a learner is dropped (softsync, async) or "
                  "stops the run (hardsync); learners end when the PS falls silent. A rank whose message is "
                  "arriving (its heartbeats wait behind it) is lost only after 4 times this")
        ->check(checks::number_in(0.0, 86400.0, true, false, "a number of seconds above 0 and at most 86400"))
        ->capture_default_str();
    d->add_option("--startup-timeout", dist.startup_timeout,
                  "seconds a rank may take from its start until training starts (MPI, data, nets, every rank "
                  "ready); past it the job ends, and a rank that dies while starting ends it within --peer-timeout")
        ->check(checks::number_in(0.0, 86400.0, true, false, "a number of seconds above 0 and at most 86400"))
        ->capture_default_str();
    d->add_flag("--overwrite", dist.overwrite,
                "replace the files of another run in the output directory (without it, a new run refuses them; "
                "--resume goes on with them)");
}

void add_dist(CLI::App& app, DistOptions& dist) {
    auto* d = app.add_subcommand("dist", "distributed training: mpiexec -n K rudra dist SOLVER (rank 0 parameter server, "
                                         "rank 1 statistics server, K-2 learners)");
    d->add_option("solver", dist.solver, "solver prototxt (not needed with --resume)")->check(CLI::ExistingFile);
    add_data_options(d, dist.data);
    add_kernel_options(d, dist.kernels);
    d->add_option("--bind", dist.bind,
                  "pin each rank's threads and memory to its share of the node (hwloc): on, auto (when the node's "
                  "ranks x threads fit its PUs), off")
        ->check(CLI::IsMember({"on", "auto", "off"}))
        ->capture_default_str();
    d->add_option("--protocol", dist.protocol,
                  "synchronisation protocol: hardsync, softsync, async, ksync, kasync, easgd (parameter server); "
                  "allreduce, gossip-pull, gossip-push (none)")
        ->check(CLI::Validator(
            [](std::string& s) -> std::string {
                try {
                    dist::Protocol::kind_named(s);
                    return "";
                } catch (const std::exception& e) {
                    return e.what();
                }
            },
            "PROTOCOL"))
        ->capture_default_str();
    d->add_option("--n", dist.n, "n of n-softsync: an update averages floor(learners / n) gradients")
        ->check(checks::kPositiveInt)
        ->capture_default_str();
    d->add_option("--batch", dist.batch, "mini-batch per learner (mu; default: the Data layer's)")->check(checks::kPositiveInt);
    d->add_option("--epochs", dist.epochs, "epochs (gradients covering the training set once)")
        ->check(checks::kPositiveInt)
        ->capture_default_str();
    d->add_option_function<std::string>(
        "--mode", [&dist](const std::string& v) { dist.mode = dist::run::learner_mode_named(v); },
        "base (default): wait for each pull; overlap: compute while pulling")
        ->check(CLI::IsMember({"base", "overlap"}));
    d->add_option("--lr-modulation", dist.lr_modulation,
                  "none, average (alpha0/<sigma>, default for softsync) or per-gradient (alpha0/max(sigma,1))")
        ->check(CLI::IsMember({"none", "average", "per-gradient"}));
    d->add_flag("--momentum-compensation", dist.momentum_compensation,
                "lower the solver's momentum m to 1-(1-m)(1+<sigma>) for stale gradients (asynchrony acts as momentum)");
    d->add_option("--reference-batch", dist.reference_batch, "B of hardsync's alpha0*sqrt(lambda*mu/B) and of the lr schedule")
        ->check(checks::kPositiveInt);
    d->add_option("--base-lr", dist.base_lr, "alpha0 (overrides the solver's base_lr)")->check(checks::kPositiveNumber);
    d->add_option("--momentum", dist.momentum, "the PS's momentum (overrides the solver's; stale gradients add their own)")
        ->check(checks::number_in(0.0, 1.0, false, true, "in [0, 1)"));
    d->add_option("--warm-start", dist.warm_start, "go on from this snapshot: its weights, momentum, schedule position and epochs (--epochs counts the total)")->check(CLI::ExistingFile);
    d->add_option("--seed", dist.seed, "random seed")->check(checks::kNonNegativeInteger);
    add_dist_job_options(d, dist);
    add_dist_method_options(d, dist);
}

void add_checkpoint(CLI::App& app, CheckpointOptions& checkpoint) {
    auto* c = app.add_subcommand("checkpoint", "where a run's checkpoint stands (epoch, samples, updates...; rudra dist's, or a rudra train snapshot), "
                                               "as one JSON line");
    c->add_option("path", checkpoint.path, "a checkpoint, or the output directory of a run")
        ->required()
        ->check(CLI::ExistingPath);
    c->add_option("--field", checkpoint.field, "print only this field's value (e.g. samples)");
}
#endif

}  // namespace

CommandLine::CommandLine() : app("rudra: a deep learning engine for CPU clusters (Caffe prototxt models, SGD solvers)") {
    app.require_subcommand(1);
    app.footer(
        "Environment:\n"
        "  RUDRA_ISA=LEVEL       cap the instruction sets of every kernel (" + kernels::isa_level_names() +
        " here;\n"
        "                        default: the highest this CPU has); `rudra info` lists what each operation runs\n"
        "  RUDRA_SGEMM_BLOCKS=mc,kc,nc  the own SGEMM's cache blocks\n"
        "  RUDRA_VERBOSE=1       print the kernel choices");
    // A later value replaces an earlier one, so that scripts can be given overrides
    // (tools/run-main.sh --epochs 2).
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.add_option("-t,--threads", threads, "OpenMP threads (default: all cores)")->check(checks::kPositiveInt);
    add_train(app, train, threads);
    add_test(app, test, threads);
    add_time(app, time, threads);
    add_info(app, info);
    add_convert(app, convert);
    add_mean(app, mean);
    add_input(app, input);
    add_bench(app, bench);
#ifdef RUDRA_HAVE_MPI
    add_dist(app, dist);
    add_checkpoint(app, checkpoint);
#endif
}

}  // namespace rudra::tools
