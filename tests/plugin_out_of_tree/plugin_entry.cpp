// The plugin's one exported symbol: the null skeleton's entry point under the name the host
// looks up (TB_PLUGIN_ENTRY_SYMBOL). A port renames the skeleton's function instead.
#include <twinbit/backend.h>

extern "C" tb_code tb_backend_create_null(uint32_t host_abi_version, tb_backend* out, tb_error* err,
                                          const tb_backend_params* params);

extern "C" TB_PLUGIN_EXPORT tb_code tb_backend_create_v1(uint32_t host_abi_version, tb_backend* out,
                                                         tb_error* err, const tb_backend_params* params) {
  return tb_backend_create_null(host_abi_version, out, err, params);
}
