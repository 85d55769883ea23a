// Naming a backend: one grammar, one parser, used everywhere a backend is named (the CLI's
// commands, the conformance suite, the benchmarks; the runtime's plans build on it).
//
//   SPEC   := NAME [ ":" DEVICE ] { "," KEY "=" VALUE }
//   NAME   := a built-in name, [a-z0-9_]+
//           | a plugin path: the whole text is a path when it starts with "/" or "." or contains
//             "/" (a path may contain ":" and ","), so a path takes no device or parameters here
//   DEVICE := a non-negative integer index, written without sign or leading zeros
//   KEY    := [a-z0-9_]+          VALUE := [A-Za-z0-9_.-]+
// e.g. "cpu", "cpu,threads=8,isa=fma3_avx2", "cuda", "cuda:1", "./libmyplugin.so".
//
// Reserved: "+" and "*" (the runtime joins split parts with "+" and gives fractions with "*"),
// refused anywhere in a spec, paths included, so a list of parts can always be cut first.
// Whitespace is refused too: a spec is one shell word.
//
// Parsing is exact: an empty part ("cpu,", "cuda:"), a duplicate key, a bad device index or a
// character outside the grammar is INVALID_ARGUMENT quoting the text and saying what was expected.
// Which keys a backend accepts is the backend's business: it validates them at creation
// (twinbit/backend_params.hpp), so the parser knows no backend.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <twinbit/status.hpp>

namespace twinbit {

struct BackendParam {
  std::string key, value;
  bool operator==(const BackendParam&) const = default;
};

struct BackendSpec {
  std::string name;                 // a built-in name; empty for a plugin
  std::string plugin_path;          // a plugin's path; empty for a built-in
  std::optional<int32_t> device;    // absent: the backend's default device
  std::vector<BackendParam> params; // creation parameters, in the order given, keys distinct

  bool is_plugin() const { return !plugin_path.empty(); }
  // The value of `key`, or null.
  const std::string* param(std::string_view key) const;
  // The canonical text: parse_backend_spec(to_string()) gives this spec back for a built-in.
  // A plugin with a device or parameters (set by separate options) reads
  // "PATH (device 1, threads=8)", for messages.
  std::string to_string() const;
  bool operator==(const BackendSpec&) const = default;
};

Result<BackendSpec> parse_backend_spec(std::string_view text);

// The grammar and examples in a few lines, for --help texts.
extern const char kBackendSpecHelp[];

}  // namespace twinbit
