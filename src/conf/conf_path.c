/*
 * File names in the configuration.  The daemon runs in "/" once it is in
 * the background, and a reload may come long after a `cd`, so every file
 * a configuration names is made absolute when it is loaded: a relative
 * name is taken from the directory of the configuration file, as include
 * paths are in nginx.conf and sshd_config.  The configuration's own path
 * is made absolute the same way (from the working directory), so that
 * SIGHUP reads the same file `run -c ./s.yaml` did.
 */
#include "config.h"

#include "conf/conf_int.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Appends the components of s to out (which holds len bytes of an
 * absolute path), dropping empty and "." components.  ".." is kept: with
 * symbolic links, only the file system knows what it means.  -1 when the
 * result would not fit in size bytes.
 */
static int
path_append(char *out, size_t len, size_t size, const char *s)
{
	const char	*e;
	size_t		 n;

	while (*s != '\0') {
		for (e = s; *e != '\0' && *e != '/'; e++)
			;
		n = (size_t)(e - s);
		if (n > 0 && !(n == 1 && *s == '.')) {
			if (len + 1 + n >= size)
				return -1;
			if (len == 0 || out[len - 1] != '/')
				out[len++] = '/';
			memcpy(out + len, s, n);
			len += n;
			out[len] = '\0';
		}
		s = *e == '/' ? e + 1 : e;
	}
	if (len == 0) {
		if (size < 2)
			return -1;
		out[len++] = '/';
		out[len] = '\0';
	}
	return 0;
}

int
conf_path_join(const char *dir, const char *path, char *out, size_t size)
{
	if (size == 0)
		return -1;
	out[0] = '\0';
	if (*path != '/' && (dir == NULL || *dir != '/'))
		return -1;
	if (*path != '/' && path_append(out, 0, size, dir) == -1)
		return -1;
	return path_append(out, strlen(out), size, path);
}

char *
conf_path_abs(const char *path)
{
	char	cwd[PATH_MAX], *out;

	if ((out = malloc(PATH_MAX)) == NULL)
		return NULL;
	if (*path != '/' && getcwd(cwd, sizeof(cwd)) == NULL)
		goto fail;
	if (conf_path_join(*path == '/' ? NULL : cwd, path, out,
	    PATH_MAX) == -1) {
		errno = ENAMETOOLONG;
		goto fail;
	}
	return out;
fail:
	free(out);
	return NULL;
}

char *
conf_path_dir(const char *abs)
{
	const char	*slash = strrchr(abs, '/');
	size_t		 n = slash == NULL || slash == abs ? 1 :
			    (size_t)(slash - abs);
	char		*dir;

	if ((dir = malloc(n + 1)) == NULL)
		return NULL;
	memcpy(dir, slash == NULL ? "/" : abs, n);
	dir[n] = '\0';
	return dir;
}

const char *
conf_file_name(struct ctx *x, yaml_node_t *n, const char *s, char *out,
    size_t size)
{
	if (*s == '\0') {
		conf_err(x, n, "empty file name");
		return NULL;
	}
	if (*s != '/' && x->dir == NULL) {
		/* A buffer (tests, fuzzers): no directory to start from. */
		if (strlen(s) >= size) {
			conf_err(x, n, "path too long");
			return NULL;
		}
		memcpy(out, s, strlen(s) + 1);
		return out;
	}
	if (conf_path_join(x->dir, s, out, size) == -1) {
		conf_err(x, n, "path too long");
		return NULL;
	}
	return out;
}

int
conf_key_filename(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = conf_scalar(x, n);
	char		 path[PATH_MAX];

	if (s == NULL || conf_file_name(x, n, s, path, sizeof(path)) == NULL)
		return -1;
	if ((*CONF_FIELD(base, k, char *) = strdup(path)) == NULL)
		return conf_err(x, n, "out of memory");
	return 0;
}
