// An owning, growable array in a compute backend's memory (host memory for the CPU kernels, device
// memory for CUDA), allocated and freed through the backend's kernel table. Models keep their
// parameters, gradients and activations in these.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/kernel_table.h"
#include "lib/core/error.h"
#include "lib/core/memory_meter.h"

namespace dp {

template <class T>
class Buffer {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  explicit Buffer(const Kernels& k, size_t count = 0) : k_(&k) { grow(count); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept
      : k_(o.k_), data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)),
        meter_(std::move(o.meter_)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      release();
      k_ = o.k_;
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      meter_ = std::move(o.meter_);
    }
    return *this;
  }
  ~Buffer() { release(); }

  // Grows to at least `count` elements (never shrinks; contents are lost when it grows).
  void grow(size_t count) {
    if (count <= size_) return;
    release();
    const int64_t asked = int64_t(count * sizeof(T));
    // Counted before it is made: a meter with a capacity refuses it (OutOfMemory), as a GPU would.
    MemoryMeter::process().add(asked);
    std::shared_ptr<MemoryMeter> meter = MemoryMeter::current();
    bool metered = false;
    try {
      if (meter) meter->add(asked), metered = true;
      data_ = static_cast<T*>(k_->alloc(size_t(asked)));
    } catch (...) {
      MemoryMeter::process().remove(asked);
      if (metered) meter->remove(asked);
      throw;
    }
    size_ = count;
    meter_ = std::move(meter);
  }
  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  // The elements as a span (device memory for CUDA: pass it to kernels, never dereference it on the host).
  std::span<T> span() { return {data_, size_}; }
  std::span<const T> span() const { return {data_, size_}; }

  void zero() { k_->zero(data_, size_ * sizeof(T)); }
  void upload(std::span<const T> host, size_t offset = 0) {
    DP_CHECK(offset + host.size() <= size_, "upload past the end of a buffer");
    k_->upload(data_ + offset, host.data(), host.size_bytes());
  }
  void download(std::span<T> host, size_t offset = 0) const {
    DP_CHECK(offset + host.size() <= size_, "download past the end of a buffer");
    k_->download(host.data(), data_ + offset, host.size_bytes());
  }
  std::vector<T> to_host() const {
    std::vector<T> v(size_);
    download(std::span<T>(v));
    return v;
  }

 private:
  int64_t bytes() const { return int64_t(size_ * sizeof(T)); }
  void release() {
    if (!data_) return;
    MemoryMeter::process().remove(bytes());
    if (meter_) meter_->remove(bytes());
    k_->free(std::exchange(data_, nullptr));
    size_ = 0;
    meter_.reset();
  }

  const Kernels* k_;
  T* data_ = nullptr;
  size_t size_ = 0;
  std::shared_ptr<MemoryMeter> meter_;  // the thread's meter when allocated
};

}  // namespace dp
