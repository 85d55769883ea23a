// The null backend: the skeleton every new backend starts from (docs/PORTING.md).
//
// Every entry is present and says, with a message, that it is not implemented. Copy this folder,
// rename the entry point, register it in backends/CMakeLists.txt (or export it as
// tb_backend_create_v1 from a shared library), then replace one entry at a time and run
// `twinbit conformance --backend NAME` after each. It includes only the installed headers and
// needs only the plugin SDK (twinbit::plugin_sdk), so it also builds out of tree
// (tests/plugin_out_of_tree, docs/PORTING.md).
#include <cstring>

#include <twinbit/backend.h>
#include <twinbit/backend_params.hpp>
#include <twinbit/status.hpp>

namespace {

using twinbit::Error;
using twinbit::Status;

tb_code describe(void*, tb_backend_info* out, tb_error*) {
  *out = {};
  out->name = "null";
  out->device = "none (skeleton backend: every operation is UNIMPLEMENTED)";
  out->features = "";
  out->memory_bytes = 0;
  return TB_OK;
}

tb_code supports(void*, const tb_op_desc* op, tb_error* err) {
  // The op as the int it holds (a caller may store any int in a C enum field): tb_op's values.
  int op_value;
  std::memcpy(&op_value, &op->op, sizeof op_value);
  return Error(TB_UNIMPLEMENTED, "null backend implements no operation (asked for tb_op %d)",
               op_value).to_c(err);
}

tb_code weights_bind(void*, const tb_weights_view*, void** out_handle, tb_error* err) {
  *out_handle = nullptr;
  return Error(TB_UNIMPLEMENTED, "null backend cannot bind weights").to_c(err);
}

void weights_release(void*, void*) {}

tb_code gemm(void*, void*, const tb_gemm_args*, tb_error* err) {
  return Error(TB_UNIMPLEMENTED, "null backend: gemm is not implemented").to_c(err);
}

tb_code gemv_f32(void*, void*, const float*, float*, tb_error* err) {
  return Error(TB_UNIMPLEMENTED, "null backend: gemv_f32 is not implemented").to_c(err);
}

tb_code gdn_delta(void*, const tb_gdn_args*, tb_error* err) {
  return Error(TB_UNIMPLEMENTED, "null backend: gdn_delta is not implemented").to_c(err);
}

void destroy(void*) {}

const tb_backend_iface kIface = {
    .abi_version = TB_BACKEND_ABI_VERSION,
    .struct_size = sizeof(tb_backend_iface),
    .describe = describe,
    .supports = supports,
    .weights_bind = weights_bind,
    .weights_release = weights_release,
    .gemm = gemm,
    .gemv_f32 = gemv_f32,
    .gdn_delta = gdn_delta,
    .destroy = destroy,
    .gemv_f32_pair = nullptr,  // optional: core's default (two gemv_f32 calls)
    .read_floor = nullptr,     // optional: core's default (UNIMPLEMENTED)
    .quantize_i8 = nullptr,
    .get_proc = nullptr,
};

}  // namespace

extern "C" tb_code tb_backend_create_null(uint32_t host_abi_version, tb_backend* out,
                                          tb_error* err, const tb_backend_params* params) {
  *out = {};
  if (host_abi_version != TB_BACKEND_ABI_VERSION) {
    return Error(TB_FAILED_PRECONDITION, "null backend speaks ABI version %u, the host %u",
                 TB_BACKEND_ABI_VERSION, host_abi_version).to_c(err);
  }
  // No parameters; one device (index 0), so "null:1" is refused like any absent device.
  Status s = twinbit::check_param_keys(params, "null backend", {});
  int32_t device = 0;
  if (s.ok()) s = twinbit::choose_device(params, "null backend", 1, &device);
  if (!s.ok()) return s.to_c(err);
  out->iface = &kIface;
  out->ctx = nullptr;
  return TB_OK;
}
