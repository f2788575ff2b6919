// `rudra dist`'s exit codes (README, "Faults"): 0 done, 1 bad input, 3 stopped because a learner
// was lost (hardsync, all-reduce, gossip, or every learner), 4 rank 0 was lost, 130 stopped by a signal
// (with a checkpoint to go on from).
#pragma once

namespace rudra::tools {

constexpr int kExitLearnerLost = 3, kExitPsLost = 4, kExitStopped = 130;

}  // namespace rudra::tools
