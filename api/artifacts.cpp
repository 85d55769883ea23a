// The host C API's artifact calls (include/twinbit/artifact.h) over twinbit::artifact::Artifact.
#include <twinbit/artifact.h>

#include "api/call_guard.h"
#include "api/handles.h"

using twinbit::Error;
using twinbit::Status;
using twinbit::api::check_open;
using twinbit::api::guarded;
using twinbit::api::HandleKind;
using twinbit::api::null_argument;

extern "C" {

tb_code tb_artifact_open(const char* path, tb_artifact** out) {
  return guarded("tb_artifact_open", [&]() -> Status {
    if (out == nullptr) return null_argument("out");
    *out = nullptr;
    if (path == nullptr) return null_argument("path");
    auto art = twinbit::artifact::Artifact::open(path);
    if (!art.ok()) return art.status();
    auto handle = std::make_unique<tb_artifact>(tb_artifact{std::move(art.value())});
    twinbit::api::publish(std::move(handle), HandleKind::kArtifact, out);
    return Status();
  });
}

tb_code tb_artifact_verify(const tb_artifact* art) {
  return guarded("tb_artifact_verify", [&]() -> Status {
    TB_RETURN_IF_ERROR(check_open(art, HandleKind::kArtifact, "art"));
    for (const twinbit::artifact::Entry& e : art->art->entries()) TB_RETURN_IF_ERROR(art->art->verify(e));
    return Status();
  });
}

tb_code tb_artifact_entry_count(const tb_artifact* art, size_t* count) {
  return guarded("tb_artifact_entry_count", [&]() -> Status {
    TB_RETURN_IF_ERROR(check_open(art, HandleKind::kArtifact, "art"));
    if (count == nullptr) return null_argument("count");
    *count = art->art->entries().size();
    return Status();
  });
}

tb_code tb_artifact_entry(const tb_artifact* art, size_t index, tb_entry_info* info) {
  return guarded("tb_artifact_entry", [&]() -> Status {
    TB_RETURN_IF_ERROR(check_open(art, HandleKind::kArtifact, "art"));
    if (info == nullptr) return null_argument("info");
    const size_t count = art->art->entries().size();
    if (index >= count) return Error(TB_INVALID_ARGUMENT, "index %zu is out of range: %s has %zu entries", index, art->art->path().c_str(), count);
    *info = twinbit::api::entry_info(art->art->entries()[index]);
    return Status();
  });
}

tb_code tb_artifact_find(const tb_artifact* art, const char* name, size_t* index) {
  return guarded("tb_artifact_find", [&]() -> Status {
    TB_RETURN_IF_ERROR(check_open(art, HandleKind::kArtifact, "art"));
    if (name == nullptr) return null_argument("name");
    if (index == nullptr) return null_argument("index");
    const twinbit::artifact::Entry* e = art->art->find(name);
    if (e == nullptr) return Error(TB_INVALID_ARGUMENT, "no entry '%s' in %s", name, art->art->path().c_str());
    *index = static_cast<size_t>(e - art->art->entries().data());
    return Status();
  });
}

void tb_artifact_close(tb_artifact* art) {
  if (art != nullptr && twinbit::api::untrack(art, HandleKind::kArtifact)) delete art;
}

}  // extern "C"
