/* MPI's MPI_IN_PLACE, which rsmpi (mpi-sys 0.2) does not export: a macro whose value
 * the MPI library chooses (Open MPI's (void *) 1, MPICH's (void *) -1), so it is read
 * here, compiled against the same mpi.h as rsmpi's own shim (build.rs). */
#include <mpi.h>

void *const HYPERCOMM_MPI_IN_PLACE = MPI_IN_PLACE;
