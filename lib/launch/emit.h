// Scheduler files for a sized job: an sbatch script for Slurm and a Kubeflow MPI Operator MPIJob
// manifest (kubeflow.org/v2beta1) for Kubernetes. Pure functions of a SchedulerRequest, which
// `dptrain estimate` fills from its estimate; nothing is read from the machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dp {

struct SchedulerRequest {            // filled by `dptrain estimate` from its estimate
  std::string job_name;              // [job] name (sanitised for Slurm and for a Kubernetes object name)
  std::string job_file;              // the job file's path as given (the sbatch script runs it)
  std::string job_text;              // the resolved job as TOML (the MPIJob's ConfigMap holds it)
  int64_t ranks = 1, nodes = 1, ranks_per_node = 1;
  int64_t cpus_per_rank = 1;         // cores per rank
  int64_t memory_per_rank_bytes = 0; // estimated peak + headroom (0: not requested)
  int64_t gpus_per_rank = 0;
  double time_limit_s = 0;           // estimated wall time + headroom (0: none)
  std::string image;                 // container image (k8s)
  std::string dptrain = "dptrain";   // the executable on the cluster's machines (sbatch)
  std::vector<std::string> run_args; // extra `dptrain run` arguments (--out DIR, --set ...)
  int64_t max_restarts = 0;          // [launch] max_restarts: > 0 keeps the allocation when a node fails
  // Added by [launch] (defaults keep the fields above sufficient):
  std::string container_dptrain = "dptrain";  // the executable inside the image (k8s)
  std::string namespace_name;                 // metadata.namespace of both objects ("": the current one)
};

// The image a manifest names when the request gives none: localhost/dptrain:<this version>.
std::string default_image();

// A Slurm job name: the characters sbatch and file names take safely ([A-Za-z0-9._-], others '-').
std::string slurm_job_name(const std::string& name);
// A Kubernetes object name (an RFC 1035 label: lowercase letters, digits and '-', starting with a
// letter, at most 40 characters so the operator's "-launcher" and "-worker-N" suffixes fit in 63).
std::string kubernetes_name(const std::string& name);
// Slurm's --time value, "D-HH:MM:SS", seconds rounded up.
std::string slurm_time(double seconds);

// #SBATCH lines (job-name, ntasks, nodes, ntasks-per-node, cpus-per-task, mem-per-cpu, gres=gpu:N,
// time, signal B:USR1 before the limit, output), then `dptrain run JOB --set launch.ranks=N ARGS`,
// which starts its ranks with srun --mpi=pmix inside the allocation ([launch] launcher = "auto").
// Throws UsageError for a request that cannot be placed (ranks < 1, nodes * ranks_per_node < ranks, ...).
std::string sbatch_script(const SchedulerRequest& request);

// YAML: a ConfigMap holding job.toml, then the MPIJob (kubeflow.org/v2beta1: slotsPerWorker = ranks per
// node, runPolicy, sshAuthMountPath, Launcher (1 replica running mpirun ... dptrain run
// /etc/dptrain/job.toml) and Worker (replicas = nodes, running sshd) with their resources, the image
// (default_image() when none), and the ConfigMap mounted at /etc/dptrain). Throws UsageError as
// sbatch_script does.
std::string mpijob_manifest(const SchedulerRequest& request);

// Throws UsageError naming the field when the request cannot be placed: counts below 1, fewer slots
// (nodes * ranks_per_node) than ranks, negative memory, GPUs or time, no job file or executable.
void check_request(const SchedulerRequest& request);

// Where the manifest mounts the job file, and the file's path there.
inline constexpr const char* kMountedJobDir = "/etc/dptrain";
inline constexpr const char* kMountedJobFile = "/etc/dptrain/job.toml";

}  // namespace dp
