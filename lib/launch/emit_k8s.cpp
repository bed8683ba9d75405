// mpijob_manifest: a ConfigMap holding the job file and a Kubeflow MPI Operator MPIJob
// (kubeflow.org/v2beta1) that runs it (see emit.h). The launcher pod runs mpirun, which reaches the
// workers over ssh (the operator writes the hostfile and the keys); each worker pod runs sshd and
// holds ranks_per_node ranks, all as the image's user `dptrain` (the project's Dockerfile: sshd on port 2222
// with its own configuration, the operator's keys mounted in its home, as the operator's own images).
// The YAML is written by hand: block style, every string double-quoted.
#include <fmt/format.h>

#include <cmath>

#include "lib/launch/emit.h"

namespace dp {
namespace {

constexpr int64_t kMiB = int64_t(1) << 20;

// A YAML double-quoted scalar.
std::string q(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// A literal block scalar of `text`, its lines indented by `indent` spaces, after "key: ". The
// indentation indicator keeps a first line that starts with spaces; the chomping indicator keeps
// the text's trailing newlines exactly.
std::string block(const std::string& text, int indent, int parent_indent) {
  size_t trailing = 0;
  while (trailing < text.size() && text[text.size() - 1 - trailing] == '\n') ++trailing;
  const char* chomp = trailing == 0 ? "-" : trailing == 1 ? "" : "+";
  std::string out = fmt::format("|{}{}\n", indent - parent_indent, chomp);
  const std::string body = text.substr(0, text.size() - trailing);
  size_t start = 0;
  while (start <= body.size()) {
    const size_t eol = body.find('\n', start);
    const std::string line = body.substr(start, eol == std::string::npos ? std::string::npos : eol - start);
    out += line.empty() ? "\n" : std::string(indent, ' ') + line + "\n";
    if (eol == std::string::npos) break;
    start = eol + 1;
  }
  for (size_t i = 1; i < trailing; ++i) out += "\n";
  return out;
}

std::string flow_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + q(items[i]);
  return out + "]";
}

std::string metadata(const std::string& name, const SchedulerRequest& r, const std::string& instance) {
  std::string s = "metadata:\n  name: " + q(name) + "\n";
  if (!r.namespace_name.empty()) s += "  namespace: " + q(r.namespace_name) + "\n";
  s += "  labels:\n    app.kubernetes.io/name: \"dptrain\"\n    app.kubernetes.io/instance: " + q(instance) + "\n";
  return s;
}

// One replica type's pod template: one container, the job's ConfigMap mounted read-only.
std::string pod(const std::string& container, const std::string& image, const std::vector<std::string>& command,
                const std::vector<std::pair<std::string, std::string>>& resources, const std::string& config_map) {
  const std::string i(6, ' ');  // under "mpiReplicaSpecs: <Type>:"
  std::string s = i + "template:\n" + i + "  spec:\n" + i + "    containers:\n";
  s += i + "    - name: " + q(container) + "\n";
  s += i + "      image: " + q(image) + "\n";
  s += i + "      command: " + flow_list(command) + "\n";
  s += i + "      resources:\n";
  for (const char* kind : {"requests", "limits"}) {
    s += i + "        " + kind + ":\n";
    for (const auto& [resource, amount] : resources) s += i + "          " + resource + ": " + q(amount) + "\n";
  }
  s += i + "      volumeMounts:\n";
  s += i + "      - name: \"job\"\n";
  s += i + "        mountPath: " + q(kMountedJobDir) + "\n" + i + "        readOnly: true\n";
  s += i + "    volumes:\n";
  s += i + "    - name: \"job\"\n" + i + "      configMap:\n" + i + "        name: " + q(config_map) + "\n";
  s += i + "        items:\n" + i + "        - key: \"job.toml\"\n" + i + "          path: \"job.toml\"\n";
  return s;
}

}  // namespace

std::string mpijob_manifest(const SchedulerRequest& r) {
  check_request(r);
  const std::string name = kubernetes_name(r.job_name);
  const std::string config_map = name + "-job";
  const std::string image = r.image.empty() ? default_image() : r.image;
  const int64_t slots = r.ranks_per_node;

  std::string s = fmt::format(
      "# dptrain job '{}': {} ranks on {} worker pod(s) of {} slot(s), written by dptrain.\n"
      "# Apply with: kubectl apply -f FILE (needs the Kubeflow MPI Operator, kubeflow.org/v2beta1). The image\n"
"# is the project's Dockerfile's (dptrain, OpenMPI, ssh and sshd); ranks run as its user dptrain and read {}.\n",
      r.job_name, r.ranks, r.nodes, slots, kMountedJobFile);
  s += "apiVersion: \"v1\"\nkind: \"ConfigMap\"\n" + metadata(config_map, r, name);
  s += "data:\n  job.toml: " + block(r.job_text, 4, 2);
  s += "---\napiVersion: \"kubeflow.org/v2beta1\"\nkind: \"MPIJob\"\n" + metadata(name, r, name);
  s += "spec:\n";
  s += fmt::format("  slotsPerWorker: {}\n", slots);
  s += "  runLauncherAsWorker: false\n";
  s += "  mpiImplementation: \"OpenMPI\"\n";
  s += "  launcherCreationPolicy: \"WaitForWorkersReady\"\n";  // mpirun starts once every sshd is up
  s += "  sshAuthMountPath: \"/home/dptrain/.ssh\"\n";        // the image's user's home
  s += "  runPolicy:\n    cleanPodPolicy: \"Running\"\n    backoffLimit: 0\n";
  if (r.time_limit_s > 0)
    s += fmt::format("    activeDeadlineSeconds: {}\n", static_cast<int64_t>(std::ceil(r.time_limit_s)));
  s += "  mpiReplicaSpecs:\n";

  std::vector<std::string> launcher{"mpirun", "-np", std::to_string(r.ranks),
                                    "--bind-to", "none", r.container_dptrain, "run", kMountedJobFile,
                                    fmt::format("--set=launch.ranks={}", r.ranks), "--set=log.progress=plain"};
  launcher.insert(launcher.end(), r.run_args.begin(), r.run_args.end());
  s += "    Launcher:\n      replicas: 1\n      restartPolicy: \"Never\"\n";
  s += pod("launcher", image, launcher, {{"cpu", "1"}, {"memory", "512Mi"}}, config_map);

  std::vector<std::pair<std::string, std::string>> worker{{"cpu", std::to_string(r.cpus_per_rank * slots)}};
  if (r.memory_per_rank_bytes > 0)
    worker.emplace_back("memory", fmt::format("{}Mi", (r.memory_per_rank_bytes * slots + kMiB - 1) / kMiB));
  if (r.gpus_per_rank > 0) worker.emplace_back("nvidia.com/gpu", std::to_string(r.gpus_per_rank * slots));
  s += fmt::format("    Worker:\n      replicas: {}\n      restartPolicy: \"Never\"\n", r.nodes);
  s += pod("worker", image, {"/usr/sbin/sshd", "-De", "-f", "/home/dptrain/.sshd_config"}, worker, config_map);
  return s;
}

}  // namespace dp
