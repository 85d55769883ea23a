// A broken backend as a plugin, for tests that drive the `twinbit` command itself: the shared
// library exports tb_backend_create_v1 and forwards it to the breakage named at build time
// (BROKEN_PLUGIN_CREATE, one of the entry points in broken_backends.h).
#include "tests/broken_backends/broken_backends.h"

extern "C" TB_PLUGIN_EXPORT tb_code tb_backend_create_v1(
    uint32_t host_abi_version, tb_backend* out, tb_error* err, const tb_backend_params* params) {
  return BROKEN_PLUGIN_CREATE(host_abi_version, out, err, params);
}
