/*
 * rt_train_mpi.c - the train program over MPI (libonnxc_rt_mpi.a, built
 * where CMake finds MPI): rt_train_main_mpi, the main of a `train` program
 * that onnxc linked with MPI (docs/training.md#data-parallel-training).
 *
 * Started by an MPI launcher, every process is one rank of MPI_COMM_WORLD:
 * the trainer's communicator (struct rt_train_comm) sums with MPI_Allreduce
 * in place. Started directly, it is the one-process program and MPI is
 * never initialized. MPI runs on the main thread only (the runtime's
 * worker threads never call it): MPI_THREAD_FUNNELED.
 *
 * Faults: a rank whose run fails calls MPI_Abort, which ends every rank,
 * those waiting in a collective included; a rank that dies is noticed by
 * the launcher, which ends the others (Open MPI's mpirun does, as does
 * srun). Errors of MPI calls are returned, not fatal, so a failed
 * collective is reported as RT_TRAIN_ERR_COMM before the abort.
 */
#include "onnxc_train.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int sum_f32(void *ctx, float *x, int64_t n)
{
	MPI_Comm comm = *(MPI_Comm *)ctx;
	while (n > 0) { /* counts are ints */
		int k = n > INT_MAX ? INT_MAX : (int)n;
		if (MPI_Allreduce(MPI_IN_PLACE, x, k, MPI_FLOAT, MPI_SUM, comm) != MPI_SUCCESS)
			return 1;
		x += k;
		n -= k;
	}
	return 0;
}

static int min_max_u64(void *ctx, uint64_t v, uint64_t *min, uint64_t *max)
{
	MPI_Comm comm = *(MPI_Comm *)ctx;
	uint64_t a[2] = { v, ~v }; /* max of v and of ~v: the max and ~the min */
	if (MPI_Allreduce(MPI_IN_PLACE, a, 2, MPI_UINT64_T, MPI_MAX, comm) != MPI_SUCCESS)
		return 1;
	*max = a[0];
	*min = ~a[1];
	return 0;
}

/* Whether a launcher started this process as one of several (or one) MPI
 * ranks: Open MPI's mpirun, PMIx and PMI launchers (MPICH's, Slurm's srun). */
static int launched(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE",
		                            "SLURM_STEP_NUM_TASKS" };
	for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
		if (getenv(vars[i]))
			return 1;
	return 0;
}

int rt_train_main_mpi(const struct rt_train_model *m, int argc, char **argv)
{
	int provided, rank, size, status;
	MPI_Comm world = MPI_COMM_WORLD;
	if (!launched()) /* one process, which --help says can be several */
		return rt_train_main_comm(m, &(struct rt_train_comm){ .size = 1, .name = "MPI" },
		                          argc, argv);
	if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
		fprintf(stderr, "%s: MPI_Init_thread failed\n", argc > 0 ? argv[0] : "train");
		return 1;
	}
	MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
	MPI_Comm_rank(world, &rank);
	MPI_Comm_size(world, &size);
	struct rt_train_comm c = { .rank = rank,
		                   .size = size,
		                   .name = "MPI",
		                   .ctx = &world,
		                   .sum_f32 = sum_f32,
		                   .min_max_u64 = min_max_u64 };
	status = rt_train_main_comm(m, &c, argc, argv);
	fflush(stdout);
	fflush(stderr);
	if (status && size > 1)
		MPI_Abort(world, status); /* the others may be waiting in a collective */
	MPI_Finalize();
	return status;
}
