#!/usr/bin/env python3
"""A real cluster on one machine, for tests and for trying dptrain across nodes (issue 28).

From a cluster description (a job or cluster file's [cluster]: ranks per node, racks, [cluster.links]) it
builds one network namespace per node on a bridge, each with its own host name (a UTS namespace), an
sshd listening on the node's own address (keys made for this cluster), host names in
/etc/netns/<namespace>/hosts (never the machine's /etc/hosts), and the links between nodes shaped by the
kernel: on each node's interface an HTB class per destination node at the described bandwidth. The
launcher gets a namespace of its own on the bridge. Addresses exist only inside the namespaces made here.

Latency cannot be added here: this kernel has no netem. The links keep the veth pair's own latency
(tens of microseconds, measured by `dptrain profile --links`); added latency stays dptrain's link
emulator's ([cluster.emulate]). Loss comes from iptables' statistic match (netns_faults.py).

  netns_cluster.py up CLUSTER.toml --name NAME [--ranks N] [--slurm]
                                                              build it; print its state folder
  netns_cluster.py run CLUSTER.toml [--name NAME] -- CMD...   build it, run CMD in the launcher, tear down
  netns_cluster.py down NAME                                  tear it down (kills every process on its nodes)
  netns_cluster.py leftovers NAME                             the processes on its nodes besides sshd

The state folder (/run/dptrain-netns/NAME) holds `hostfile` (mpirun's, slots = ranks per node), `env`
(OpenMPI's options: TCP between nodes on the cluster's interface, shared memory inside a node, ssh as the
rsh agent, and waits that yield the core: every node shares this machine's cores, and ranks busy-polling
in MPI starve the kernel's TCP work, 3.5x slower MRA steps at 10 Gbit/s, measured), `state.json` and the
keys. CMD runs as `launcher` with that environment and DPTRAIN_CLUSTER set to the folder. Needs root
(namespaces); refuses in one line without it.

With --slurm the cluster also runs Slurm (Debian's slurm-wlm and munge): munged on this machine (its
socket a file, which every namespace sees), slurmctld on the launcher, a slurmd on each node under the
node's name and address, each node with a /tmp of its own (slurmstepd's PMIx folders are named by job
and step, not node); `env` then sets SLURM_CONF, so `salloc -N 3` on the launcher allocates the nodes.
Shared files of a job (run folders) must then live outside /tmp, as on a real cluster's shared disk.
"""
import argparse, json, os, shutil, signal, subprocess, sys, time, tomllib, zlib

STATE_ROOT = "/run/dptrain-netns"
UNSHAPED = "40gbit"   # the default class: traffic the description does not shape (the launcher's)
TCP_RETRIES2 = 5      # per namespace: see add_host


def fail(what, hint):
    print(f"netns_cluster: error: {what} (hint: {hint})", file=sys.stderr)
    sys.exit(2)


def sh(*args, check=True, **kw):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))}: {r.stderr.strip() or r.stdout.strip()}")
    return r


# --- the description -------------------------------------------------------------------------------------
def read_cluster(path, ranks=None):
    """Nodes (rank lists) and the bandwidth in Gbit/s between each pair of nodes, from [cluster]."""
    with open(path, "rb") as f:
        doc = tomllib.load(f)
    c = dict(doc.get("cluster", {}))
    if "file" in c:  # a cluster file's keys apply unless the job sets them
        with open(os.path.join(os.path.dirname(os.path.abspath(path)), c["file"]), "rb") as f:
            c = {**tomllib.load(f).get("cluster", {}), **c}
    n = ranks or doc.get("launch", {}).get("ranks") or (sum(c["node_sizes"]) if c.get("node_sizes") else None)
    if not n:
        fail(f"{path}: the rank count is not known", "give --ranks N or [launch] ranks")
    sizes = c.get("node_sizes") or ([c["ranks_per_node"]] * (n // c["ranks_per_node"]) if c.get("ranks_per_node")
                                    else [n])
    if sum(sizes) != n:
        fail(f"{path}: [cluster] nodes hold {sum(sizes)} ranks, not {n}", "fix node_sizes or ranks_per_node")
    nodes, first = [], 0
    for s in sizes:
        nodes.append(list(range(first, first + s)))
        first += s
    per_rack = c.get("nodes_per_rack") or len(nodes)
    links = c.get("links", {})
    matrix = links.get("gbps", [])

    def gbps(a, b):  # between nodes a and b: the slowest of their ranks' links
        if matrix:
            return min(min(matrix[i * n + j], matrix[j * n + i]) for i in nodes[a] for j in nodes[b])
        return links.get("rack_gbps", 10.0) if a // per_rack == b // per_rack else links.get("cross_gbps", 10.0)

    return nodes, [[0.0 if a == b else gbps(a, b) for b in range(len(nodes))] for a in range(len(nodes))]


# --- building and tearing down ----------------------------------------------------------------------------
def names(name, count):
    """Namespaces, interfaces and addresses of a cluster (interface names stay under 16 characters)."""
    subnet = f"10.{200 + zlib.crc32(name.encode()) % 50}.{zlib.crc32(name[::-1].encode()) % 250}"
    return {
        "name": name, "bridge": f"{name}br", "subnet": f"{subnet}.0/24", "state": f"{STATE_ROOT}/{name}",
        "launcher": {"host": "launcher", "ns": f"dpt-{name}-launcher", "veth": f"{name}vl", "ip": f"{subnet}.2"},
        "nodes": [{"host": f"node{k}", "ns": f"dpt-{name}-node{k}", "veth": f"{name}v{k}", "ip": f"{subnet}.{10 + k}"}
                  for k in range(count)],
    }


def add_host(st, h):
    sh("ip", "netns", "add", h["ns"])
    sh("ip", "link", "add", h["veth"], "type", "veth", "peer", "name", "eth0", "netns", h["ns"])
    sh("ip", "link", "set", h["veth"], "master", st["bridge"], "up")
    sh("ip", "-n", h["ns"], "addr", "add", f"{h['ip']}/24", "dev", "eth0")
    sh("ip", "-n", h["ns"], "link", "set", "eth0", "up")
    sh("ip", "-n", h["ns"], "link", "set", "lo", "up")
    # A connection with data queued for a peer that is gone is given up after 5 retransmissions (about 13 s)
    # instead of Linux's 15 (about 15 minutes), as clusters tuned for failover do: keepalive does not cover
    # it, and OpenMPI's orted on a cut-off node otherwise outlives its ranks by as long (measured: rank 0's
    # progress lines queued to mpirun, the probe timer at backoff 7 forty seconds after the cut).
    sh("ip", "netns", "exec", h["ns"], "sysctl", "-qw", f"net.ipv4.tcp_retries2={TCP_RETRIES2}")
    os.makedirs(f"/etc/netns/{h['ns']}", exist_ok=True)
    with open(f"/etc/netns/{h['ns']}/hosts", "w") as f:
        f.write("127.0.0.1 localhost\n")
        for other in [st["launcher"], *st["nodes"]]:
            f.write(f"{other['ip']} {other['host']}\n")


def shape(st, gbps):
    """On each node's eth0: HTB, one class per other node at the link's rate, the rest unshaped."""
    for a, node in enumerate(st["nodes"]):
        tc = ["tc", "-n", node["ns"]]
        sh(*tc, "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb", "default", "999")
        sh(*tc, "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:999", "htb", "rate", UNSHAPED)
        for b, other in enumerate(st["nodes"]):
            if a == b:
                continue
            rate = f"{int(gbps[a][b] * 1000)}mbit"
            burst = f"{max(64, int(gbps[a][b] * 1e9 / 8 * 0.001 / 1024))}k"  # a millisecond's worth
            sh(*tc, "class", "add", "dev", "eth0", "parent", "1:", "classid", f"1:{10 + b}", "htb", "rate", rate,
               "burst", burst, "cburst", burst)
            sh(*tc, "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", "1", "u32", "match",
               "ip", "dst", f"{other['ip']}/32", "flowid", f"1:{10 + b}")


def start_sshd(st, node):
    d = st["state"]
    cfg = f"{d}/sshd_{node['host']}.conf"
    with open(cfg, "w") as f:
        f.write(f"ListenAddress {node['ip']}\nPort 22\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/id.pub\n"
                f"PidFile {d}/sshd_{node['host']}.pid\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                "UsePAM no\nStrictModes no\nAcceptEnv *\nPermitUserEnvironment no\nLogLevel ERROR\n"
                "MaxStartups 100:30:200\nMaxSessions 100\nClientAliveInterval 2\nClientAliveCountMax 3\n")
    log = open(f"{d}/sshd_{node['host']}.log", "w")
    p = subprocess.Popen(["ip", "netns", "exec", node["ns"], "unshare", "--uts", "--", "sh", "-c",
                          f"hostname {node['host']} && exec /usr/sbin/sshd -D -e -f {cfg}"],
                         stdout=log, stderr=log, start_new_session=True)
    node["sshd_pid"] = p.pid


def write_client(st, nodes, ranks_per_node):
    d = st["state"]
    with open(f"{d}/ssh_config", "w") as f:
        f.write(f"Host *\n  IdentityFile {d}/id\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n"
                "  LogLevel ERROR\n  BatchMode yes\n  ConnectTimeout 5\n  ServerAliveInterval 2\n"
                "  ServerAliveCountMax 3\n")
    with open(f"{d}/ssh", "w") as f:  # OpenMPI's rsh agent: ssh with this cluster's keys
        f.write(f"#!/bin/sh\nexec ssh -F {d}/ssh_config \"$@\"\n")
    os.chmod(f"{d}/ssh", 0o755)
    with open(f"{d}/hostfile", "w") as f:
        for node, count in zip(st["nodes"], ranks_per_node):
            f.write(f"{node['host']} slots={count}\n")
    env = {
        "OMPI_MCA_plm_rsh_agent": f"{d}/ssh", "OMPI_MCA_plm_rsh_no_tree_spawn": "1",
        "OMPI_MCA_btl": "self,vader,tcp", "OMPI_MCA_btl_tcp_if_include": st["subnet"],
        "OMPI_MCA_oob_tcp_if_include": st["subnet"], "OMPI_MCA_mpi_yield_when_idle": "1",
        "PMIX_MCA_gds": "hash", "DPTRAIN_CLUSTER": d,
    }
    with open(f"{d}/env", "w") as f:
        f.writelines(f"export {k}={v}\n" for k, v in env.items())
    st["env"] = env


def start_slurm(st):
    """munged here, slurmctld on the launcher, a slurmd per node (own /tmp); waits until every node is idle."""
    d = f"{st['state']}/slurm"
    for sub in ("munge", "state", "log"):
        os.makedirs(f"{d}/{sub}", exist_ok=True)
    os.chmod(d, 0o755), os.chmod(f"{d}/munge", 0o755)
    with open(f"{d}/munge/munge.key", "wb") as f:
        f.write(os.urandom(1024))
    os.chmod(f"{d}/munge/munge.key", 0o400)
    sh("munged", "--force", f"--socket={d}/munge/munge.socket", f"--key-file={d}/munge/munge.key",
       f"--pid-file={d}/munge/munged.pid", f"--log-file={d}/log/munged.log", f"--seed-file={d}/munge/munge.seed")
    cpus = os.cpu_count()
    nodes = "".join(f"NodeName={n['host']} NodeAddr={n['ip']} CPUs={cpus} Sockets=1 CoresPerSocket={cpus} "
                    f"ThreadsPerCore=1 RealMemory=2000\n" for n in st["nodes"])
    with open(f"{d}/slurm.conf", "w") as f:  # %n: each slurmd's own spool, pid and log
        f.write(f"ClusterName=dptrain-netns\nSlurmctldHost=launcher({st['launcher']['ip']})\nSlurmUser=root\n"
                f"AuthType=auth/munge\nAuthInfo=socket={d}/munge/munge.socket\nCredType=cred/munge\n"
                f"StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool-%n\nSlurmctldPidFile={d}/slurmctld.pid\n"
                f"SlurmdPidFile={d}/slurmd-%n.pid\nSlurmctldLogFile={d}/log/slurmctld.log\n"
                f"SlurmdLogFile={d}/log/slurmd-%n.log\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nMpiDefault=pmix\nReturnToService=2\n"
                "SlurmdTimeout=30\nAccountingStorageType=accounting_storage/none\n"
                "JobAcctGatherType=jobacct_gather/none\nKillWait=5\n" + nodes +
                f"PartitionName=all Nodes={','.join(n['host'] for n in st['nodes'])} Default=YES MaxTime=INFINITE "
                "State=UP\n")
    conf = f"{d}/slurm.conf"
    # slurmctld: `ip netns exec` (its /sys remounted: fine for the controller). slurmd needs the machine's
    # cgroup mounts, which `ip netns exec` hides: nsenter joins only the network namespace, and unshare
    # gives the node its host name, its name table and a /tmp of its own.
    logs = open(f"{d}/log/daemons.log", "w")
    subprocess.Popen(["ip", "netns", "exec", st["launcher"]["ns"], "unshare", "--uts", "--", "sh", "-c",
                      f"hostname launcher && exec slurmctld -D -f {conf}"], stdout=logs, stderr=logs,
                     start_new_session=True)
    for node in st["nodes"]:
        tmp = f"{st['state']}/tmp-{node['host']}"
        os.makedirs(f"{d}/spool-{node['host']}", exist_ok=True)
        os.makedirs(tmp, mode=0o1777, exist_ok=True)
        subprocess.Popen(["nsenter", f"--net=/run/netns/{node['ns']}", "unshare", "--uts", "--mount", "--", "sh",
                          "-c", f"mount --bind /etc/netns/{node['ns']}/hosts /etc/hosts && mount --bind {tmp} /tmp "
                          f"&& hostname {node['host']} && exec slurmd -D -f {conf} -N {node['host']}"],
                         stdout=logs, stderr=logs, start_new_session=True)
    st["env"]["SLURM_CONF"] = conf
    with open(f"{st['state']}/env", "a") as f:
        f.write(f"export SLURM_CONF={conf}\n")
    deadline = time.monotonic() + 60
    while True:
        r = in_launcher(st, ["sinfo", "-h", "-o", "%T %D"], check=False, timeout=10)
        if r.returncode == 0 and r.stdout.split() == ["idle", str(len(st["nodes"]))]:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"Slurm's nodes are not idle after 60 s (sinfo: {r.stdout.strip()}); logs in {d}/log")
        time.sleep(0.5)


def wait_for_ssh(st, timeout=20):
    deadline = time.monotonic() + timeout
    for node in st["nodes"]:
        while True:
            r = in_launcher(st, [f"{st['state']}/ssh", node["host"], "hostname"], check=False, timeout=10)
            if r.returncode == 0 and r.stdout.strip() == node["host"]:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{node['host']}: sshd does not answer: {r.stderr.strip()}")
            time.sleep(0.2)


def up(desc, name, ranks=None, slurm=False):
    if os.geteuid() != 0:
        fail("network namespaces need root", "run as root (or skip: tests report themselves skipped)")
    for tool in ("ip", "tc", "/usr/sbin/sshd", "ssh", "ssh-keygen", "unshare") + (
            ("nsenter", "munged", "slurmctld", "slurmd", "sinfo") if slurm else ()):
        if not shutil.which(tool):
            fail(f"{tool} is not installed", "scripts/install-deps.sh --test (iproute2, openssh-server)")
    nodes, gbps = read_cluster(desc, ranks)
    st = names(name, len(nodes))
    if os.path.exists(st["state"]):
        fail(f"a cluster named {name} exists ({st['state']})", f"netns_cluster.py down {name}")
    os.makedirs(st["state"])
    try:
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{st['state']}/host_key")
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{st['state']}/id")
        sh("ip", "link", "add", st["bridge"], "type", "bridge")
        sh("ip", "link", "set", st["bridge"], "up")
        for h in [st["launcher"], *st["nodes"]]:
            add_host(st, h)
        shape(st, gbps)
        os.makedirs("/run/sshd", exist_ok=True)
        for node in st["nodes"]:
            start_sshd(st, node)
        write_client(st, nodes, [len(r) for r in nodes])
        st["gbps"], st["ranks"] = gbps, nodes
        save(st)
        wait_for_ssh(st)
        if slurm:
            start_slurm(st)
            save(st)
    except BaseException:
        down(name)
        raise
    return st


def save(st):
    with open(f"{st['state']}/state.json", "w") as f:
        json.dump(st, f, indent=1)


def load(name):
    try:
        with open(f"{STATE_ROOT}/{name}/state.json") as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def node_pids(ns):
    r = sh("ip", "netns", "pids", ns, check=False)
    return [int(p) for p in r.stdout.split()] if r.returncode == 0 else []


def leftovers(st):
    """Processes on the cluster's nodes besides their sshd listeners and slurmd daemons: what a finished job
    must not leave."""
    out = []
    for node in st["nodes"]:
        for pid in node_pids(node["ns"]):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue
            if pid != node.get("sshd_pid") and not cmd.startswith(("/usr/sbin/sshd -D", "sshd: /usr/sbin/sshd -D",
                                                                    "slurmd -D")):
                out.append((node["host"], pid, cmd))
    return out


def down(name):
    st = load(name) or names(name, 64)
    hosts = [st["launcher"], *st["nodes"]]
    for h in hosts:  # every process on a node first (SIGCONT: a frozen one must die too)
        for sig in (signal.SIGCONT, signal.SIGKILL):
            for pid in node_pids(h["ns"]):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
    munged = f"{st['state']}/slurm/munge/munged.pid"  # Slurm's daemons on the nodes died with them
    if os.path.exists(munged):
        try:
            os.kill(int(open(munged).read()), signal.SIGTERM)
        except (ValueError, ProcessLookupError):
            pass
    for h in hosts:  # the pair's outer end first: a namespace is freed asynchronously, its devices later
        sh("ip", "link", "del", h["veth"], check=False)
        sh("ip", "netns", "del", h["ns"], check=False)
        shutil.rmtree(f"/etc/netns/{h['ns']}", ignore_errors=True)
    sh("ip", "link", "del", st["bridge"], check=False)
    shutil.rmtree(st["state"], ignore_errors=True)


def in_launcher(st, cmd, env=None, **kw):
    """CMD on the launcher (its own host name, the cluster's environment)."""
    full = {**os.environ, **st["env"], **(env or {})}
    return subprocess.run(["ip", "netns", "exec", st["launcher"]["ns"], "unshare", "--uts", "--", "sh", "-c",
                           'hostname launcher && exec "$@"', "sh", *cmd], env=full, capture_output=True, text=True,
                          **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    u = sub.add_parser("up"); u.add_argument("cluster"); u.add_argument("--name", required=True)
    u.add_argument("--ranks", type=int); u.add_argument("--slurm", action="store_true")
    r = sub.add_parser("run"); r.add_argument("cluster"); r.add_argument("--name", default=f"c{os.getpid() % 10000}")
    r.add_argument("--ranks", type=int)
    sub.add_parser("down").add_argument("name")
    sub.add_parser("leftovers").add_argument("name")
    argv = sys.argv[1:]
    cmd = argv[argv.index("--") + 1:] if "--" in argv else []
    a = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if a.what == "up":
        print(up(a.cluster, a.name, a.ranks, a.slurm)["state"])
    elif a.what == "down":
        down(a.name)
    elif a.what == "leftovers":
        st = load(a.name) or fail(f"no cluster named {a.name}", "netns_cluster.py up")
        for host, pid, cmd in leftovers(st):
            print(f"{host} {pid} {cmd}")
    else:
        if not cmd:
            fail("run: no command", "netns_cluster.py run CLUSTER.toml -- CMD...")
        stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

        def stop(sig, _):  # unwinds to the teardown below; a second signal (timeout(1) sends its to the
            for s in stops:  # process group too) must not cut the teardown short
                signal.signal(s, signal.SIG_IGN)
            sys.exit(128 + sig)

        for sig in stops:
            signal.signal(sig, stop)
        st = up(a.cluster, a.name, a.ranks)
        try:
            p = subprocess.Popen(["ip", "netns", "exec", st["launcher"]["ns"], "unshare", "--uts", "--", "sh",
                                  "-c", 'hostname launcher && exec "$@"', "sh", *cmd], env={**os.environ, **st["env"]})
            sys.exit(p.wait())
        finally:
            down(a.name)


if __name__ == "__main__":
    main()
