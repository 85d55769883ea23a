// The suite's view of the registry: backends by built-in name or plugin path, with the
// capability tags each one declares in describe().features.
#include <sstream>

#include "conformance/conformance.h"

namespace twinbit::conformance {

std::vector<std::string> split_tags(const std::string& features) {
  std::vector<std::string> tags;
  std::stringstream in(features);
  std::string t;
  while (std::getline(in, t, ',')) {
    const size_t b = t.find_first_not_of(' ');
    const size_t e = t.find_last_not_of(' ');
    if (b != std::string::npos) tags.push_back(t.substr(b, e - b + 1));
  }
  return tags;
}

bool has_tag(const std::string& features, const std::string& tag) {
  for (const std::string& t : split_tags(features)) {
    if (t == tag) return true;
  }
  return false;
}

std::vector<BackendListing> list_builtin_backends() {
  std::vector<BackendListing> out;
  for (const BackendEntry& e : builtin_backends()) {
    BackendListing l;
    l.name = e.name;
    l.source = "built in";
    auto b = create_backend(e.name);
    if (b.ok()) {
      l.available = true;
      l.device = b->device();
      l.tags = split_tags(b->features());
    } else {
      l.why_not = b.status().to_string();
    }
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace twinbit::conformance
