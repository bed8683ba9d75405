# bash completion for dptrain(1).
# Install: copy to /usr/share/bash-completion/completions/dptrain (or source it from ~/.bashrc).
#
# Completes the subcommands (run, plan, estimate, profile, monitor), their options, .toml job files, directories for --out, and job keys
# (table.key=) for --set, with the valid values of the enumerated keys after the '='.
# Works with and without the bash-completion package.

# Every job key (lib/job/schema.cpp; man dptrain-job(5)); a nested table's keys carry its whole dotted name.
_dptrain_keys=(
  job.name job.seed job.output_dir
  model.type model.hidden model.channels model.blocks model.layers model.heads model.width model.context
  model.tied_head
  data.dataset data.path data.train_samples data.test_samples data.features data.classes data.context
  data.val_fraction
  optim.name optim.lr optim.momentum optim.weight_decay optim.beta1 optim.beta2 optim.eps
  optim.schedule optim.warmup_steps optim.step_size optim.gamma optim.min_lr
  train.epochs train.steps train.global_batch train.eval_every train.threads train.device train.precision train.on_nonfinite
  train.micro_batch train.recompute
  parallel.strategy
  parallel.comm.algorithm parallel.comm.bucket_mb parallel.comm.first_bucket_mb parallel.comm.overlap
  parallel.comm.overlap_forward
  parallel.comm.sharded_update
  parallel.balance.mode parallel.balance.every parallel.balance.threshold parallel.balance.speeds
  parallel.balance.max_share
  parallel.cgp.solver parallel.cgp.group_count parallel.cgp.groups parallel.cgp.max_staleness
  parallel.cgp.exchange_every parallel.cgp.regroup_every parallel.cgp.regroup_drift parallel.cgp.regroup_gain
  parallel.cgp.deterministic parallel.cgp.solver_seconds
  parallel.pipeline.stages parallel.pipeline.micro_batches parallel.pipeline.recompute parallel.pipeline.profile
  cluster.file cluster.speeds cluster.memory_gb cluster.kinds cluster.kind_counts cluster.kind_speeds
  cluster.kind_memory_gb cluster.ranks_per_node cluster.node_sizes cluster.nodes_per_rack cluster.sample_rate
  cluster.links.node_gbps cluster.links.node_latency_us cluster.links.rack_gbps cluster.links.rack_latency_us
  cluster.links.cross_gbps cluster.links.cross_latency_us cluster.links.gbps cluster.links.latency_us
  cluster.emulate.slowdown cluster.emulate.fluctuate_rank cluster.emulate.fluctuate_from
  cluster.emulate.fluctuate_to cluster.emulate.fluctuate_factor cluster.emulate.fluctuate_move_every cluster.emulate.random_walk
  cluster.emulate.link_gbps cluster.emulate.link_latency_us cluster.emulate.memory_gb cluster.emulate.as_described
  launch.ranks launch.hosts launch.mpirun_args launch.mpirun launch.hostfile launch.launcher launch.wait_timeout launch.max_restarts
  checkpoint.enabled checkpoint.every checkpoint.keep
  log.every log.progress log.trace log.trace_first log.trace_steps
)

# Valid values of the enumerated keys, "dir" for keys that name a directory, "file" for a file or
# directory, or nothing.
_dptrain_values() {
  case $1 in
    model.type) echo mlp cnn gpt ;;
    model.tied_head) echo true false ;;
    data.dataset) echo fashion-mnist synthetic text ;;
    optim.name) echo sgd adamw ;;
    optim.schedule) echo constant step cosine ;;
    train.device) echo auto cpu cuda ;;
    train.precision) echo fp32 bf16 ;;
    train.on_nonfinite) echo stop skip ;;
    train.recompute) echo none all ;;
    parallel.strategy) echo data cgp pipeline cgp-pipeline auto ;;
    parallel.pipeline.recompute) echo auto none all ;;
    parallel.pipeline.profile) echo file ;;
    parallel.cgp.solver) echo aga pls exhaustive sorted ;;
    parallel.cgp.deterministic) echo true false ;;
    cluster.emulate.as_described) echo true false ;;
    cluster.file) echo file ;;
    parallel.comm.algorithm) echo native ring mra ;;
    parallel.comm.overlap | parallel.comm.overlap_forward | parallel.comm.sharded_update) echo true false ;;
    parallel.balance.mode) echo equal idat ;;
    checkpoint.enabled) echo true false ;;
    log.progress) echo auto bar plain none ;;
    launch.launcher) echo auto mpirun srun ;;
    launch.hostfile) echo file ;;
    log.trace) echo true false ;;
    job.output_dir) echo dir ;;
    data.path) echo file ;;
  esac
}

# Appends to COMPREPLY the directories (and with $2 = toml, the *.toml files) starting with $1.
_dptrain_paths() {
  local cur=$1 kind=$2 IFS=$'\n' f
  compopt -o filenames 2>/dev/null
  COMPREPLY+=($(compgen -d -- "$cur"))
  if [[ $kind == toml ]]; then
    for f in $(compgen -f -- "$cur"); do
      [[ $f == *.toml && ! -d $f ]] && COMPREPLY+=("$f")
    done
  elif [[ $kind == any ]]; then
    COMPREPLY+=($(compgen -f -- "$cur"))
  fi
}

# Candidates for the argument of --set, given what is typed so far ($1).
_dptrain_set_arg() {
  local cur=$1
  if [[ $cur == *=* ]]; then
    local key=${cur%%=*} val=${cur#*=} values
    values=$(_dptrain_values "$key")
    if [[ $values == dir || $values == file ]]; then
      local d kind=-d
      [[ $values == file ]] && kind=-f
      compopt -o filenames 2>/dev/null
      while IFS= read -r d; do [[ -n $d ]] && COMPREPLY+=("$key=$d"); done < <(compgen "$kind" -- "$val")
    elif [[ -n $values ]]; then
      local v
      for v in $(compgen -W "$values" -- "$val"); do COMPREPLY+=("$key=$v"); done
    fi
  else
    local k
    for k in $(compgen -W "${_dptrain_keys[*]}" -- "$cur"); do COMPREPLY+=("$k="); done
    compopt -o nospace 2>/dev/null
  fi
}

_dptrain() {
  local words cword cur prev
  if declare -F _get_comp_words_by_ref >/dev/null; then
    _get_comp_words_by_ref -n =: cur prev words cword
  else
    # Rejoin what bash split at '=' and ':' (COMP_WORDBREAKS): "--set" "data.dataset" "=" "sy" -> "data.dataset=sy".
    words=()
    local i w joined=0
    for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
      w=${COMP_WORDS[i]}
      if ((i > 0)) && [[ $w =~ ^[=:]+$ || $joined == 1 ]]; then
        words[${#words[@]} - 1]+=$w
        [[ $w =~ ^[=:]+$ ]] && joined=1 || joined=0
      else
        words+=("$w")
        joined=0
      fi
      ((i == COMP_CWORD)) && cword=$((${#words[@]} - 1))
    done
    cur=${words[cword]}
    prev=${words[cword - 1]}
  fi
  COMPREPLY=()

  # The subcommand: the first word after the program that is not an option.
  local sub="" i
  for ((i = 1; i < cword; i++)); do
    if [[ ${words[i]} != -* ]]; then
      sub=${words[i]}
      break
    fi
  done

  if [[ -z $sub ]]; then
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W "-h --help --version" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "run plan estimate profile monitor" -- "$cur"))
    fi
  elif [[ $sub == run ]]; then
    case $prev in
      --set) _dptrain_set_arg "$cur" ;;
      --out) _dptrain_paths "$cur" dir ;;
      *)
        case $cur in
          --set=*)
            _dptrain_set_arg "${cur#--set=}"
            COMPREPLY=("${COMPREPLY[@]/#/--set=}")
            ;;
          --out=*)
            _dptrain_paths "${cur#--out=}" dir
            COMPREPLY=("${COMPREPLY[@]/#/--out=}")
            ;;
          -*)
            # Flags already given are not offered again (--set may repeat).
            local opts="--set --out --resume --force --dry-run --json -h --help" o used
            local left=()
            for o in $opts; do
              used=0
              if [[ $o != --set ]]; then
                for ((i = 1; i < cword; i++)); do [[ ${words[i]%%=*} == "$o" ]] && used=1; done
              fi
              ((used)) || left+=("$o")
            done
            COMPREPLY=($(compgen -W "${left[*]}" -- "$cur"))
            ;;
          *) _dptrain_paths "$cur" toml ;;
        esac
        ;;
    esac
  elif [[ $sub == plan ]]; then
    case $prev in
      --set) _dptrain_set_arg "$cur" ;;
      --workers | --seed | --profile-batch | --stages | --micro-batches | --noise) ;;
      --device) COMPREPLY=($(compgen -W "h200 h100 a100-80 a100-40 l40s v100 rtx4090" -- "$cur")) ;;
      --cluster) _dptrain_paths "$cur" toml ;;
      --profile | --plot) _dptrain_paths "$cur" any ;;
      *)
        if [[ $cur == -* ]]; then
          COMPREPLY=($(compgen -W "--set --workers --plot --noise --seed --json --compare --cluster --profile
            --profile-batch --stages --micro-batches --device -h --help" -- "$cur"))
        else
          _dptrain_paths "$cur" toml
        fi
        ;;
    esac
  elif [[ $sub == estimate ]]; then
    case $prev in
      --set) _dptrain_set_arg "$cur" ;;
      --device) COMPREPLY=($(compgen -W "h200 h100 a100-80 a100-40 l40s v100 rtx4090" -- "$cur")) ;;
      --peak-tflops | --bandwidth | --device-memory | --image) ;;
      --emit) COMPREPLY=($(compgen -W "slurm k8s" -- "$cur")) ;;
      --cluster | --profile) _dptrain_paths "$cur" toml ;;
      *)
        if [[ $cur == -* ]]; then
          COMPREPLY=($(compgen -W "--set --cluster --profile --device --peak-tflops --bandwidth --device-memory --fit
            --no-timing --json --emit --image -h --help" -- "$cur"))
        else
          _dptrain_paths "$cur" toml
        fi
        ;;
    esac
  elif [[ $sub == profile ]]; then
    case $prev in
      --algorithms) COMPREPLY=($(compgen -W "native ring native,ring" -- "$cur")) ;;
      --device) COMPREPLY=($(compgen -W "h200 h100 a100-80 a100-40 l40s v100 rtx4090" -- "$cur")) ;;
      --ranks | --min-bytes | --max-bytes | --factor | --iters | --warmup | --steps | --batch) ;;
      --out) _dptrain_paths "$cur" toml ;;
      --set) _dptrain_set_arg "$cur" ;;
      *)
        if [[ $cur == -* ]]; then
          COMPREPLY=($(compgen -W "--compute --collectives --links --layers --batch --device --out --set --steps --ranks --algorithms --min-bytes
            --max-bytes --factor --iters --warmup --json --dry-run -h --help" -- "$cur"))
        else
          _dptrain_paths "$cur" toml
        fi
        ;;
    esac
  elif [[ $sub == monitor ]]; then
    case $prev in
      --interval | --window) ;;
      --plot) _dptrain_paths "$cur" any ;;
      *)
        if [[ $cur == -* ]]; then
          COMPREPLY=($(compgen -W "--once --json --plot --interval --window -h --help" -- "$cur"))
        else
          _dptrain_paths "$cur" dir  # the run directory
        fi
        ;;
    esac
  fi

  # Bash replaces only the text after the last '=' or ':' of the word (they break words): drop what
  # precedes it from the candidates.
  local typed=${COMP_WORDS[COMP_CWORD]} strip=""
  if [[ $typed =~ ^[=:]+$ ]]; then
    strip=$cur
  elif [[ $cur == *"$typed" ]]; then
    strip=${cur%"$typed"}
  fi
  [[ -n $strip ]] && COMPREPLY=("${COMPREPLY[@]#"$strip"}")
  return 0
}

complete -F _dptrain dptrain
