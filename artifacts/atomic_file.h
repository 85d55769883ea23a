// OutputFile: the one way twinbit writes a file a user named. It is opened (every check made,
// the temporary created) before the work that produces the bytes, so a bad path is refused in
// milliseconds instead of after minutes of work, and it never destroys what is at the path:
//
//   What the path names            What happens
//   -----------------------------  ----------------------------------------------------------
//   nothing yet (folder exists)    a new regular file, mode 0644, appears complete at commit
//   a regular file                 replaced atomically at commit: a reader sees the old file or
//                                  the complete new one. Its mode bits (rwx) and, where the
//                                  process may set them, its owner and group are kept. A file
//                                  with no write bit (e.g. 0444) is refused, never replaced.
//   a symlink (chain)              followed: the file it finally points to is written as above
//                                  (created if the link dangles); the link itself stays
//   "-", /dev/stdout, /dev/fd/N,   streamed to that descriptor of this process (a dup of it):
//   /proc/self/fd/N, any link      no temporary, no rename; what stdio buffered on stdout and
//   into /proc/<this pid>/fd       stderr is flushed first so the order of output is kept
//   a FIFO, a character device     streamed (opened for writing; a FIFO's open waits for a
//                                  reader, as a shell's `>` does); it stays what it was
//   a folder, a socket, a block    refused (INVALID_ARGUMENT)
//   device, one of rules.inputs
//
// The atomic replacement: an unnamed temporary file (O_TMPFILE) in the target's folder is
// written, its mode and owner set, fsynced, linked under a temporary name, renamed over the
// target, and the folder is fsynced. A crash or kill before the link leaves nothing on disk.
// Where the filesystem has no O_TMPFILE, a named temporary ".twinbit-tmp-<name>-XXXXXX" is used
// instead; every temporary holds an exclusive flock while its writer lives, and open() removes
// the temporaries of that naming pattern in the folder whose writer is gone (killed), so a kill
// leaves at most one stale temporary, until the next write into that folder.
//
// Errors: INVALID_ARGUMENT for a path that cannot be an output (no such folder, a folder, not
// writable, read-only file, an input, unsupported file type: the caller's mistake, the CLI's
// usage error); UNAVAILABLE for a failure of the system while writing (disk full, I/O error),
// naming the path and the step. Not thread-safe; one writer per object. A stream cannot be
// taken back: bytes written before a failure have been sent.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include <twinbit/status.hpp>

namespace twinbit::artifact {

struct OutputRules {
  // The files the command reads (an artifact, an input, a plugin). The output may not be any
  // of them (same device and inode, however it is named); paths that do not exist are ignored.
  std::vector<std::string> inputs;
  // Use an unnamed temporary (O_TMPFILE) where the filesystem has it. False forces the named
  // fallback, so tests can cover it on any filesystem.
  bool unnamed_temporary = true;
};

class OutputFile {
 public:
  enum class Kind { replace_file, stream };

  // Checks `path` and opens it for writing as the table above says. Nothing visible changes at
  // the path until commit() (a stream excepted: it is open, nothing is written yet).
  static Result<OutputFile> open(const std::string& path, const OutputRules& rules = {});

  OutputFile(OutputFile&& o) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  ~OutputFile();  // not committed: the temporary is discarded, the target untouched

  // Appends bytes. After a failure the object is spent (the temporary discarded).
  Status write(const void* data, uint64_t bytes);
  // Overwrites bytes already written, [offset, offset + bytes) within bytes_written(), for a
  // writer that fills in a header once what follows it is known. Files being replaced only (a
  // stream cannot go back: FAILED_PRECONDITION). After a failure the object is spent.
  Status write_at(uint64_t offset, const void* data, uint64_t bytes);
  // Makes the output final (see the table) and closes it. After it, the object is spent.
  Status commit();

  Kind kind() const { return kind_; }
  const std::string& path() const { return path_; }  // as given
  // The file that is written: symlinks followed, folder absolute. For a stream, the path as given.
  const std::string& target() const { return target_; }
  // Whether the bytes go to this process's standard output (so the caller prints its own
  // text elsewhere).
  bool is_stdout() const { return is_stdout_; }
  uint64_t bytes_written() const { return written_; }

 private:
  OutputFile() = default;
  Status fail(const char* step, int err);  // discards, then the UNAVAILABLE error of the step
  void discard();
  Status open_temporary(const OutputRules& rules);
  Status link_and_rename();

  std::string path_, target_, dir_, name_, tmp_name_;  // tmp_name_: a named temporary in dir_
  Kind kind_ = Kind::replace_file;
  int fd_ = -1, dir_fd_ = -1;
  bool existed_ = false, is_stdout_ = false;
  mode_t mode_ = 0644;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  uint64_t written_ = 0;
};

// Removes the temporaries of OutputFile's naming pattern in `folder` whose writer is gone.
// Returns how many it removed. open() calls it; exposed for tests.
int remove_stale_temporaries(const std::string& folder);

// The whole dance for one buffer: open, write, commit.
Status write_output(const std::string& path, const void* data, uint64_t bytes,
                    const OutputRules& rules = {});

}  // namespace twinbit::artifact
