// The _twinbit extension module: each topic registers its part (python/src/*.cpp).
#include "common.h"

NB_MODULE(_twinbit, m) {
  using namespace twinbit::py;
  m.doc() = "twinbit: bit-exact quantised projections (the compiled core of the twinbit package)";
  init_errors(m);
  init_artifact(m);
  init_backend(m);
  init_ops(m);
  init_reference(m);
  init_compare(m);
  init_conformance(m);
  init_runtime(m);
}
