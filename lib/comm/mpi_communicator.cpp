// Communicator over MPI for CPU buffers.
#include <mpi.h>

#include <fmt/format.h>

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

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm local;
    check_mpi(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
              "MPI_Comm_split_type");
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_Get_processor_name(name, &len);
    host_.assign(name, size_t(len));
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

  void allreduce_sum(std::span<float> d) override { allreduce(d.data(), d.size(), MPI_FLOAT); }
  void allreduce_sum(std::span<double> d) override { allreduce(d.data(), d.size(), MPI_DOUBLE); }

  void broadcast(std::span<std::byte> data, int root) override {
    for (size_t off = 0; off < data.size(); off += kMaxCount) {
      const int n = int(std::min(kMaxCount, data.size() - off));
      check_mpi(MPI_Bcast(data.data() + off, n, MPI_BYTE, root, comm_), "MPI_Bcast");
    }
  }
  void allgather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    DP_CHECK(all.size() == mine.size() * size_t(size_), "allgather: receive buffer has the wrong size");
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
  static constexpr size_t kMaxCount = size_t(1) << 30;  // MPI counts are int
  void allreduce(void* data, size_t count, MPI_Datatype type) {
    int bytes = 0;
    MPI_Type_size(type, &bytes);
    auto* p = static_cast<std::byte*>(data);
    for (size_t off = 0; off < count; off += kMaxCount) {
      const int n = int(std::min(kMaxCount, count - off));
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, p + off * size_t(bytes), n, type, MPI_SUM, comm_),
                "MPI_Allreduce");
    }
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1, local_size_ = 1;
  std::string host_;
};

}  // namespace

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  int provided = 0;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

MpiRuntime::~MpiRuntime() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
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
