/*
 * rt_train_mpi.c - the train program over MPI (libonnxc_rt_mpi.a, built
 * where CMake finds MPI): rt_train_main_mpi, the main of a `train` program
 * that onnxc linked with MPI (docs/training.md#data-parallel-training).
 * Built again with ONNXC_NCCL (libonnxc_rt_nccl.a, where CUDA's NCCL is
 * too): rt_train_main_nccl, the main of a CUDA-target train program, whose
 * step's outputs - device memory - are reduced by NCCL on the step's stream
 * (struct rt_train_comm's dev_* functions), MPI doing the rest: launching,
 * the NCCL id's broadcast, the ranks' agreement checks.
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
 *
 * NCCL's devices: each rank takes the GPU of its rank among the ranks on
 * its machine (MPI_COMM_TYPE_SHARED), modulo the GPUs it sees, before the
 * step model is created (which takes the current device). The NCCL
 * communicator is made once: rank 0's ncclGetUniqueId, MPI_Bcast,
 * ncclCommInitRank on every rank.
 */
#include "onnxc_train.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef ONNXC_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

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

#ifdef ONNXC_NCCL
struct nccl {
	MPI_Comm world; /* for MPI's calls: the host sums, the agreement checks */
	ncclComm_t comm;
};

static int dev_sum_f32(void *ctx, void *x, int64_t n, void *stream)
{
	struct nccl *c = ctx;
	return ncclAllReduce(x, x, (size_t)n, ncclFloat, ncclSum, c->comm, (cudaStream_t)stream) !=
	       ncclSuccess;
}

static int dev_bcast_f32(void *ctx, void *x, int64_t n, int root, void *stream)
{
	struct nccl *c = ctx;
	return ncclBroadcast(x, x, (size_t)n, ncclFloat, root, c->comm, (cudaStream_t)stream) !=
	       ncclSuccess;
}

static int dev_group(void *ctx, int end)
{
	(void)ctx;
	return (end ? ncclGroupEnd() : ncclGroupStart()) != ncclSuccess;
}

static int host_sum_f32(void *ctx, float *x, int64_t n)
{
	return sum_f32(&((struct nccl *)ctx)->world, x, n);
}

static int host_min_max_u64(void *ctx, uint64_t v, uint64_t *min, uint64_t *max)
{
	return min_max_u64(&((struct nccl *)ctx)->world, v, min, max);
}

/* This rank's GPU and the NCCL communicator; 0, or 1 after a message. */
static int nccl_open(struct nccl *c, int rank, int size, const char *prog)
{
	MPI_Comm local;
	int local_rank = 0, count = 0;
	cudaError_t e;
	ncclUniqueId id;
	ncclResult_t r = ncclSuccess;
	if (MPI_Comm_split_type(c->world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local) ==
	    MPI_SUCCESS) {
		MPI_Comm_rank(local, &local_rank);
		MPI_Comm_free(&local);
	}
	if ((e = cudaGetDeviceCount(&count)) != cudaSuccess || count < 1) {
		fprintf(stderr, "%s (rank %d of %d): no CUDA device (%s)\n", prog, rank, size,
		        e != cudaSuccess ? cudaGetErrorString(e) : "none found");
		return 1;
	}
	if ((e = cudaSetDevice(local_rank % count)) != cudaSuccess) {
		fprintf(stderr, "%s (rank %d of %d): cudaSetDevice(%d): %s\n", prog, rank, size,
		        local_rank % count, cudaGetErrorString(e));
		return 1;
	}
	if (rank == 0)
		r = ncclGetUniqueId(&id);
	if (r != ncclSuccess || MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, c->world) != MPI_SUCCESS ||
	    (r = ncclCommInitRank(&c->comm, size, id, rank)) != ncclSuccess) {
		fprintf(stderr, "%s (rank %d of %d): cannot set up NCCL: %s\n", prog, rank, size,
		        r != ncclSuccess ? ncclGetErrorString(r) : "MPI_Bcast of its id failed");
		return 1;
	}
	return 0;
}
#endif

/* The program over MPI_COMM_WORLD, with NCCL (nccl) or not. */
static int main_over_mpi(const struct rt_train_model *m, int argc, char **argv, int nccl)
{
	int provided, rank, size, status;
	const char *prog = argc > 0 && argv[0] ? argv[0] : "train";
	MPI_Comm world = MPI_COMM_WORLD;
	if (!launched()) /* one process, which --help says can be several */
		return rt_train_main_comm(
		        m,
		        &(struct rt_train_comm){ .size = 1, .name = nccl ? "MPI and NCCL" : "MPI" },
		        argc, argv);
	if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
		fprintf(stderr, "%s: MPI_Init_thread failed\n", prog);
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
#ifdef ONNXC_NCCL
	struct nccl n = { .world = world };
	if (nccl && size > 1) {
		if (nccl_open(&n, rank, size, prog)) {
			fflush(stderr);
			MPI_Abort(world, 1);
		}
		c.name = "NCCL";
		c.ctx = &n;
		c.sum_f32 = host_sum_f32;
		c.min_max_u64 = host_min_max_u64;
		c.dev_sum_f32 = dev_sum_f32;
		c.dev_bcast_f32 = dev_bcast_f32;
		c.dev_group = dev_group;
	}
#endif
	status = rt_train_main_comm(m, &c, argc, argv);
	fflush(stdout);
	fflush(stderr);
	if (status && size > 1)
		MPI_Abort(world, status); /* the others may be waiting in a collective */
#ifdef ONNXC_NCCL
	if (n.comm)
		ncclCommDestroy(n.comm);
#endif
	MPI_Finalize();
	return status;
}

#ifdef ONNXC_NCCL
int rt_train_main_nccl(const struct rt_train_model *m, int argc, char **argv)
{
	return main_over_mpi(m, argc, argv, 1);
}
#else
int rt_train_main_mpi(const struct rt_train_model *m, int argc, char **argv)
{
	return main_over_mpi(m, argc, argv, 0);
}
#endif
