// The pure half of the safetensors reader (safetensors_file.h): a file's header and a shard
// folder's index, parsed and checked from bytes; no file is touched here (the fuzzer drives it).
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "artifacts/import/safetensors_file.h"

namespace twinbit::import {
namespace {

using json = nlohmann::json;
using ull = unsigned long long;

struct DtypeInfo {
  const char* name;
  int bits;
  SourceType type;
};
// Every dtype the safetensors format defines (its Rust Dtype enum).
constexpr DtypeInfo kDtypes[] = {
    {"F32", 32, SourceType::f32},     {"F16", 16, SourceType::f16},
    {"BF16", 16, SourceType::bf16},   {"F64", 64, SourceType::other},
    {"I64", 64, SourceType::other},   {"U64", 64, SourceType::other},
    {"I32", 32, SourceType::other},   {"U32", 32, SourceType::other},
    {"I16", 16, SourceType::other},   {"U16", 16, SourceType::other},
    {"I8", 8, SourceType::other},     {"U8", 8, SourceType::other},
    {"BOOL", 8, SourceType::other},   {"F8_E4M3", 8, SourceType::other},
    {"F8_E5M2", 8, SourceType::other}, {"F8_E8M0", 8, SourceType::other},
    {"F6_E2M3", 6, SourceType::other}, {"F6_E3M2", 6, SourceType::other},
    {"F4", 4, SourceType::other},
};

const DtypeInfo* find_dtype(std::string_view name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

// Up to 60 printable characters of untrusted text, for a message.
std::string quote_text(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 60)) {
    const auto u = static_cast<unsigned char>(c);
    out += u >= 0x20 && u < 0x7f ? std::string(1, c) : Format("\\x%02x", u);
  }
  return out + (s.size() > 60 ? "...'" : "'");
}

std::string shown(const json& v) { return quote_text(v.dump(-1, ' ', false, json::error_handler_t::replace)); }

// Parses JSON text, refusing nesting deeper than `max_depth`, an array longer than
// kSafetensorsMaxDims (no valid header or index has one: this bounds what a hostile header of
// "[0,0,0,..." costs as a DOM) and a key given twice in one object (nlohmann keeps the last
// silently). Each refusal is thrown as a message.
struct Refusal {
  std::string message;
};
json parse_json(std::string_view text, int max_depth) {
  struct Open {
    bool array = false;
    size_t elements = 0;
    std::set<std::string> keys;
  };
  std::vector<Open> open;
  auto count_element = [&] {
    if (!open.empty() && open.back().array && ++open.back().elements > kSafetensorsMaxDims) {
      throw Refusal{Format("has an array longer than %zu elements", kSafetensorsMaxDims)};
    }
  };
  json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= max_depth) throw Refusal{Format("nests deeper than %d levels", max_depth)};
        count_element();
        open.push_back({event == json::parse_event_t::array_start, 0, {}});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!open.empty()) open.pop_back();
        break;
      case json::parse_event_t::key:
        if (!open.empty() && !open.back().keys.insert(parsed.get<std::string>()).second) {
          throw Refusal{"gives the key " + quote_text(parsed.get<std::string>()) + " twice in one object"};
        }
        break;
      case json::parse_event_t::value:
        count_element();
        break;
    }
    return true;
  };
  return json::parse(text.begin(), text.end(), check);
}

// The JSON parse of `text`, or INVALID_ARGUMENT quoting where and why it failed.
Result<json> parse_checked(std::string_view text, int max_depth, const std::string& what) {
  try {
    return parse_json(text, max_depth);
  } catch (const Refusal& r) {
    return Error(TB_INVALID_ARGUMENT, "%s %s", what.c_str(), r.message.c_str());
  } catch (const json::parse_error& e) {
    return Error(TB_INVALID_ARGUMENT, "%s is not valid JSON at byte %llu: %s", what.c_str(),
                 (ull)e.byte, e.what());
  } catch (const json::exception& e) {
    return Error(TB_INVALID_ARGUMENT, "%s cannot be read as JSON: %s", what.c_str(), e.what());
  }
}

// A JSON value as a non-negative integer (integers only: 2.0 and "2" are refused).
bool as_count(const json& v, uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    out = static_cast<uint64_t>(v.get<int64_t>());
    return true;
  }
  return false;
}

Status check_tensor(const std::string& name, const json& v, uint64_t data_bytes,
                    const std::string& source, SourceTensor& t, uint64_t& begin) {
  const std::string who = source + ": tensor " + quote_text(name);
  if (!v.is_object()) {
    return Error(TB_INVALID_ARGUMENT, "%s: expected an object with dtype, shape and data_offsets, "
                 "found %s", who.c_str(), shown(v).c_str());
  }
  for (const auto& [key, value] : v.items()) {
    (void)value;
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      return Error(TB_INVALID_ARGUMENT, "%s: unknown field %s (expected dtype, shape and "
                   "data_offsets)", who.c_str(), quote_text(key).c_str());
    }
  }
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!v.contains(field)) return Error(TB_INVALID_ARGUMENT, "%s: no %s", who.c_str(), field);
  }
  const json& dtype = v["dtype"];
  const DtypeInfo* info = dtype.is_string() ? find_dtype(dtype.get<std::string>()) : nullptr;
  if (!info) {
    return Error(TB_INVALID_ARGUMENT, "%s: dtype %s is not a safetensors dtype (F32, F16, BF16, "
                 "F64, I64 ... F4)", who.c_str(), shown(dtype).c_str());
  }
  const json& shape = v["shape"];
  if (!shape.is_array() || shape.size() > kSafetensorsMaxDims) {
    return Error(TB_INVALID_ARGUMENT, "%s: shape %s is not a list of at most %zu dims",
                 who.c_str(), shown(shape).c_str(), kSafetensorsMaxDims);
  }
  uint64_t count = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    uint64_t dim = 0;
    if (!as_count(shape[i], dim) || dim > uint64_t(INT64_MAX)) {
      return Error(TB_INVALID_ARGUMENT, "%s: shape[%zu] = %s is not a non-negative integer",
                   who.c_str(), i, shown(shape[i]).c_str());
    }
    if (__builtin_mul_overflow(count, dim, &count) || count > uint64_t(INT64_MAX) / 64) {
      return Error(TB_INVALID_ARGUMENT, "%s: shape %s has more elements than fit in 63 bits",
                   who.c_str(), shown(shape).c_str());
    }
    t.dims.push_back(static_cast<int64_t>(dim));
  }
  const uint64_t bits = count * static_cast<uint64_t>(info->bits);
  if (bits % 8 != 0) {
    return Error(TB_INVALID_ARGUMENT, "%s: shape %s of %s is not a whole number of bytes",
                 who.c_str(), shown(shape).c_str(), info->name);
  }
  t.bytes = bits / 8;
  const json& offsets = v["data_offsets"];
  uint64_t b = 0, e = 0;
  if (!offsets.is_array() || offsets.size() != 2 || !as_count(offsets[0], b) || !as_count(offsets[1], e) ||
      b > e) {
    return Error(TB_INVALID_ARGUMENT, "%s: data_offsets %s is not [begin, end] with 0 <= begin <= end",
                 who.c_str(), shown(offsets).c_str());
  }
  if (e > data_bytes) {
    return Error(TB_DATA_LOSS, "%s: data_offsets [%llu, %llu] end past the data section (%llu bytes)",
                 who.c_str(), (ull)b, (ull)e, (ull)data_bytes);
  }
  if (e - b != t.bytes) {
    return Error(TB_INVALID_ARGUMENT, "%s: data_offsets [%llu, %llu] hold %llu bytes but shape %s "
                 "of %s needs %llu", who.c_str(), (ull)b, (ull)e, (ull)(e - b), shown(shape).c_str(),
                 info->name, (ull)t.bytes);
  }
  t.name = name;
  t.type = info->type;
  t.type_name = info->name;
  begin = b;
  return Status();
}

}  // namespace

int safetensors_dtype_bits(std::string_view dtype) {
  const DtypeInfo* info = find_dtype(dtype);
  return info ? info->bits : 0;
}

Result<SafetensorsHeader> parse_safetensors(std::span<const uint8_t> prefix, uint64_t file_bytes,
                                            const std::string& source, size_t file_index) {
  if (file_bytes < 8 || prefix.size() < 8) {
    return Error(TB_DATA_LOSS, "%s: file is %llu bytes, shorter than the 8-byte header size",
                 source.c_str(), (ull)file_bytes);
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | prefix[i];
  if (n > kSafetensorsMaxHeaderBytes) {
    return Error(TB_INVALID_ARGUMENT, "%s: header size %llu exceeds the limit of %llu bytes",
                 source.c_str(), (ull)n, (ull)kSafetensorsMaxHeaderBytes);
  }
  if (n > file_bytes - 8) {
    return Error(TB_DATA_LOSS, "%s: header size %llu runs past the end of the file (%llu bytes)",
                 source.c_str(), (ull)n, (ull)file_bytes);
  }
  if (prefix.size() < 8 + n) {
    return Error(TB_DATA_LOSS, "%s: only %zu of the header's %llu bytes were read", source.c_str(),
                 prefix.size() - 8, (ull)n);
  }
  const std::string_view text(reinterpret_cast<const char*>(prefix.data()) + 8, n);
  auto parsed = parse_checked(text, 3, source + ": the JSON header");
  if (!parsed.ok()) return parsed.status();
  const json& root = *parsed;
  if (!root.is_object()) {
    return Error(TB_INVALID_ARGUMENT, "%s: the JSON header is %s, not an object", source.c_str(),
                 shown(root).c_str());
  }
  SafetensorsHeader h;
  h.data_start = 8 + n;
  const uint64_t data_bytes = file_bytes - h.data_start;
  std::vector<std::pair<uint64_t, size_t>> order;  // (begin, index into tensors)
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) {
        return Error(TB_INVALID_ARGUMENT, "%s: __metadata__ is %s, not an object of strings",
                     source.c_str(), shown(value).c_str());
      }
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) {
          return Error(TB_INVALID_ARGUMENT, "%s: __metadata__[%s] is %s, not a string",
                       source.c_str(), quote_text(mk).c_str(), shown(mv).c_str());
        }
        h.metadata.emplace_back(mk, mv.get<std::string>());
      }
      continue;
    }
    SourceTensor t;
    uint64_t begin = 0;
    TB_RETURN_IF_ERROR(check_tensor(key, value, data_bytes, source, t, begin));
    t.file = file_index;
    t.offset = h.data_start + begin;
    order.emplace_back(begin, h.tensors.size());
    h.tensors.push_back(std::move(t));
  }
  // The tensors must tile the data section: sorted by begin, each starts where the last ended.
  std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : h.tensors[a.second].bytes < h.tensors[b.second].bytes;
  });
  uint64_t covered = 0;
  const SourceTensor* last = nullptr;
  for (const auto& [begin, i] : order) {
    const SourceTensor& t = h.tensors[i];
    if (t.bytes == 0) continue;  // holds no byte: overlaps nothing, leaves no gap
    if (begin < covered) {
      return Error(TB_INVALID_ARGUMENT, "%s: tensor %s's data_offsets [%llu, %llu] overlap tensor "
                   "%s's, which end at %llu", source.c_str(), quote_text(t.name).c_str(), (ull)begin,
                   (ull)(begin + t.bytes), quote_text(last->name).c_str(), (ull)covered);
    }
    if (begin > covered) {
      return Error(TB_INVALID_ARGUMENT, "%s: bytes [%llu, %llu) of the data section belong to no "
                   "tensor (a gap before tensor %s)", source.c_str(), (ull)covered, (ull)begin,
                   quote_text(t.name).c_str());
    }
    covered = begin + t.bytes;
    last = &t;
  }
  if (covered != data_bytes) {
    return Error(TB_INVALID_ARGUMENT, "%s: bytes [%llu, %llu) at the end of the data section belong "
                 "to no tensor", source.c_str(), (ull)covered, (ull)data_bytes);
  }
  std::vector<SourceTensor> sorted;
  sorted.reserve(order.size());
  for (const auto& [begin, i] : order) sorted.push_back(std::move(h.tensors[i]));
  h.tensors = std::move(sorted);
  return h;
}

Result<SafetensorsIndex> parse_safetensors_index(std::string_view text, const std::string& source) {
  auto parsed = parse_checked(text, 2, source);
  if (!parsed.ok()) return parsed.status();
  const json& root = *parsed;
  if (!root.is_object()) {
    return Error(TB_INVALID_ARGUMENT, "%s is %s, not a JSON object", source.c_str(), shown(root).c_str());
  }
  SafetensorsIndex index;
  if (root.contains("metadata")) {
    const json& m = root["metadata"];
    if (!m.is_object()) {
      return Error(TB_INVALID_ARGUMENT, "%s: metadata is %s, not an object", source.c_str(),
                   shown(m).c_str());
    }
    for (const auto& [k, v] : m.items()) {
      index.metadata.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  if (!root.contains("weight_map") || !root["weight_map"].is_object()) {
    return Error(TB_INVALID_ARGUMENT, "%s: no weight_map object (tensor name -> shard file)",
                 source.c_str());
  }
  std::map<std::string, size_t> shard_ids;
  for (const auto& [tensor, shard] : root["weight_map"].items()) {
    if (!shard.is_string()) {
      return Error(TB_INVALID_ARGUMENT, "%s: weight_map[%s] is %s, not a shard file name",
                   source.c_str(), quote_text(tensor).c_str(), shown(shard).c_str());
    }
    const std::string file = shard.get<std::string>();
    if (file.empty() || file == "." || file == ".." || file.find('/') != std::string::npos ||
        file.find('\0') != std::string::npos) {
      return Error(TB_INVALID_ARGUMENT, "%s: weight_map[%s] = %s is not a file name beside the index",
                   source.c_str(), quote_text(tensor).c_str(), quote_text(file).c_str());
    }
    if (shard_ids.emplace(file, 0).second && shard_ids.size() > kSafetensorsMaxShards) {
      return Error(TB_INVALID_ARGUMENT, "%s: weight_map names more than %zu shards", source.c_str(),
                   kSafetensorsMaxShards);
    }
  }
  // Shards in name order (model-00001-of-00002 first), tensors by name.
  for (auto& [file, id] : shard_ids) {
    id = index.shards.size();
    index.shards.push_back(file);
  }
  for (const auto& [tensor, shard] : root["weight_map"].items()) {
    index.weight_map.emplace_back(tensor, shard_ids.at(shard.get<std::string>()));
  }
  std::sort(index.weight_map.begin(), index.weight_map.end());
  return index;
}

}  // namespace twinbit::import
