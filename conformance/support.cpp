// probe_support and its listings (support.h).
#include "conformance/support.h"

#include <array>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/op_checks.h"
#include <twinbit/status.hpp>

namespace twinbit::conformance {
namespace {

struct GemmShape {
  int64_t m, n, k;
  const char* why;
};
constexpr GemmShape kGemmShapes[] = {
    {1, 32, 32, "one group, one strip"},
    {3, 33, 100, "N tail, K % 32 != 0"},
    {1, 2048, 2048, "model projection, decode"},
    {32, 6144, 2048, "model projection, prefill"},
    {1, 2048, 6144, "model down projection"},
    {32, 151936, 2048, "model vocabulary"},
    {4, 1000, 12000, "K past 8192"},
    {512, 2048, 2048, "large batch"},
};

}  // namespace

std::vector<SupportProbe> probe_support(const Backend& b) {
  std::vector<SupportProbe> out;
  auto ask = [&](SupportProbe p, const tb_op_desc& d) {
    Status s = b.supports(d);
    p.claimed = s.ok();
    if (!s.ok()) p.refusal = s.message();
    out.push_back(std::move(p));
  };
  for (tb_prec prec : {TB_PREC_Q8, TB_PREC_Q4}) {
    for (tb_act_mode mode : {TB_ACT_F32, TB_ACT_I8}) {
      for (const GemmShape& g : kGemmShapes) {
        tb_op_desc d = gemm_op_desc(prec, mode, g.m, g.n, g.k);
        ask({"gemm", prec_name(prec), act_mode_name(mode),
             Format("M%lld N%lld K%lld", (long long)g.m, (long long)g.n, (long long)g.k), g.why, false, ""},
            d);
      }
    }
  }
  for (tb_op op : {TB_OP_GEMV_F32, TB_OP_GEMV_F32_PAIR}) {
    for (auto [rows, cols, why] : {std::tuple<int64_t, int64_t, const char*>{33, 100, "ragged"},
                                   {2048, 2048, "model size"}}) {
      tb_op_desc d{};
      d.op = op;
      d.n = rows;
      d.k = cols;
      ask({op == TB_OP_GEMV_F32 ? "gemv_f32" : "gemv_f32_pair", "", "",
           Format("N%lld K%lld", (long long)rows, (long long)cols), why, false, ""}, d);
    }
  }
  for (auto [vh, kh, kd, vd] : {std::array<int64_t, 4>{16, 16, 128, 128}, {32, 16, 128, 128}, {2, 1, 3, 5}}) {
    tb_op_desc d{};
    d.op = TB_OP_GDN_DELTA;
    d.vh = vh;
    d.kh = kh;
    d.kd = kd;
    d.vd = vd;
    ask({"gdn_delta", "", "", Format("VH%lld KH%lld KD%lld VD%lld", (long long)vh, (long long)kh,
                                     (long long)kd, (long long)vd),
         kd == 128 ? "model heads" : "tiny heads", false, ""}, d);
  }
  for (auto [m, k] : {std::pair<int64_t, int64_t>{1, 100}, {32, 2048}}) {
    SupportProbe p{"quantize_i8", "", "", Format("M%lld K%lld", (long long)m, (long long)k),
                   k % 32 ? "K % 32 != 0" : "model size", false, ""};
    if (!b.has_quantize_i8()) {
      p.refusal = "no quantize_i8 entry (callers get the scalar reference on the host)";
      out.push_back(p);
      continue;
    }
    tb_op_desc d{};
    d.op = TB_OP_QUANTIZE_I8;
    d.m = m;
    d.k = k;
    ask(p, d);
  }
  return out;
}

std::string format_support_text(const Backend& b, const std::vector<SupportProbe>& probes) {
  std::string s = Format("twinbit conformance --support: what %s claims (supports(), nothing run)\n",
                         b.name().c_str());
  s += Format("  device     %s\n  features   %s\n\n", b.device().c_str(), b.features().c_str());
  for (size_t i = 0; i < probes.size();) {
    size_t j = i, claimed = 0;
    const SupportProbe& h = probes[i];
    while (j < probes.size() && probes[j].op == h.op && probes[j].prec == h.prec && probes[j].mode == h.mode) {
      claimed += probes[j].claimed;
      ++j;
    }
    std::string what = h.op + (h.prec.empty() ? "" : " " + h.prec + " " + h.mode);
    s += Format("%-18s %zu of %zu probe shapes claimed\n", what.c_str(), claimed, j - i);
    for (size_t p = i; p < j; ++p) {
      if (!probes[p].claimed) {
        s += Format("    refused %-22s (%s): %s\n", probes[p].shape.c_str(), probes[p].why.c_str(),
                    probes[p].refusal.c_str());
      }
    }
    i = j;
  }
  return s;
}

std::string format_support_json(const Backend& b, const std::vector<SupportProbe>& probes) {
  nlohmann::json j;
  j["report"] = "twinbit-support";
  j["format_version"] = 1;
  j["backend"] = {{"name", b.name()}, {"device", b.device()}, {"features", b.features()}};
  j["probes"] = nlohmann::json::array();
  for (const SupportProbe& p : probes) {
    nlohmann::json e = {{"op", p.op}, {"shape", p.shape}, {"why", p.why}, {"claimed", p.claimed}};
    if (!p.prec.empty()) {
      e["prec"] = p.prec;
      e["mode"] = p.mode;
    }
    if (!p.claimed) e["refusal"] = p.refusal;
    j["probes"].push_back(e);
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace twinbit::conformance
