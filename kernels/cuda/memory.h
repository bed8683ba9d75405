// Device memory for host code (tests, models): raw helpers and DeviceBuffer<T>, an owning, move-only
// array in GPU memory. Plain C++ header (no CUDA types); errors throw dp::RuntimeFailure.
#pragma once

#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "lib/core/error.h"

namespace dp::cuda {

void* device_alloc(size_t bytes);     // cudaMalloc; nullptr for 0 bytes
void device_free(void* p) noexcept;   // cudaFree; errors are ignored (destructors must not throw)
void copy_to_device(void* dst, const void* src, size_t bytes);
void copy_to_host(void* dst, const void* src, size_t bytes);  // waits for queued kernels first
void copy_on_device(void* dst, const void* src, size_t bytes);
void fill_bytes(void* dst, int byte, size_t bytes);  // cudaMemset

template <class T>
class DeviceBuffer {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) : data_(static_cast<T*>(device_alloc(count * sizeof(T)))), size_(count) {}
  explicit DeviceBuffer(std::span<const T> host) : DeviceBuffer(host.size()) { upload(host); }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(std::span<const T>(host)) {}
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      device_free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { device_free(data_); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(T); }
  bool empty() const { return size_ == 0; }

  void upload(std::span<const T> host) {
    DP_CHECK(host.size() == size_, "upload of " + std::to_string(host.size()) + " elements into a buffer of " +
                                       std::to_string(size_));
    copy_to_device(data_, host.data(), bytes());
  }
  void download(std::span<T> host) const {
    DP_CHECK(host.size() == size_, "download of " + std::to_string(size_) + " elements into " +
                                       std::to_string(host.size()));
    copy_to_host(host.data(), data_, bytes());
  }
  std::vector<T> download() const {
    std::vector<T> host(size_);
    download(std::span<T>(host));
    return host;
  }
  void zero() { fill_bytes(data_, 0, bytes()); }
  // Every byte 0xFF: NaN for float, -1 for integers. Tests use it to see unwritten outputs.
  void poison() { fill_bytes(data_, 0xFF, bytes()); }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace dp::cuda
