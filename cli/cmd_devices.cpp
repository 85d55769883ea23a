// `twinbit devices`: the built-in backends, their devices and features as this machine sees them
// (core/registry.h list_backends): what a spec may name here, and why a backend cannot run.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/backend_option.h"
#include "cli/cli_common.h"
#include "core/registry.h"

namespace twinbit::cli {
namespace {

struct DevicesOptions {
  bool json = false;
};

}  // namespace

int print_backend_list(bool json) {
  const std::vector<BackendListing> all = list_backends();
  if (json) {
    nlohmann::json j;
    j["backends"] = nlohmann::json::array();
    for (const BackendListing& l : all) {
      nlohmann::json b = {{"name", l.name}, {"available", l.available}};
      if (!l.available) b["why_not"] = l.why_not;
      b["devices"] = nlohmann::json::array();
      for (const DeviceListing& d : l.devices) {
        nlohmann::json dj = {{"index", d.index}, {"name", d.name}, {"available", d.available},
                             {"spec", l.name + ":" + std::to_string(d.index)}};
        if (d.available) {
          dj["description"] = d.description;
          dj["features"] = d.features;
        } else {
          dj["why_not"] = d.why_not;
        }
        b["devices"].push_back(dj);
      }
      j["backends"].push_back(b);
    }
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  for (const BackendListing& l : all) {
    if (!l.available) {
      std::printf("%-6s not available here: %s\n", l.name.c_str(), l.why_not.c_str());
      continue;
    }
    for (const DeviceListing& d : l.devices) {
      const std::string spec = l.name + ":" + std::to_string(d.index);
      if (d.available) {
        std::printf("%-8s %s\n         features: %s\n", spec.c_str(), d.description.c_str(),
                    d.features.empty() ? "(none)" : d.features.c_str());
      } else {
        std::printf("%-8s %s: cannot be created: %s\n", spec.c_str(), d.name.c_str(),
                    d.why_not.c_str());
      }
    }
  }
  return kExitOk;
}

Command add_devices(CLI::App& root) {
  auto opt = std::make_shared<DevicesOptions>();
  CLI::App* app = root.add_subcommand(
      "devices",
      "List the built-in backends, each device they can be created on (as a spec NAME:DEVICE)\n"
      "with its description and feature tags, and the reason a backend cannot run here.");
  app->footer("Examples:\n"
              "  twinbit devices\n"
              "  twinbit devices --json\n" +
              std::string(kBackendOptionHelp));
  app->add_flag("--json", opt->json, "Print one JSON object {\"backends\": [...]}");
  return Command{app, [opt] { return print_backend_list(opt->json); }};
}

}  // namespace twinbit::cli
