// Host memory the cuda backend's submissions hold while in flight: page-locked staging buffers,
// host-to-host copies run on the stream, and the page-locked words its device-side index checks
// are read back into (cuda_backend.cpp).
#pragma once

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/cuda_ptx/cuda_launch.hpp"
#include "backends/cuda_ptx/driver/driver_api.hpp"
#include "backends/entries.hpp"
#include "trine/error.hpp"

namespace trine::cuda {

// Page-locked buffers that a submission's uploads were staged through; freed once it completed.
struct PinnedStaging {
  const DriverApi* api = nullptr;
  std::vector<void*> buffers;  // one per upload with bytes, in entry order
  std::size_t used = 0;        // the uploads enqueued so far
  PinnedStaging() = default;
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;
  ~PinnedStaging() {
    for (void* b : buffers) api->cuMemFreeHost(b);
  }
};

// One host-to-host copy run by a host function on the stream: from the source tensor's memory into
// a page-locked buffer, once the work that writes the source has finished.
struct HostCopy {
  void* dst;
  const void* src;
  std::size_t bytes;
  static void run(void* user_data) {
    std::unique_ptr<HostCopy> c(static_cast<HostCopy*>(user_data));
    std::memcpy(c->dst, c->src, c->bytes);
  }
};

// Page-locked 8-byte words for the device-side checks below, kept for reuse: cuMemAllocHost and
// cuMemFreeHost cost far more than a gather (and freeing may wait for the device), so words are
// allocated in chunks once and then handed out and back without a driver call. Shared by the
// backend and the checks in flight, which may outlive it.
class PinnedWords {
 public:
  explicit PinnedWords(const DriverApi& api) : api_(api) {}
  PinnedWords(const PinnedWords&) = delete;
  PinnedWords& operator=(const PinnedWords&) = delete;
  ~PinnedWords() {
    for (void* c : chunks_) api_.cuMemFreeHost(c);
  }
  // `count` words into `out`; a failed allocation's result (the caller's context must be current).
  CUresult take(std::size_t count, std::vector<std::uint64_t*>& out) {
    std::lock_guard lock(mu_);
    while (free_.size() < count) {
      void* chunk = nullptr;
      if (const CUresult r = api_.cuMemAllocHost(&chunk, chunk_words * sizeof(std::uint64_t)); r != CUDA_SUCCESS)
        return r;
      chunks_.push_back(chunk);
      for (std::size_t i = 0; i < chunk_words; ++i) free_.push_back(static_cast<std::uint64_t*>(chunk) + i);
    }
    out.assign(free_.end() - static_cast<std::ptrdiff_t>(count), free_.end());
    free_.resize(free_.size() - count);
    return CUDA_SUCCESS;
  }
  void give_back(const std::vector<std::uint64_t*>& words) {
    std::lock_guard lock(mu_);
    free_.insert(free_.end(), words.begin(), words.end());
  }

 private:
  static constexpr std::size_t chunk_words = 512;
  const DriverApi& api_;
  std::mutex mu_;
  std::vector<void*> chunks_;
  std::vector<std::uint64_t*> free_;
};

// The device-side input checks of one submission's launches (gather's indices, cuda_launch.hpp's
// IndexCheck): after each checking launch its slot is copied on the stream into a page-locked word
// here, before any later launch can reuse the slot; once the stream has passed the submission, the
// first word that is not clean is the submission's error, naming its entry. Held by the completion
// (nothing of the submission's tensors), its words given back once read.
struct IndexChecks {
  struct Check {
    OpKind op;
    std::size_t position;  // the recorded entry's position, of `recorded`
    IndexCheck check;  // its rows or its message
  };
  std::shared_ptr<PinnedWords> pool;
  std::vector<std::uint64_t*> words;  // one per checking entry: checks[i] reads words[i]
  std::vector<Check> checks;
  std::size_t recorded = 1;
  Device device;

  IndexChecks() = default;
  IndexChecks(const IndexChecks&) = delete;
  IndexChecks& operator=(const IndexChecks&) = delete;
  ~IndexChecks() {
    if (pool) pool->give_back(words);
  }
  // The first failed check as the error its entry raises ("[gather] on cuda:0: index 7 at position
  // 2 is outside the table's rows [0, 5)"), or null. Only once the stream has passed the copies.
  std::exception_ptr error() const {
    for (std::size_t i = 0; i < checks.size(); ++i) {
      if (auto why = index_check_failure(*words[i], checks[i].check)) {
        const detail::Entry entry{detail::OpCall{checks[i].op, {}, Tensor(), NoParams{}, {}}};  // its name
        return std::make_exception_ptr(
            detail::entry_error(entry, checks[i].position, recorded, Error(ErrorCode::invalid_argument, *why), device));
      }
    }
    return nullptr;
  }
};

}  // namespace trine::cuda
