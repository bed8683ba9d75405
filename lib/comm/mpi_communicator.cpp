// Communicator over MPI for CPU buffers: point-to-point as MPI_Isend/MPI_Irecv on MPI_BYTE (messages over
// 1 GiB go as several), the transport collectives as MPI's own, host memory space from the base class.
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "lib/comm/communicator.h"
#include "lib/core/error.h"

namespace dp {
namespace {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw RuntimeFailure(call, std::string(text, size_t(len)), "check the MPI launch and the network");
}

constexpr size_t kMaxCount = size_t(1) << 30;  // MPI counts are int: messages go in pieces of 1 GiB

// One isend/irecv: one MPI request per 1 GiB piece. A receive checks that each piece arrived whole.
class MpiRequest final : public Request::Impl {
 public:
  explicit MpiRequest(bool receive) : receive_(receive) {}
  void add(MPI_Request r, int count) {
    requests_.push_back(r);
    counts_.push_back(count);
  }
  void wait() override {
    std::vector<MPI_Status> status(receive_ ? requests_.size() : 0);
    check_mpi(MPI_Waitall(int(requests_.size()), requests_.data(), statuses(status)), "MPI_Waitall");
    check_counts(status);
  }
  bool test() override {
    int done = 0;
    std::vector<MPI_Status> status(receive_ ? requests_.size() : 0);
    check_mpi(MPI_Testall(int(requests_.size()), requests_.data(), &done, statuses(status)), "MPI_Testall");
    if (done) check_counts(status);
    return done != 0;
  }
  void abandon() noexcept override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (MPI_Request& r : requests_) {
      if (r == MPI_REQUEST_NULL) continue;
      if (receive_) {  // a receive can be cancelled locally; a send is left to finish on its own
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
      } else {
        MPI_Request_free(&r);
      }
    }
  }

 private:
  // Sends need no statuses.
  MPI_Status* statuses(std::vector<MPI_Status>& status) const {
    return receive_ ? status.data() : MPI_STATUSES_IGNORE;
  }
  void check_counts(const std::vector<MPI_Status>& status) const {
    for (size_t i = 0; i < status.size(); ++i) {
      int got = 0;
      MPI_Get_count(&status[i], MPI_BYTE, &got);
      if (got != counts_[i])
        throw RuntimeFailure("MPI_Irecv", "message of " + std::to_string(got) + " bytes where " +
                                              std::to_string(counts_[i]) + " were expected",
                             "sender and receiver must agree on message sizes");
    }
  }
  bool receive_;
  std::vector<MPI_Request> requests_;
  std::vector<int> counts_;
};

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    host_.assign(name, size_t(len));
    local_size_ = count_ranks_named(name);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_size() const override { return local_size_; }
  std::string host() const override { return host_; }

  Request isend(std::span<const std::byte> data, int peer, int tag) override {
    check_peer(peer, tag);
    auto request = std::make_unique<MpiRequest>(false);
    for_pieces(data.size(), [&](size_t off, int n) {
      MPI_Request r;
      check_mpi(MPI_Isend(data.data() + off, n, MPI_BYTE, peer, tag, comm_, &r), "MPI_Isend");
      request->add(r, n);
    });
    return Request(std::move(request));
  }
  Request irecv(std::span<std::byte> data, int peer, int tag) override {
    check_peer(peer, tag);
    auto request = std::make_unique<MpiRequest>(true);
    for_pieces(data.size(), [&](size_t off, int n) {
      MPI_Request r;
      check_mpi(MPI_Irecv(data.data() + off, n, MPI_BYTE, peer, tag, comm_, &r), "MPI_Irecv");
      request->add(r, n);
    });
    return Request(std::move(request));
  }

  using Communicator::allreduce_sum;
  void allreduce_sum(std::span<const float> in, std::span<float> out) override {
    DP_CHECK(in.size() == out.size(), "allreduce_sum: input and output differ in size");
    allreduce(in.data(), out.data(), out.size(), MPI_FLOAT);
  }
  void allreduce_sum(std::span<const double> in, std::span<double> out) override {
    DP_CHECK(in.size() == out.size(), "allreduce_sum: input and output differ in size");
    allreduce(in.data(), out.data(), out.size(), MPI_DOUBLE);
  }

  void broadcast(std::span<std::byte> data, int root) override {
    for (size_t off = 0; off < data.size(); off += kMaxCount) {
      const int n = int(std::min(kMaxCount, data.size() - off));
      check_mpi(MPI_Bcast(data.data() + off, n, MPI_BYTE, root, comm_), "MPI_Bcast");
    }
  }
  void allgather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    DP_CHECK(all.size() == mine.size() * size_t(size_), "allgather: receive buffer has the wrong size");
    if (mine.size() >= kMaxCount) {  // too large for one int count: each rank broadcasts its part
      std::copy(mine.begin(), mine.end(), all.begin() + ptrdiff_t(mine.size() * size_t(rank_)));
      for (int root = 0; root < size_; ++root)
        broadcast(all.subspan(mine.size() * size_t(root), mine.size()), root);
      return;
    }
    check_mpi(MPI_Allgather(mine.data(), int(mine.size()), MPI_BYTE, all.data(), int(mine.size()),
                            MPI_BYTE, comm_),
              "MPI_Allgather");
  }
  void barrier() override { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }
  std::unique_ptr<Communicator> split(int color, int key) override {
    MPI_Comm sub;
    check_mpi(MPI_Comm_split(comm_, color, key, &sub), "MPI_Comm_split");
    return std::make_unique<MpiCommunicator>(sub);
  }

 private:
  // Ranks on this rank's node, told by their processor (host) names. Not MPI_Comm_split_type: OpenMPI
  // 4.1 hangs in it on nodes of several ranks that are network namespaces with their own host names
  // (tests/cluster: two of four ranks never leave its allgather), while a plain allgather completes.
  int count_ranks_named(const char (&name)[MPI_MAX_PROCESSOR_NAME]) const {
    std::vector<char> names(size_t(size_) * MPI_MAX_PROCESSOR_NAME);
    check_mpi(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME,
                            MPI_CHAR, comm_),
              "MPI_Allgather");
    int same = 0;
    for (int r = 0; r < size_; ++r)
      same += std::strncmp(names.data() + size_t(r) * MPI_MAX_PROCESSOR_NAME, name, MPI_MAX_PROCESSOR_NAME) == 0;
    return same;
  }
  void check_peer(int peer, int tag) const {
    DP_CHECK(peer >= 0 && peer < size_, "peer rank " + std::to_string(peer) + " out of range");
    DP_CHECK(tag >= 0 && tag <= kMaxTag, "tag " + std::to_string(tag) + " out of range");
  }
  template <class F>
  static void for_pieces(size_t bytes, F&& f) {
    size_t off = 0;
    do {  // an empty message is one empty piece
      const size_t n = std::min(kMaxCount, bytes - off);
      f(off, int(n));
      off += n;
    } while (off < bytes);
  }
  void allreduce(const void* in, void* out, size_t count, MPI_Datatype type) {
    int bytes = 0;
    MPI_Type_size(type, &bytes);
    auto* o = static_cast<std::byte*>(out);
    const auto* i = static_cast<const std::byte*>(in);
    for (size_t off = 0; off < count; off += kMaxCount) {
      const int n = int(std::min(kMaxCount, count - off));
      const size_t at = off * size_t(bytes);
      check_mpi(MPI_Allreduce(in == out ? MPI_IN_PLACE : i + at, o + at, n, type, MPI_SUM, comm_),
                "MPI_Allreduce");
    }
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1, local_size_ = 1;
  std::string host_;
};

}  // namespace

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
#if defined(__SANITIZE_ADDRESS__)
  // What MPI_Init allocates is OpenMPI's to keep or lose; LeakSanitizer ignores it (scripts/sanitize.sh).
  __lsan::ScopedDisabler mpi_init_allocations_are_mpis;
#endif
  int provided = 0;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

MpiRuntime::~MpiRuntime() {
#if defined(__SANITIZE_ADDRESS__)
  // Under LeakSanitizer (scripts/sanitize.sh) this is the process's one leak check, made while MPI's
  // own state is still reachable: MPI_Finalize unloads OpenMPI's components, whose leftovers would then
  // show as leaks with no stack to tell them from ours.
  __lsan_do_leak_check();
#endif
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

bool MpiRuntime::thread_multiple() {
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  return level == MPI_THREAD_MULTIPLE;
}

void MpiRuntime::abort(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::abort();
}

std::unique_ptr<Communicator> mpi_world() {
  MPI_Comm dup;
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  return std::make_unique<MpiCommunicator>(dup);
}

}  // namespace dp
