// Capability tags: what each backend declares in describe().features, split and looked up.
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

}  // namespace twinbit::conformance
