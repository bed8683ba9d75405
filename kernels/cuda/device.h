// CUDA device discovery. Plain C++ header (no CUDA types) so host code can include it.
#pragma once

#include <string>

namespace dp::cuda {

struct DeviceQuery {
  int count = 0;           // usable devices; 0 on any runtime error
  std::string first_name;  // name of device 0
  std::string error;       // the runtime's message when count == 0
};

DeviceQuery query_devices();

}  // namespace dp::cuda
