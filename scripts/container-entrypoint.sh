#!/bin/sh
# The container image's entrypoint: dptrain's own arguments run dptrain, anything else runs as given.
#   IMAGE run configs/quickstart.toml    -> dptrain run configs/quickstart.toml   (a subcommand or an option)
#   IMAGE dptrain plan JOB               -> dptrain plan JOB
#   IMAGE mpirun -np 4 dptrain run JOB   -> mpirun ...       (the MPI Operator's launcher, given as args)
#   IMAGE /usr/sbin/sshd -De -f ...      -> sshd             (the MPI Operator's workers, given as args)
# The first argument is a command when it names an executable file (by path, or found on PATH), else it is
# dptrain's: dptrain's subcommands (run, plan, profile, ...) are no programs of this image.
set -e
[ "$#" -eq 0 ] && exec dptrain --help

is_program() {
  case "$1" in
    -*) return 1 ;;
    */*) [ -f "$1" ] && [ -x "$1" ]; return ;;
  esac
  old_ifs=$IFS; IFS=:
  for dir in $PATH; do
    if [ -f "${dir:-.}/$1" ] && [ -x "${dir:-.}/$1" ]; then IFS=$old_ifs; return 0; fi
  done
  IFS=$old_ifs
  return 1
}

if is_program "$1"; then exec "$@"; fi
exec dptrain "$@"
