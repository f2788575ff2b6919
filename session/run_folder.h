// An output folder belongs to one run. A fresh run refuses a folder that holds another run's
// files (its metrics, snapshots, checkpoint or final model) instead of truncating and replacing
// them; a resumed run goes on with the files there; --overwrite removes them first. While a run
// lives it holds a lock on OUTDIR/.rudra-lock (flock: released by the kernel when the holder
// dies, however it dies), so a second live job on the same folder is refused.
#pragma once
#include <string>
#include <vector>

namespace rudra::session {

class RunFolder {
public:
    enum class Start { Fresh, Resume, Overwrite };
    // Creates `dir` when needed and takes its lock. `resume_hint` is the option that goes on with
    // the run found there ("--resume DIR"; empty: none), named in the refusal. Throws std::runtime_error naming
    // the folder and what is wrong (occupied, locked by a live run: its pid and host) and
    // nn::WriteError when the folder cannot be created or written.
    RunFolder(std::string dir, Start start, const std::string& resume_hint);
    ~RunFolder();  // releases the lock
    RunFolder(const RunFolder&) = delete;
    RunFolder& operator=(const RunFolder&) = delete;
    const std::string& dir() const { return dir_; }

    // The files of a run in `dir`: metrics.jsonl, staleness.json, *.rudra snapshots and
    // checkpoints (temporary ones included), the gossip peers and timeline parts; names only.
    static std::vector<std::string> run_files(const std::string& dir);

private:
    std::string dir_;
    int lock_fd_ = -1;
};

}  // namespace rudra::session
