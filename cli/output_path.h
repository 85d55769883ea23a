// The outputs of a command, opened before its work: every file option a subcommand writes
// (pack -o, run -o, conformance --json / --junit) goes through open_output() first thing, so
// a bad path costs milliseconds, not the minutes of work before it. What a path may name
// (a file, a symlink, a FIFO, a character device, "-" for stdout) is artifacts/atomic_file.h.
//
// Exit status of a refused path: 2, a usage error (the path given on the command line cannot be
// an output: no such folder, a folder, not writable, read-only, one of the command's inputs, the
// same file as another output); a failure of the system while opening it is 1.
#pragma once

#include <string>
#include <vector>

#include "artifacts/atomic_file.h"
#include <twinbit/status.hpp>

namespace twinbit::cli {

// Opens the output `path` given to `option` ("-o", "--json"). `inputs`: every file the command
// reads. `others`: outputs the command already opened; the same file twice is refused, since
// the second would replace the first. Errors name the option.
Result<artifact::OutputFile> open_output(const std::string& option, const std::string& path,
                                         const std::vector<std::string>& inputs,
                                         const std::vector<const artifact::OutputFile*>& others = {});

// Prints "twinbit <command>: <CODE>: <message>" on stderr; returns 2 for INVALID_ARGUMENT (a
// path refused: usage), else 1.
int fail_output(const char* command, const Status& status);

}  // namespace twinbit::cli
