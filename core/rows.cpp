#include "core/rows.h"

namespace twinbit {

Status check_rows(int64_t m, const char* what) {
  if (m < kMinRows || m > kMaxRows) {
    return Error(TB_INVALID_ARGUMENT, "%s = %lld is out of range (expected %lld .. %lld rows)", what,
                 static_cast<long long>(m), static_cast<long long>(kMinRows),
                 static_cast<long long>(kMaxRows));
  }
  return Status();
}

}  // namespace twinbit
