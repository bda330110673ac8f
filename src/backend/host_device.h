// FT_HOST_DEVICE: functions one algorithm serves on the host and, compiled by nvcc, on the device.
#pragma once

#ifdef __CUDACC__
#define FT_HOST_DEVICE __host__ __device__
#else
#define FT_HOST_DEVICE
#endif
