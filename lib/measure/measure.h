// The measuring and planning layer between the building blocks (models, data, comm, cluster, pipeline,
// cgp) and their users (the trainer, the estimator, `dptrain plan` and `profile`): what device a job
// computes on and how fast, the network it emulates, the per-block profile of its model, and the inputs
// a pipeline plan is made from. Nothing here trains; apps/ and lib/estimate include this header.
#pragma once

#include "lib/measure/device.h"         // the job's device, kernels, threads and machines
#include "lib/measure/job_links.h"      // [cluster.emulate]'s links
#include "lib/measure/layer_profile.h"  // every block of the model timed (profile --layers)
#include "lib/measure/pipeline_plan.h"  // the pipeline plan a job trains with
#include "lib/measure/speed_probe.h"    // each rank's compute speed (profile --compute)
