/*
 * replay.c - a main() for a fuzz target built without libFuzzer: feeds every
 * file named on the command line (folders: every file in them) to
 * LLVMFuzzerTestOneInput once. CI runs the seed corpora and
 * tests/fuzz/regressions/ through it under the sanitizer build.
 *
 * usage: replay_TARGET FILE|DIR...
 */
#include "fuzz.h"
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long n;
	if (!f) {
		fprintf(stderr, "replay: cannot open %s\n", path);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		free(buf);
		fclose(f);
		return 1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n > 0 ? (size_t)n : 0);
	free(buf);
	return 0;
}

static int replay(const char *path, int *count)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	int bad = 0;
	if (stat(path, &st) != 0) {
		fprintf(stderr, "replay: no such file or folder: %s\n", path);
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		++*count;
		return replay_file(path);
	}
	d = opendir(path);
	if (!d)
		return 1;
	while ((e = readdir(d))) {
		char sub[4096];
		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
		bad |= replay(sub, count);
	}
	closedir(d);
	return bad;
}

int main(int argc, char **argv)
{
	int bad = 0, count = 0;
	for (int i = 1; i < argc; i++)
		bad |= replay(argv[i], &count);
	printf("replayed %d inputs\n", count);
	return bad;
}
