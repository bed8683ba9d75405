#define BOOST_TEST_MODULE emit
#include <boost/test/unit_test.hpp>

// The scheduler emitters (lib/launch/emit.h): the sbatch script's #SBATCH lines computed from a request
// (memory per CPU rounded up to MiB, GPUs per node, time rounded up, the warning signal), its launch
// line, run by bash with a stand-in dptrain (arguments and exit status carried through); the MPIJob
// manifest's fields (text checks here; tests/cluster/mpijob_schema.sh validates it against the CRD);
// names sanitised for Slurm and Kubernetes; requests that cannot be placed refused.

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "lib/core/error.h"
#include "lib/launch/emit.h"

namespace {

dp::SchedulerRequest request() {
  dp::SchedulerRequest r;
  r.job_name = "Quick_start.v2";
  r.job_file = "configs/my job.toml";
  r.job_text = "[job]\nname = \"quick\"\n\n[launch]\nranks = 8\n";
  r.ranks = 8;
  r.nodes = 2;
  r.ranks_per_node = 4;
  r.cpus_per_rank = 2;
  r.memory_per_rank_bytes = (int64_t(3) << 30) + 1;  // 3 GiB and a byte
  r.gpus_per_rank = 1;
  r.time_limit_s = 3661.2;
  r.image = "registry.example/dptrain:1";
  r.run_args = {"--out", "runs/q 8"};
  return r;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::filesystem::path scratch() {
  auto dir = std::filesystem::temp_directory_path() / ("dptrain-test-emit-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

int exit_status(const std::string& command) {
  const int s = std::system(command.c_str());
  return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(names)

BOOST_AUTO_TEST_CASE(slurm_and_kubernetes_names) {
  BOOST_TEST(dp::slurm_job_name("quick start/1") == "quick-start-1");
  BOOST_TEST(dp::slurm_job_name("a.b_c-d") == "a.b_c-d");
  BOOST_TEST(dp::slurm_job_name("") == "dptrain");
  BOOST_TEST(dp::kubernetes_name("Quick_start.v2") == "quick-start-v2");
  BOOST_TEST(dp::kubernetes_name("9lives") == "dptrain-9lives");
  BOOST_TEST(dp::kubernetes_name("__") == "dptrain");
  BOOST_TEST(dp::kubernetes_name(std::string(100, 'x')).size() == 40u);
  BOOST_TEST(dp::kubernetes_name(std::string(39, 'x') + "-y").back() != '-');
}

BOOST_AUTO_TEST_CASE(slurm_time_rounds_up) {
  BOOST_TEST(dp::slurm_time(3661.2) == "0-01:01:02");
  BOOST_TEST(dp::slurm_time(60) == "0-00:01:00");
  BOOST_TEST(dp::slurm_time(2 * 86400 + 5) == "2-00:00:05");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sbatch)

BOOST_AUTO_TEST_CASE(sbatch_lines_from_the_request) {
  const std::string s = dp::sbatch_script(request());
  BOOST_TEST(s.starts_with("#!/bin/bash\n"));
  for (const char* line : {"#SBATCH --job-name=Quick_start.v2\n", "#SBATCH --ntasks=8\n", "#SBATCH --nodes=2\n",
                           "#SBATCH --ntasks-per-node=4\n", "#SBATCH --cpus-per-task=2\n",
                           "#SBATCH --mem-per-cpu=1537M\n",  // (3 GiB + 1) / 2 CPUs, rounded up to MiB
                           "#SBATCH --gres=gpu:4\n",         // per node: 1 per rank, 4 ranks
                           "#SBATCH --time=0-01:01:02\n", "#SBATCH --signal=B:USR1@366\n",
                           "#SBATCH --output=Quick_start.v2-%j.out\n"})
    BOOST_TEST(contains(s, line), line);
  BOOST_TEST(contains(s, "dptrain run 'configs/my job.toml' --set=launch.ranks=8 --out 'runs/q 8' &\n"));
  // The warning goes on to dptrain, which checkpoints and stops.
  BOOST_TEST(contains(s, "kill -USR1 \"$run_pid\"' USR1\n"));
}

BOOST_AUTO_TEST_CASE(optional_lines_left_out) {
  auto r = request();
  r.memory_per_rank_bytes = 0;
  r.gpus_per_rank = 0;
  r.time_limit_s = 0;
  const std::string s = dp::sbatch_script(r);
  BOOST_TEST(!contains(s, "--mem"));
  BOOST_TEST(!contains(s, "--gres"));
  BOOST_TEST(!contains(s, "--time"));
  BOOST_TEST(!contains(s, "--signal"));
  BOOST_TEST(!contains(s, "trap"));
  BOOST_TEST(!contains(s, "--no-kill"));
  r.time_limit_s = 100;  // the warning is at least a minute (Slurm's timer)
  BOOST_TEST(contains(dp::sbatch_script(r), "#SBATCH --signal=B:USR1@60\n"));
  r.max_restarts = 1;  // elastic restarts need the allocation to outlive a failed node
  BOOST_TEST(contains(dp::sbatch_script(r), "#SBATCH --no-kill\n"));
}

BOOST_AUTO_TEST_CASE(script_runs_its_launch_line_and_returns_its_status) {
  const auto dir = scratch();
  const auto fake = dir / "fake-dptrain";
  std::ofstream(fake) << "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done > \"" << (dir / "args").string()
                      << "\"\nexit 3\n";
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  auto r = request();
  r.dptrain = fake.string();
  std::ofstream(dir / "job.sbatch") << dp::sbatch_script(r);
  BOOST_TEST(exit_status("bash -n " + (dir / "job.sbatch").string()) == 0);
  BOOST_TEST(exit_status("cd " + dir.string() + " && bash job.sbatch") == 3);
  std::ifstream in(dir / "args");
  std::stringstream args;
  args << in.rdbuf();
  BOOST_TEST(args.str() == "run\nconfigs/my job.toml\n--set=launch.ranks=8\n--out\nruns/q 8\n");
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(mpijob)

BOOST_AUTO_TEST_CASE(manifest_fields) {
  const std::string m = dp::mpijob_manifest(request());
  for (const char* part :
       {"kind: \"ConfigMap\"\n", "  name: \"quick-start-v2-job\"\n", "apiVersion: \"kubeflow.org/v2beta1\"\n",
        "kind: \"MPIJob\"\n", "  name: \"quick-start-v2\"\n", "  slotsPerWorker: 4\n",
        "    activeDeadlineSeconds: 3662\n", "    Worker:\n      replicas: 2\n",
        "    Launcher:\n      replicas: 1\n", "image: \"registry.example/dptrain:1\"",
        "cpu: \"8\"", "memory: \"12289Mi\"", "nvidia.com/gpu: \"4\"", "mountPath: \"/etc/dptrain\"",
        "[\"mpirun\", \"-np\", \"8\"", "\"dptrain\", \"run\", \"/etc/dptrain/job.toml\"",
        "\"--out\", \"runs/q 8\"]", "sshAuthMountPath: \"/home/dptrain/.ssh\"",
        "command: [\"/usr/sbin/sshd\", \"-De\", \"-f\", \"/home/dptrain/.sshd_config\"]"})
    BOOST_TEST(contains(m, part), part);
  // The job text as a literal block, each line indented under job.toml, blank lines kept.
  BOOST_TEST(contains(m, "  job.toml: |2\n    [job]\n    name = \"quick\"\n\n    [launch]\n    ranks = 8\n---\n"));
}

BOOST_AUTO_TEST_CASE(default_image_and_optional_resources) {
  auto r = request();
  r.image.clear();
  r.gpus_per_rank = 0;
  r.memory_per_rank_bytes = 0;
  r.time_limit_s = 0;
  const std::string m = dp::mpijob_manifest(r);
  BOOST_TEST(contains(m, "image: \"" + dp::default_image() + "\""));
  BOOST_TEST(dp::default_image().starts_with("localhost/dptrain:"));
  BOOST_TEST(!contains(m, "nvidia.com/gpu"));
  BOOST_TEST(!contains(m, "activeDeadlineSeconds"));
  BOOST_TEST(!contains(m, "12289Mi"));
}

BOOST_AUTO_TEST_CASE(job_text_without_final_newline_and_with_indented_first_line) {
  auto r = request();
  r.job_text = "  # indented\n[job]";
  BOOST_TEST(contains(dp::mpijob_manifest(r), "  job.toml: |2-\n      # indented\n    [job]\n---\n"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(requests_that_cannot_be_placed) {
  auto bad = [](auto change) {
    auto r = request();
    change(r);
    BOOST_CHECK_THROW(dp::sbatch_script(r), dp::UsageError);
    BOOST_CHECK_THROW(dp::mpijob_manifest(r), dp::UsageError);
  };
  bad([](dp::SchedulerRequest& r) { r.ranks = 0; });
  bad([](dp::SchedulerRequest& r) { r.ranks = 9; });  // 2 nodes of 4
  bad([](dp::SchedulerRequest& r) { r.nodes = 9; r.ranks_per_node = 1; });  // a node without a rank
  bad([](dp::SchedulerRequest& r) { r.cpus_per_rank = 0; });
  bad([](dp::SchedulerRequest& r) { r.memory_per_rank_bytes = -1; });
  bad([](dp::SchedulerRequest& r) { r.time_limit_s = -1; });
  bad([](dp::SchedulerRequest& r) { r.job_file.clear(); });
  bad([](dp::SchedulerRequest& r) { r.dptrain.clear(); });
}
