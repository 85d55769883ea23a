// The table of open handles: every open call adds its handle, every close removes it, and every
// other call checks its handles against it, so a closed handle is refused instead of being read.
#include "api/handles.h"

#include <mutex>
#include <unordered_map>

namespace twinbit::api {
namespace {

std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}

std::unordered_map<const void*, HandleKind>& table() {
  static auto* t = new std::unordered_map<const void*, HandleKind>();  // never destroyed: usable at exit
  return *t;
}

const char* type_name(HandleKind kind) {
  switch (kind) {
    case HandleKind::kArtifact: return "tb_artifact";
    case HandleKind::kEngine: return "tb_engine";
    case HandleKind::kBound: return "tb_bound";
    case HandleKind::kRuntime: return "tb_runtime";
  }
  return "handle";
}

}  // namespace

void track_open(const void* handle, HandleKind kind) {
  std::lock_guard<std::mutex> lock(table_mutex());
  table()[handle] = kind;
}

bool untrack(const void* handle, HandleKind kind) {
  std::lock_guard<std::mutex> lock(table_mutex());
  auto it = table().find(handle);
  if (it == table().end() || it->second != kind) return false;
  table().erase(it);
  return true;
}

Status check_open(const void* handle, HandleKind kind, const char* arg) {
  if (handle == nullptr) return Error(TB_INVALID_ARGUMENT, "%s must not be NULL", arg);
  std::lock_guard<std::mutex> lock(table_mutex());
  auto it = table().find(handle);
  if (it == table().end()) {
    return Error(TB_INVALID_ARGUMENT, "%s is not an open %s (closed already, or never opened)", arg,
                 type_name(kind));
  }
  if (it->second != kind) {
    return Error(TB_INVALID_ARGUMENT, "%s is a %s, not a %s", arg, type_name(it->second), type_name(kind));
  }
  return Status();
}

tb_entry_info entry_info(const artifact::Entry& e) {
  tb_entry_info info{};
  info.name = e.name.c_str();
  info.kind = e.kind;
  if (e.kind == TB_WEIGHTS_STRIPS) {
    info.prec = e.prec;
    info.n = e.n;
    info.k = e.k;
  } else {
    info.rows = e.n;
    info.cols = e.k;
  }
  for (const artifact::Entry::Payload& p : e.payloads) info.bytes += p.bytes;
  return info;
}

}  // namespace twinbit::api
