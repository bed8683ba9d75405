# dptrain's container image: a build stage compiles dptrain (CPU only) from Debian's packages, a runtime
# stage holds only what it needs to run: its shared libraries, mpirun, the data packages, the binary, its
# man pages, shell completions and the example jobs. Also the MPI Operator's (kubeflow.org/v2beta1) worker
# image: sshd and ssh for OpenMPI's rsh launcher, set up the way the operator's own base image is.
#
#   podman build -t localhost/dptrain:0.1.0 .            (or docker build; --build-arg BASE_IMAGE=...)
#   podman run --rm localhost/dptrain:0.1.0 run configs/quickstart.toml
#
# BASE_IMAGE: any Debian 12 (bookworm) image with a reachable package mirror; tests/container/podman.sh
# passes one it imports from a debootstrap root file system (no registry is reachable there).
ARG BASE_IMAGE=debian:bookworm

# --- build stage ------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS build
ARG DEBIAN_FRONTEND=noninteractive
# scripts/install-deps.sh's build packages, less the test-only ones (Boost.Test, python3, fish).
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends build-essential cmake ninja-build pkg-config zlib1g-dev \
      libcli11-dev libtomlplusplus-dev libfmt-dev libopenmpi-dev openmpi-bin libopenblas-dev libdnnl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake cmake
COPY lib lib
COPY kernels kernels
COPY models models
COPY apps apps
COPY man man
COPY completions completions
# No CUDA toolkit in the base: the CPU build. The tests run on the host (scripts/test.sh), not in here.
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDPTRAIN_WITH_CUDA=OFF \
      -DDPTRAIN_BUILD_TESTS=OFF -DCMAKE_INSTALL_PREFIX=/usr/local \
 && ninja -C build dptrain \
 && DESTDIR=/staging cmake --install build

# --- runtime stage ----------------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS runtime
ARG DEBIAN_FRONTEND=noninteractive
# The libraries the binary links (ldd: OpenBLAS, oneDNN with OpenMP, OpenMPI, fmt, TOML++, zlib), mpirun,
# the data (Fashion-MNIST, the Jargon File), ssh/sshd for multi-node OpenMPI, man to read the pages.
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends libopenblas0-pthread libdnnl2 libgomp1 libopenmpi3 \
      openmpi-bin libfmt9 libtomlplusplus3 zlib1g dataset-fashion-mnist jargon-text \
      openssh-client openssh-server man-db \
 && rm -rf /var/lib/apt/lists/* \
 && test -s /usr/share/doc/jargon-text/jargon.txt.gz  # a base that drops /usr/share/doc would lose it
COPY --from=build /staging/usr/local /usr/local

# ssh as the MPI Operator's base image sets it up: the operator mounts the job's key pair (a Secret:
# id_rsa, id_rsa.pub, authorized_keys) read-only at sshAuthMountPath, so hosts are not checked or recorded,
# file modes are not checked, and sshd listens on 2222 (an unprivileged port): as the user dptrain with
# its own configuration (below), or as root (pods with runAsUser 0) with the system's.
RUN sed -i 's/^#\?\s*StrictHostKeyChecking .*/    StrictHostKeyChecking no/' /etc/ssh/ssh_config \
 && sed -i 's/^#\?Port .*/Port 2222/; s/^#\?StrictModes .*/StrictModes no/' /etc/ssh/sshd_config \
 && printf '    UserKnownHostsFile /dev/null\n    LogLevel ERROR\n    Port 2222\n' >> /etc/ssh/ssh_config \
 && mkdir -p /run/sshd \
 && useradd --create-home --uid 1000 --shell /bin/bash dptrain
COPY scripts/container-entrypoint.sh /usr/local/bin/dptrain-entrypoint
# A job as the unprivileged user needs no OMPI_ALLOW_RUN_AS_ROOT.
USER dptrain
WORKDIR /home/dptrain
# Worker pods: command /usr/sbin/sshd, args -De -f /home/dptrain/.sshd_config (sshAuthMountPath
# /home/dptrain/.ssh; as root: /usr/sbin/sshd -De, /root/.ssh); the launcher: mpirun ... dptrain run JOB.
RUN printf 'Port 2222\nPidFile /home/dptrain/sshd.pid\nHostKey /home/dptrain/.ssh/id_rsa\nStrictModes no\n' \
      > .sshd_config \
 && mkdir runs
COPY --chown=dptrain configs configs
RUN dptrain --version  # every library found, the binary starts
LABEL org.opencontainers.image.title="dptrain" org.opencontainers.image.version="0.1.0"
# dptrain's arguments run dptrain (IMAGE run JOB); a program's name runs it (IMAGE mpirun ..., IMAGE bash).
ENTRYPOINT ["/usr/local/bin/dptrain-entrypoint"]
CMD ["--help"]
