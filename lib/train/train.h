// The training layer's public face, what apps/ include: training a job on a communicator (the strategies
// behind it are lib/train's business), the run folder it writes, the lock that keeps one run per folder,
// and how a launched run ended (the launcher's exit status and its last words).
#pragma once

#include "lib/train/run_dir.h"   // the run folder: its files, refusing to overwrite, resuming
#include "lib/train/run_end.h"   // how a launched run ended, from mpirun's status and the run folder
#include "lib/train/run_lock.h"  // one run at a time in a folder
#include "lib/train/trainer.h"   // train(): setup, the step loop, finish
