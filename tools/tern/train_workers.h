// `tern train ... --workers N`: the same command as N local MPI workers under mpirun, supervised
// by this process so that Ctrl-C stops them gracefully.
#pragma once

namespace tern::tools {

// Starts mpirun -np N with this program's `train` arguments (--workers left out), in its own
// process group and with stdin closed, and waits for it. The first SIGINT or SIGTERM to this
// process becomes SIGUSR1 to mpirun, which Open MPI forwards to every worker as is: each stops
// after the current step (the workers agree on which), rank 0 checkpoints, and this process exits
// 130 / 143. A second SIGINT sends SIGINT to mpirun, which ends the job (SIGTERM, then SIGKILL a
// second later). Otherwise the exit status is mpirun's.
//
// Why not let the signal reach mpirun: Open MPI 4.1's mpirun answers SIGINT / SIGTERM by sending
// the workers SIGCONT, then SIGTERM odls_base_sigkill_timeout seconds later (default 1), then
// SIGKILL as long again; a worker in a long step is killed before it can checkpoint.
int run_workers(int workers, int argc, char** argv);

}  // namespace tern::tools
