/*
 * build.c - turning the generated files into libraries with the system's
 * C compiler and archiver.
 *
 * NAME.c is compiled with $CC (default cc) against the runtime's header;
 * libNAME.a holds NAME.o, NAME_kernels.o and, with --embed-weights, the
 * weights object (and, for --target cuda, the embedded PTX object), written
 * by archiver(); `ar D` keeps the archive deterministic. For onnxc run and check, NAME.so
 * additionally links the runtime (built position independent; for CUDA
 * also the CUDA runtime with cudart, cuBLASLt and cuDNN) and BLAS so it can
 * be loaded with dlopen. Commands run through fork/exec
 * with argument vectors: no shell, so no quoting problems with paths.
 */
#include "target.h"

#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#if !defined(ONNXC_RT_INCLUDE_DIR) || !defined(ONNXC_INSTALL_REL_LIB)
#error "the build defines ONNXC_RT_INCLUDE_DIR and ONNXC_INSTALL_REL_LIB"
#endif

char *cg_runtime_sibling(struct ir_arena *a, const char *rtlib, const char *file)
{
	const char *slash = strrchr(rtlib, '/');
	return ir_arena_printf(a, "%.*s%s", slash ? (int)(slash - rtlib + 1) : 0, rtlib, file);
}

bool cg_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

bool cg_runtime_paths(struct ir_ctx *ctx, const char **include_dir, const char **library)
{
	static char inc[4200], lib[4200];
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	/* an installed onnxc: PREFIX/bin/onnxc with PREFIX/include/onnxc and
	 * PREFIX/lib (the layout cmake/onnxc_install.cmake installs) */
	if (n > 0) {
		char *slash;
		exe[n] = 0;
		if ((slash = strrchr(exe, '/')))
			*slash = 0;
		snprintf(inc, sizeof inc, "%s/%s", exe, ONNXC_INSTALL_REL_INC);
		snprintf(lib, sizeof lib, "%s/%s/libonnxc_rt.a", exe, ONNXC_INSTALL_REL_LIB);
		if (cg_exists(inc) && cg_exists(lib)) {
			*include_dir = inc;
			*library = lib;
			return true;
		}
	}
	/* the build tree */
	if (cg_exists(ONNXC_RT_INCLUDE_DIR) && cg_exists(ONNXC_RT_LIBRARY)) {
		*include_dir = ONNXC_RT_INCLUDE_DIR;
		*library = ONNXC_RT_LIBRARY;
		return true;
	}
	ir_error(ctx, "cannot find the onnxc runtime (onnxc_rt.h and libonnxc_rt.a) next to onnxc "
	              "or in the build tree");
	return false;
}

/* Runs argv (in the folder cwd, unless NULL); reports a failure naming the
 * command. */
static bool run_in(struct ir_ctx *ctx, const char *cwd, char *const *argv)
{
	pid_t pid;
	int status, err = 0;
	if (!cwd) {
		err = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
	} else if ((pid = fork()) == 0) {
		/* (posix_spawn has no portable chdir); status 127: cannot run */
		if (chdir(cwd) == 0)
			execvp(argv[0], argv);
		_exit(127);
	} else if (pid < 0) {
		err = errno;
	}
	if (err) {
		ir_error(ctx, "cannot run %s: %s", argv[0], strerror(err));
		return false;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			ir_error(ctx, "waiting for %s failed", argv[0]);
			return false;
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		ir_error(ctx, "'%s' failed (status %d) building the generated code", argv[0],
		         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return false;
	}
	return true;
}

static bool run(struct ir_ctx *ctx, char *const *argv) { return run_in(ctx, NULL, argv); }

static const char *cc(void)
{
	const char *c = getenv("CC");
	return c && *c ? c : "cc";
}

/* Whether NAME is an executable file in a folder of $PATH. */
static bool on_path(struct ir_arena *a, const char *name)
{
	const char *path = getenv("PATH");
	while (path && *path) {
		size_t n = strcspn(path, ":");
		char *f = ir_arena_printf(a, "%.*s/%s", (int)n, n ? path : ".", name);
		if (access(f, X_OK) == 0)
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

/* The archiver: $AR, else gcc-ar where it is on PATH, else ar. GNU ar loads
 * every plugin in /usr/lib/bfd-plugins to look inside the objects, and
 * LLVM's LLVMgold there loads all of libLLVM: 120 ms for each archive, a
 * quarter of `onnxc check` on a small model. gcc-ar hands ar GCC's own LTO
 * plugin, the only one it then loads (10 ms). The objects are plain ELF
 * either way, so the archive is the same. */
static char *archiver(struct ir_arena *a)
{
	const char *e = getenv("AR");
	if (e && *e)
		return (char *)e;
	return on_path(a, "gcc-ar") ? "gcc-ar" : "ar";
}

/* cc() for a command run in another folder: a relative $CC such as
 * ./bin/cc made absolute (cwd as onnxc sees it). */
static char *cc_from(struct ir_arena *a, const char *dir)
{
	const char *c = cc();
	char cwd[4096];
	if (!dir || c[0] == '/' || !strchr(c, '/') || !getcwd(cwd, sizeof cwd))
		return (char *)c;
	return ir_arena_printf(a, "%s/%s", cwd, c);
}

/*
 * The libraries a model links after its own objects, appended to argv at k
 * (room for at most nargs entries in all); returns the new k: the target's
 * runtime, then BLAS and the system's.
 */
static int link_libraries(struct ir_arena *a, const struct cg_target *t, const char *rtlib,
                          char **argv, int k, int nargs)
{
	k = t->link_runtime(a, rtlib, argv, k, nargs);
	argv[k++] = "-L" ONNXC_BLAS_LIBDIR;
	argv[k++] = "-lopenblas";
	argv[k++] = "-lpthread";
	argv[k++] = "-lm";
	return k;
}

bool cg_embed_file(const struct cg_plan *p, const char *object, const char *symbol,
                   const char *file)
{
	struct ir_ctx *ctx = p->m->ctx;
	struct ir_arena *a = &p->m->arena;
	const char *dir = p->opt->out_dir, *base = strrchr(file, '/');
	char *src = ir_arena_printf(a, "%s/%s.s", dir, symbol);
	FILE *f = fopen(src, "w");
	bool ok;
	IR_ASSERT(cg_valid_name(symbol) && base && !strpbrk(base + 1, "\"\\\n"));
	if (!f) {
		ir_error(ctx, "cannot write %s: %s", src, strerror(errno));
		return false;
	}
	/* run in OUTDIR, so the paths in the object do not depend on it */
	fprintf(f,
	        "\t.section .rodata\n\t.balign 64\n\t.globl %s\n\t.type %s, @object\n%s:\n"
	        "\t.incbin \"%s\"\n\t.size %s, . - %s\n"
	        "\t.section .note.GNU-stack,\"\",@progbits\n",
	        symbol, symbol, symbol, base + 1, symbol, symbol);
	if (fclose(f) != 0) {
		ir_error(ctx, "cannot write %s", src);
		return false;
	}
	{
		char *argv[] = { cc_from(a, dir),
			         "-c",
			         strrchr(src, '/') + 1,
			         "-o",
			         (char *)strrchr(object, '/') + 1,
			         NULL };
		ok = run_in(ctx, dir, argv);
	}
	remove(src);
	return ok;
}

bool cg_build(const struct cg_plan *p, const char *const *objects, int nobjects)
{
	struct ir_ctx *ctx = p->m->ctx;
	struct ir_arena *a = &p->m->arena;
	const char *dir = p->opt->out_dir, *name = p->opt->name, *inc, *rtlib;
	char *obj = ir_arena_printf(a, "%s/%s.o", dir, name);
	char *lib = ir_arena_printf(a, "%s/lib%s.a", dir, name);
	char *incflag;
	if (!cg_runtime_paths(ctx, &inc, &rtlib))
		return false;
	if (p->opt->shared && !p->target->check_runtime(ctx, a, rtlib, false))
		return false;
	incflag = ir_arena_printf(a, "-I%s", inc);
	{
		/* a sanitizer build of onnxc links a sanitized runtime: the
		 * generated code gets the same instrumentation (run/check in CI).
		 * Compiled inside OUTDIR, so that NAME.o names its source
		 * "NAME.c" wherever OUTDIR is (sanitizers embed the name): the
		 * library is byte-identical across folders. -O1: NAME.c only
		 * calls the runtime and the kernels, and -O2 costs cc 60% more
		 * time on it (8 s for 5,000 steps) for no measurable gain. */
		char *argv[] = { cc_from(a, dir),
			         "-std=c11",
			         "-O1",
			         "-fPIC",
			         "-w",
			         incflag,
			         "-c",
			         ir_arena_printf(a, "%s.c", name),
			         "-o",
			         ir_arena_printf(a, "%s.o", name),
			         ONNXC_SANITIZE_FLAGS[0] ? ONNXC_SANITIZE_FLAGS : NULL,
			         NULL };
		if (!run_in(ctx, dir, argv))
			return false;
	}
	if (!p->opt->host_runtime) {
		char **argv = ir_arena_alloc(a, sizeof *argv * (size_t)(nobjects + 6));
		int k = 0;
		unlink(lib);
		argv[k++] = archiver(a);
		argv[k++] = "rcsD";
		argv[k++] = lib;
		argv[k++] = obj;
		for (int i = 0; i < nobjects; i++)
			argv[k++] = (char *)objects[i];
		argv[k] = NULL;
		if (!run(ctx, argv))
			return false;
	}
	if (p->opt->shared) {
		char *so = ir_arena_printf(a, "%s/%s.so", dir, name);
		int nargs = nobjects + 64;
		char **argv = ir_arena_alloc(a, sizeof *argv * (size_t)nargs);
		int k = 0;
		argv[k++] = (char *)cc();
		argv[k++] = "-shared";
		/* every symbol resolved now (but the runtime's, with the host's
		 * runtime: dlopen resolves them), bound inside the object */
		argv[k++] =
		        p->opt->host_runtime ? "-Wl,-Bsymbolic" : "-Wl,--no-undefined,-Bsymbolic";
		argv[k++] = "-o";
		argv[k++] = so;
		argv[k++] = obj;
		for (int i = 0; i < nobjects; i++)
			argv[k++] = (char *)objects[i];
		if (!p->opt->host_runtime)
			k = link_libraries(a, p->target, rtlib, argv, k, nargs);
		if (ONNXC_SANITIZE_FLAGS[0])
			argv[k++] = ONNXC_SANITIZE_FLAGS;
		argv[k] = NULL;
		if (!run(ctx, argv))
			return false;
	}
	return true;
}

/* MPI's link libraries where onnxc was built with MPI (CMake's
 * MPI_C_LIBRARIES, full paths), then NULL. */
static const char *const mpi_libs[] = {
#ifdef ONNXC_MPI_LIBS
	ONNXC_MPI_LIBS
#endif
	        NULL
};

bool cg_have_mpi(void) { return mpi_libs[0] != NULL; }

bool cg_build_trainer(struct ir_ctx *ctx, struct ir_arena *a, const struct cg_options *o,
                      const char *name, bool mpi)
{
	const struct cg_target *t = cg_find_target(o->target);
	const char *dir = o->out_dir, *inc, *rtlib;
	char *src = ir_arena_printf(a, "%s/%s_train.c", dir, name);
	char *obj = ir_arena_printf(a, "%s/%s_train.o", dir, name);
	char *lib = ir_arena_printf(a, "%s/lib%s_train.a", dir, name);
	char *main_src = ir_arena_printf(a, "%s/%s_train_main.c", dir, name);
	char *exe = ir_arena_printf(a, "%s/train", dir);
	char *incflag, *dirflag, *mpilib, *nccllib;
	const char *nccl = NULL; /* NCCL's library, for a CUDA step with MPI */
	FILE *f;
	if (!cg_runtime_paths(ctx, &inc, &rtlib))
		return false;
	if (!t) {
		ir_error(ctx, "unknown target '%s' (onnxc targets cpu, cuda)", o->target);
		return false;
	}
	if (!t->check_runtime(ctx, a, rtlib, true))
		return false;
	incflag = ir_arena_printf(a, "-I%s", inc);
	dirflag = ir_arena_printf(a, "-I%s", dir);
	mpilib = cg_runtime_sibling(a, rtlib, "libonnxc_rt_mpi.a");
	nccllib = cg_runtime_sibling(a, rtlib, "libonnxc_rt_nccl.a");
	if (mpi && (!cg_have_mpi() || !cg_exists(mpilib))) {
		ir_error(ctx,
		         "this onnxc was built without MPI (no %s): onnxc train --no-mpi builds a "
		         "one-process program",
		         mpilib);
		return false;
	}
#ifdef ONNXC_NCCL_LIB
	/* a CUDA step reduces its device outputs over NCCL where onnxc has it;
	 * elsewhere over MPI on the host, after they are copied back */
	if (mpi && cg_target_cuda(o) && cg_exists(nccllib)) {
		nccl = ONNXC_NCCL_LIB;
		mpilib = nccllib;
	}
#endif
	if (!(f = fopen(main_src, "w"))) {
		ir_error(ctx, "cannot write %s: %s", main_src, strerror(errno));
		return false;
	}
	fprintf(f,
	        "/* The training program (generated by onnxc train; docs/training.md). */\n"
	        "#include \"%s_train.h\"\n\n"
	        "int main(int argc, char **argv)\n{\n"
	        "\treturn rt_train_main%s(&%s_train_model, argc, argv);\n}\n",
	        name,
	        nccl  ? "_nccl"
	        : mpi ? "_mpi"
	              : "",
	        name);
	if (fclose(f)) {
		ir_error(ctx, "cannot write %s: %s", main_src, strerror(errno));
		return false;
	}
	{
		char *argv[] = { (char *)cc(),
			         "-std=c11",
			         "-O2",
			         "-w",
			         incflag,
			         dirflag,
			         "-c",
			         src,
			         "-o",
			         obj,
			         ONNXC_SANITIZE_FLAGS[0] ? ONNXC_SANITIZE_FLAGS : NULL,
			         NULL };
		if (!run(ctx, argv))
			return false;
	}
	{
		char *step = ir_arena_printf(a, "%s/lib%s_step.a", dir, name);
		char *eval = ir_arena_printf(a, "%s/lib%s_eval.a", dir, name);
		char *argv[] = { archiver(a), "rcsD", lib, obj, NULL };
		unlink(lib);
		if (!run(ctx, argv))
			return false;
		/* the program: main, the description, both steps, the runtime */
		{
			int nargs = 49 + (int)(sizeof mpi_libs / sizeof *mpi_libs), k = 0;
			char **cmd = ir_arena_alloc(a, sizeof *cmd * (size_t)nargs);
			cmd[k++] = (char *)cc();
			cmd[k++] = "-std=c11";
			cmd[k++] = "-O2";
			cmd[k++] = "-w";
			cmd[k++] = incflag;
			cmd[k++] = dirflag;
			cmd[k++] = "-o";
			cmd[k++] = exe;
			cmd[k++] = main_src;
			cmd[k++] = lib;
			cmd[k++] = step;
			cmd[k++] = eval;
			if (mpi)
				cmd[k++] = mpilib;
			k = link_libraries(a, t, rtlib, cmd, k, nargs);
			for (int i = 0; mpi && mpi_libs[i]; i++)
				cmd[k++] = (char *)mpi_libs[i];
			if (nccl)
				cmd[k++] = (char *)nccl;
			if (ONNXC_SANITIZE_FLAGS[0])
				cmd[k++] = ONNXC_SANITIZE_FLAGS;
			cmd[k] = NULL;
			if (!run(ctx, cmd))
				return false;
		}
	}
	return true;
}
