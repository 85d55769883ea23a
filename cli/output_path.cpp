#include "cli/output_path.h"

#include "cli/cli_common.h"

namespace twinbit::cli {

Result<artifact::OutputFile> open_output(const std::string& option, const std::string& path,
                                         const std::vector<std::string>& inputs,
                                         const std::vector<const artifact::OutputFile*>& others) {
  artifact::OutputRules rules;
  rules.inputs = inputs;
  auto out = artifact::OutputFile::open(path, rules);
  if (!out.ok()) return Status(out.status().code(), option + ": " + out.status().message());
  for (const artifact::OutputFile* other : others) {
    if (other && other->kind() == artifact::OutputFile::Kind::replace_file &&
        out->kind() == artifact::OutputFile::Kind::replace_file && other->target() == out->target()) {
      return Error(TB_INVALID_ARGUMENT, "%s: %s is the same file as the output %s: the second "
                   "write would replace the first", option.c_str(), path.c_str(), other->path().c_str());
    }
  }
  return out;
}

int fail_output(const char* command, const Status& status) {
  fail(command, status);
  return status.code() == TB_INVALID_ARGUMENT ? 2 : 1;
}

}  // namespace twinbit::cli
