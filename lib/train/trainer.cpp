// A training run, set up: the run folder held, the trace, the emulated network, the device, the checked
// inputs and the checkpoint to resume; then the loop (run_loop.h) and its result.
#include "lib/train/trainer.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "kernels/cpu/ops.h"
#include "kernels/kernel_table.h"
#include "lib/balance/emulate.h"
#include "lib/comm/collective_queue.h"
#include "lib/core/backend.h"
#include "lib/core/memory_meter.h"
#include "lib/core/trace.h"
#include "lib/measure/device.h"
#include "lib/measure/job_links.h"
#include "lib/train/registry.h"
#include "lib/train/run_loop.h"
#include "lib/train/run_setup.h"
#include "lib/train/run_trace.h"
#include "lib/train/watchdog.h"

namespace dp {

using namespace train_detail;

RunInputs check_run_inputs(const Job& job, const RunOptions& opts) {
  (void)choose_device(job);
  const Setup s = build_setup(job, opts, cpu_kernels());
  check_run_dir_writable(s.dir);
  const StrategyEntry& strategy = strategy_entry(job.parallel.strategy);
  if (strategy.check_job) strategy.check_job(job, *s.model);
  return {finished_run_note(s, job)};
}

RunResult train(const Job& job, Communicator& launched, const RunOptions& opts) {
  const auto wall_start = RunLoop::Clock::now();
  // One run at a time in a folder: held before anything is written (by rank 0, or by our launcher).
  const std::optional<RunLock> folder_lock = hold_run_folder(launched, run_dir_of(job, opts));
  // The timeline (trace.json): this thread is the rank's compute track; threads started below (MRA's
  // communication thread, CGP's server) take their own tracks of the same tracer.
  const std::unique_ptr<Tracer> tracer = make_run_tracer(job, launched);
  const TraceThread traced_thread(tracer.get(), "compute");
  // Under emulated links every message of the run (MRA's thread included) is paced as on a network.
  const std::unique_ptr<Communicator> paced = paced_by_job_links(job, launched);
  Communicator& comm = paced ? *paced : launched;
  cpu::set_compute_threads(default_threads(job, comm));
  // On GPUs: one rank per device, gradients summed by NCCL on the devices (a queue behind the kernels).
  const DeviceChoice device = select_device(job, comm);
  std::unique_ptr<CollectiveQueue> gpu_queue;
  if (device.device.kind == DeviceKind::cuda && comm.size() > 1) gpu_queue = make_nccl_queue(comm);

  // Emulated device memory holds every buffer of this rank from here on (a GPU's is its own).
  const EmulatedMemory memory = device.kernels->host_memory ? emulated_memory(job, comm.rank()) : EmulatedMemory{};
  const CapacityScope capacity(memory.bytes, memory.key);
  MemoryMeter::process().set_role(fmt::format("{} rank", name_of(job.parallel.strategy)));
  Setup s = build_setup(job, opts, *device.kernels);
  agree_on_resume(comm, s, job);
  if (const auto note = finished_run_note(s, job)) {  // --resume of a finished run: nothing changes
    if (comm.rank() == 0) std::fprintf(opts.log, "%s\n", note->c_str());
    RunResult result;
    result.finished_before = true;
    result.first_step = s.resume_from->step + 1;
    result.summary.steps = s.resume_from->step;
    return result;
  }
  const Watchdog watchdog(launched, job.launch.wait_timeout, s.dir.heartbeat());  // no wait blocks forever
  RunLoop run(job, comm, opts, s, device, std::move(gpu_queue), wall_start);
  run.open();
  if (tracer) tracer->set_origin(agreed_trace_origin(launched));  // one time line for every rank
  run.train_all();
  if (tracer) run.write_trace(*tracer, launched);  // over the launched communicator, not paced
  return run.finish();
}

}  // namespace dp
