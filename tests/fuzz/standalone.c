/*
 * A main() for fuzz targets built without libFuzzer (gcc, make check):
 * runs LLVMFuzzerTestOneInput once per input file, so the seed corpus and
 * every crash reproducer stay regression tests.  Any harness links it
 * unchanged (see FUZZ_TARGETS in Makefile.am).
 *
 *   fuzz_T [-v] PATH...    PATH: a file, or a directory whose regular files
 *                          are run in name order (not recursively)
 *
 * Each input is copied into a buffer of exactly its size, so that an
 * ASan build catches a harness or parser reading past the end.  Exit 0
 * when every input ran (a failing oracle aborts), 1 on an unreadable path
 * or when there was no input at all (an empty corpus proves nothing).
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

#define STANDALONE_MAX	(16 * 1024 * 1024)

static int	 verbose;

static int
run_file(const char *path)
{
	struct stat	 st;
	uint8_t		*buf;
	size_t		 len = 0;
	FILE		*fp;

	if ((fp = fopen(path, "rb")) == NULL || fstat(fileno(fp), &st) == -1) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		if (fp != NULL)
			fclose(fp);
		return -1;
	}
	if (st.st_size > STANDALONE_MAX) {
		fprintf(stderr, "%s: larger than %d bytes\n", path,
		    STANDALONE_MAX);
		fclose(fp);
		return -1;
	}
	/* malloc(0) may return NULL; keep one byte but pass the real size. */
	if ((buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1)) == NULL) {
		fprintf(stderr, "%s: out of memory\n", path);
		fclose(fp);
		return -1;
	}
	if (st.st_size > 0)
		len = fread(buf, 1, (size_t)st.st_size, fp);
	if (ferror(fp) || len != (size_t)st.st_size) {
		fprintf(stderr, "%s: short read\n", path);
		free(buf);
		fclose(fp);
		return -1;
	}
	fclose(fp);
	if (verbose)
		fprintf(stderr, "running %s (%zu bytes)\n", path, len);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

static int
only_files(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Returns the number of inputs run, or -1. */
static long
run_path(const char *path)
{
	struct dirent	**names;
	struct stat	  st;
	char		  sub[4096];
	long		  n = 0;
	int		  i, count;

	if (stat(path, &st) == -1) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return run_file(path) == 0 ? 1 : -1;
	if ((count = scandir(path, &names, only_files, alphasort)) == -1) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	for (i = 0; i < count; i++) {
		if (n >= 0) {
			snprintf(sub, sizeof(sub), "%s/%s", path,
			    names[i]->d_name);
			if (stat(sub, &st) == 0 && S_ISREG(st.st_mode))
				n = run_file(sub) == 0 ? n + 1 : -1;
		}
		free(names[i]);
	}
	free(names);
	return n;
}

int
main(int argc, char **argv)
{
	long	 n, total = 0;
	int	 i = 1;

	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	if (i < argc && strcmp(argv[i], "-v") == 0) {
		verbose = 1;
		i++;
	}
	if (i == argc) {
		fprintf(stderr, "usage: %s [-v] file-or-directory...\n",
		    argv[0]);
		return 1;
	}
	for (; i < argc; i++) {
		if ((n = run_path(argv[i])) == -1)
			return 1;
		total += n;
	}
	printf("%s: %ld inputs ran\n", argv[0], total);
	if (total == 0) {
		fprintf(stderr, "%s: no inputs\n", argv[0]);
		return 1;
	}
	return 0;
}
