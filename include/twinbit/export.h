// TWINBIT_API marks the functions the twinbit library exports (the host C API). The library is
// built with hidden visibility by default, so only what carries this mark is part of its ABI;
// everything else stays internal to libtwinbit.so and can change freely.
#ifndef TWINBIT_EXPORT_H
#define TWINBIT_EXPORT_H

#if defined(_WIN32)
#define TWINBIT_API
#elif defined(__GNUC__) || defined(__clang__)
#define TWINBIT_API __attribute__((visibility("default")))
#else
#define TWINBIT_API
#endif

#endif  // TWINBIT_EXPORT_H
