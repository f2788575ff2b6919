// Exit codes of `rudra` (docs/faults.md): 0 done, 1 bad input, 3 stopped because a rank was
// lost (a learner under hardsync, all-reduce or gossip, every learner, or any rank during
// start-up), 4 rank 0 was lost, 5 a file could not be written (disk full, quota, permissions:
// the previous checkpoint is kept; not worth retrying until the cause is fixed), 130 stopped by a
// signal (with a checkpoint to go on from).
#pragma once

namespace rudra::session {

constexpr int kExitLearnerLost = 3, kExitPsLost = 4, kExitWriteFailed = 5, kExitStopped = 130;

}  // namespace rudra::session
