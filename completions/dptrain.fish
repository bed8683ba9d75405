# fish completion for dptrain(1). Install: copy to ~/.config/fish/completions/dptrain.fish (or, system
# wide, to share/fish/vendor_completions.d/, where `cmake --install` puts it).
#
# Completes the subcommands (run, plan, estimate, profile, monitor), their options, .toml job files, and job keys
# (table.key=) for --set, with the valid values of the enumerated keys after the '='.

complete -c dptrain -f
complete -c dptrain -s h -l help -d 'print help and exit'
complete -c dptrain -n __fish_use_subcommand -l version -d 'print the version and this machine\'s line'
complete -c dptrain -n __fish_use_subcommand -a run -d 'train a job; outside an MPI job, launch itself under mpirun'
complete -c dptrain -n __fish_use_subcommand -a plan -d 'how a job would divide, group or pipeline its work'
complete -c dptrain -n __fish_use_subcommand -a profile -d 'measure collectives, compute, links or the model\'s blocks'
complete -c dptrain -n __fish_use_subcommand -a monitor -d 'watch a running or finished job from its run directory'

# A job file for every subcommand.
complete -c dptrain -n '__fish_seen_subcommand_from run plan estimate profile' -k -a '(__fish_complete_suffix .toml)'

# Every job key (lib/job/schema.cpp; man dptrain-job(5)), and the valid values of the enumerated ones.
function __dptrain_set_words
    set -l token (commandline -ct)
    if string match -q -- '*=*' $token
        set -l key (string split -m1 = -- $token)[1]
        switch $key
            case model.type
                for v in mlp cnn gpt; echo $key=$v; end
            case model.tied_head parallel.cgp.deterministic cluster.emulate.as_described \
                 parallel.comm.overlap parallel.comm.overlap_forward parallel.comm.sharded_update \
                 checkpoint.enabled log.trace
                for v in true false; echo $key=$v; end
            case data.dataset
                for v in fashion-mnist synthetic text; echo $key=$v; end
            case optim.name
                for v in sgd adamw; echo $key=$v; end
            case optim.schedule
                for v in constant step cosine; echo $key=$v; end
            case train.device
                for v in auto cpu cuda; echo $key=$v; end
            case train.precision
                for v in fp32 bf16; echo $key=$v; end
            case train.on_nonfinite
                for v in stop skip; echo $key=$v; end
            case train.recompute
                for v in none all; echo $key=$v; end
            case parallel.strategy
                for v in data cgp pipeline cgp-pipeline auto; echo $key=$v; end
            case parallel.pipeline.recompute
                for v in auto none all; echo $key=$v; end
            case parallel.cgp.solver
                for v in aga pls exhaustive sorted; echo $key=$v; end
            case parallel.comm.algorithm
                for v in native ring mra; echo $key=$v; end
            case parallel.balance.mode
                for v in equal idat; echo $key=$v; end
            case log.progress
                for v in auto bar plain none; echo $key=$v; end
            case launch.launcher
                for v in auto mpirun srun; echo $key=$v; end
        end
        return
    end
    for k in \
        job.name job.seed job.output_dir model.type model.hidden model.channels model.blocks \
        model.layers model.heads model.width model.context model.tied_head data.dataset data.path \
        data.train_samples data.test_samples data.features data.classes data.context data.val_fraction \
        optim.name optim.lr optim.momentum optim.weight_decay optim.beta1 optim.beta2 optim.eps \
        optim.schedule optim.warmup_steps optim.step_size optim.gamma optim.min_lr train.epochs \
        train.steps train.global_batch train.eval_every train.threads train.device train.precision train.on_nonfinite \
        train.micro_batch train.recompute \
        parallel.strategy parallel.comm.algorithm parallel.comm.bucket_mb parallel.comm.first_bucket_mb \
        parallel.comm.overlap parallel.comm.overlap_forward parallel.comm.sharded_update \
        parallel.balance.mode parallel.balance.every parallel.balance.threshold parallel.balance.speeds \
        parallel.balance.max_share parallel.cgp.solver parallel.cgp.group_count parallel.cgp.groups \
        parallel.cgp.max_staleness parallel.cgp.exchange_every parallel.cgp.regroup_every \
        parallel.cgp.regroup_drift parallel.cgp.regroup_gain parallel.cgp.deterministic \
        parallel.cgp.solver_seconds parallel.pipeline.stages parallel.pipeline.micro_batches \
        parallel.pipeline.recompute parallel.pipeline.profile cluster.file cluster.speeds \
        cluster.memory_gb cluster.kinds cluster.kind_counts cluster.kind_speeds cluster.kind_memory_gb \
        cluster.ranks_per_node cluster.node_sizes cluster.nodes_per_rack cluster.sample_rate \
        cluster.links.node_gbps cluster.links.node_latency_us cluster.links.rack_gbps \
        cluster.links.rack_latency_us cluster.links.cross_gbps cluster.links.cross_latency_us \
        cluster.links.gbps cluster.links.latency_us cluster.emulate.slowdown \
        cluster.emulate.fluctuate_rank cluster.emulate.fluctuate_from cluster.emulate.fluctuate_to \
        cluster.emulate.fluctuate_factor cluster.emulate.fluctuate_move_every \
        cluster.emulate.random_walk cluster.emulate.link_gbps cluster.emulate.link_latency_us cluster.emulate.memory_gb \
        cluster.emulate.as_described launch.ranks launch.hosts launch.mpirun_args launch.mpirun \
        launch.hostfile launch.launcher launch.wait_timeout launch.max_restarts \
        checkpoint.enabled checkpoint.every checkpoint.keep log.every log.progress log.trace \
        log.trace_first log.trace_steps
        echo $k=
    end
end
complete -c dptrain -n '__fish_seen_subcommand_from run plan estimate profile' -l set -x -a '(__dptrain_set_words)' \
    -d 'override a job key (repeatable)'

# run
complete -c dptrain -n '__fish_seen_subcommand_from run' -l out -r -F -d 'output directory'
complete -c dptrain -n '__fish_seen_subcommand_from run' -l resume -d 'continue from the newest checkpoint'
complete -c dptrain -n '__fish_seen_subcommand_from run' -l force -d 'replace an earlier run in the output directory'
complete -c dptrain -n '__fish_seen_subcommand_from run' -l dry-run -d 'print the mpirun command, run nothing'
complete -c dptrain -n '__fish_seen_subcommand_from run' -l json -d 'print summary.json at the end'

# estimate
complete -c dptrain -n __fish_use_subcommand -a estimate -d 'what a job needs: memory, FLOPs, times, devices'
complete -c dptrain -n '__fish_seen_subcommand_from estimate' -l cluster -r -F -d 'estimate on this cluster file'
complete -c dptrain -n '__fish_seen_subcommand_from estimate' -l profile -r -F -d 'step times from this layer profile'
complete -c dptrain -n '__fish_seen_subcommand_from estimate' -l device -x -a 'h200 h100 a100-80 a100-40 l40s v100 rtx4090' -d 'device kind'
complete -c dptrain -n '__fish_seen_subcommand_from estimate' -l peak-tflops -x -d 'the device\'s peak TFLOP/s'
complete -c dptrain -n '__fish_seen_subcommand_from estimate' -l bandwidth -x -d 'the device\'s memory GB/s'
complete -c dptrain -n '__fish_seen_subcommand_from estimate' -l device-memory -x -d 'the device\'s memory in GB'
complete -c dptrain -n '__fish_seen_subcommand_from estimate' -l fit -d 'the fewest devices the job fits on'
complete -c dptrain -n '__fish_seen_subcommand_from estimate' -l no-timing -d 'memory only'
complete -c dptrain -n '__fish_seen_subcommand_from estimate' -l json -d 'the estimate as one JSON object'
complete -c dptrain -n '__fish_seen_subcommand_from estimate' -l emit -x -a 'slurm k8s' -d 'an sbatch script or MPIJob sized from it'
complete -c dptrain -n '__fish_seen_subcommand_from estimate' -l image -x -d 'the container image of --emit k8s'
# plan
complete -c dptrain -n '__fish_seen_subcommand_from plan' -l workers -x -d 'plan for N ranks drawn from the job\'s kinds; --compare: N,N,...'
complete -c dptrain -n '__fish_seen_subcommand_from plan' -l plot -r -F -d '--compare --workers: SVG chart of samples/s against workers'
complete -c dptrain -n '__fish_seen_subcommand_from plan' -l noise -x -d '--compare --workers: the simulator\'s variation per operation'
complete -c dptrain -n '__fish_seen_subcommand_from plan' -l seed -x -d 'seed of the draw and the solvers'
complete -c dptrain -n '__fish_seen_subcommand_from plan' -l json -d 'the plan as one JSON object'
complete -c dptrain -n '__fish_seen_subcommand_from plan' -l compare -d 'predict every strategy, rank them, say why'
complete -c dptrain -n '__fish_seen_subcommand_from plan' -l cluster -r -F -d 'plan on this cluster file'
complete -c dptrain -n '__fish_seen_subcommand_from plan' -l profile -r -F -d 'step times from this layer profile; PipeDream graph.txt plans a pipeline'
complete -c dptrain -n '__fish_seen_subcommand_from plan' -l profile-batch -x -d 'samples of a minibatch in the profile'
complete -c dptrain -n '__fish_seen_subcommand_from plan' -l stages -x -d 'also evaluate these stages'
complete -c dptrain -n '__fish_seen_subcommand_from plan' -l micro-batches -x -d 'micro-batches per mini-batch'
complete -c dptrain -n '__fish_seen_subcommand_from plan' -l device -x -a 'h200 h100 a100-80 a100-40 l40s v100 rtx4090' -d 'every rank a device of this kind'

# profile
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l collectives -d 'time allreduce per algorithm and size'
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l compute -d 'time each rank\'s forward and backward'
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l links -d 'bandwidth and latency between every pair of ranks'
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l layers -d 'time every block of the job\'s model'
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l batch -x -d '--layers: samples of the micro-batch'
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l device -x -a 'h200 h100 a100-80 a100-40 l40s v100 rtx4090' -d '--layers: times from a device kind\'s peak rates'
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l out -r -F -d 'write the cluster file or layer profile'
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l steps -x -d 'timed steps of --compute'
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l ranks -x -d 'ranks to launch'
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l algorithms -x -a 'native ring native,ring' -d 'algorithms'
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l min-bytes -x -d 'smallest buffer'
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l max-bytes -x -d 'largest buffer'
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l factor -x -d 'size step factor'
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l iters -x -d 'timed repetitions per size'
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l warmup -x -d 'untimed repetitions first'
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l json -d 'one JSON object per measurement'
complete -c dptrain -n '__fish_seen_subcommand_from profile' -l dry-run -d 'print the mpirun command, run nothing'

# monitor: a run directory
complete -c dptrain -n '__fish_seen_subcommand_from monitor' -a '(__fish_complete_directories)'
complete -c dptrain -n '__fish_seen_subcommand_from monitor' -l once -d 'print one plain snapshot and exit'
complete -c dptrain -n '__fish_seen_subcommand_from monitor' -l json -d 'the snapshot as one JSON object'
complete -c dptrain -n '__fish_seen_subcommand_from monitor' -l plot -r -F -d 'write loss, throughput and per-rank wait as an SVG'
complete -c dptrain -n '__fish_seen_subcommand_from monitor' -l interval -x -d 'seconds between redraws on a terminal'
complete -c dptrain -n '__fish_seen_subcommand_from monitor' -l window -x -d 'logged steps the per-rank figures cover'
