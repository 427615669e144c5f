#pragma once
// SIMKIT_HD marks functions compiled for host and device alike (one formula, one place).
#if defined(__CUDACC__)
#define SIMKIT_HD __host__ __device__
#define SIMKIT_DEVICE_CODE_POSSIBLE 1
#else
#define SIMKIT_HD
#endif
