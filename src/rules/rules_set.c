/*
 * Rule-set files, parsed a line at a time so that every error has its
 * line and column.  The whole file is read first (bounded), so a reload
 * sees one version of it, and a failure leaves nothing behind.
 */
#include "config.h"

#include "rules/rules_set.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/addr.h"

static const char *const set_types[] = {
	"auto", "domain", "suffix", "keyword", "cidr", NULL
};

int
rules_set_type_parse(const char *s)
{
	int	i;

	for (i = 0; set_types[i] != NULL; i++)
		if (strcmp(s, set_types[i]) == 0)
			return i;
	return -1;
}

const char *
rules_set_type_name(enum rules_set_type t)
{
	return (unsigned)t <= RULES_SET_CIDR ? set_types[t] : "?";
}

void
rules_set_free(struct rules_set *s)
{
	if (s == NULL)
		return;
	rules_trie_free(s->cidrs);
	rules_domain_free(s->domains);
	free(s->name);
	free(s->path);
	free(s);
}

struct line_ctx {
	const char	*fname;
	size_t		 lineno;
	char		*err;
	size_t		 errlen;
};

static int
line_err(struct line_ctx *l, size_t col, const char *msg, const char *what)
{
	char	vis[48];
	size_t	i;

	if (what == NULL) {
		snprintf(l->err, l->errlen, "%s:%zu:%zu: %s", l->fname,
		    l->lineno, col, msg);
		return -1;
	}
	for (i = 0; what[i] != '\0' && i < sizeof(vis) - 4; i++)
		vis[i] = what[i] > 0x20 && what[i] < 0x7f ? what[i] : '?';
	if (what[i] != '\0')
		memcpy(vis + i, "...", 3), i += 3;
	vis[i] = '\0';
	snprintf(l->err, l->errlen, "%s:%zu:%zu: '%s': %s", l->fname,
	    l->lineno, col, vis, msg);
	return -1;
}

static const struct {
	const char	*prefix;
	int		 kind;		/* rules_domain_kind, 0: a prefix */
} line_kinds[] = {
	{ "domain:", RULES_DOMAIN_EXACT }, { "full:", RULES_DOMAIN_EXACT },
	{ "suffix:", RULES_DOMAIN_SUFFIX }, { "+.", RULES_DOMAIN_SUFFIX },
	{ "keyword:", RULES_DOMAIN_KEYWORD }, { "cidr:", 0 },
};

/* One entry, trimmed, at column col of its line. */
static int
set_entry(struct rules_set *s, struct line_ctx *l, char *e, size_t col)
{
	struct cidr	 c;
	const char	*why = NULL;
	size_t		 i;
	int		 kind = -1, rc;

	for (i = 0; i < sizeof(line_kinds) / sizeof(line_kinds[0]); i++)
		if (strncmp(e, line_kinds[i].prefix,
		    strlen(line_kinds[i].prefix)) == 0) {
			kind = line_kinds[i].kind;
			e += strlen(line_kinds[i].prefix);
			col += strlen(line_kinds[i].prefix);
			break;
		}
	if (*e == '\0')
		return line_err(l, col, "empty entry", NULL);
	if (kind == -1) {
		switch (s->type) {
		case RULES_SET_AUTO:
			kind = cidr_parse(&c, e) == 0 ? 0 : RULES_DOMAIN_EXACT;
			break;
		case RULES_SET_DOMAIN:
			kind = RULES_DOMAIN_EXACT;
			break;
		case RULES_SET_SUFFIX:
			kind = RULES_DOMAIN_SUFFIX;
			break;
		case RULES_SET_KEYWORD:
			kind = RULES_DOMAIN_KEYWORD;
			break;
		case RULES_SET_CIDR:
			kind = 0;
			break;
		}
	} else if (s->type == RULES_SET_CIDR && kind != 0)
		return line_err(l, col, "a name in a set of type cidr", e);
	if (kind == 0) {
		if (cidr_parse(&c, e) == -1)
			return line_err(l, col, "not an address/prefix", e);
		if (rules_trie_add(s->cidrs, &c) == -1)
			return line_err(l, col, "out of memory", NULL);
		return 0;
	}
	if (strchr(e, '*') != NULL)
		return line_err(l, col + (size_t)(strchr(e, '*') - e),
		    "no wildcards: a suffix is written +.example.com or "
		    "suffix:example.com", e);
	rc = rules_domain_add(s->domains, (enum rules_domain_kind)kind, e,
	    &why);
	if (rc == -2)
		return line_err(l, col, "out of memory", NULL);
	if (rc == -1)
		return line_err(l, col, why, e);
	return 0;
}

static int
set_parse(struct rules_set *s, struct line_ctx *l, char *buf, size_t len)
{
	char	*line = buf, *end = buf + len, *nl, *e, *t;

	for (l->lineno = 1; line < end; l->lineno++, line = nl + 1) {
		if ((nl = memchr(line, '\n', (size_t)(end - line))) == NULL)
			nl = end;
		*nl = '\0';
		if (memchr(line, '\0', (size_t)(nl - line)) != NULL)
			return line_err(l, (size_t)(strchr(line, '\0') - line)
			    + 1, "NUL character", NULL);
		if ((t = strchr(line, '#')) != NULL)
			*t = '\0';
		for (e = line; *e == ' ' || *e == '\t'; e++)
			;
		t = e + strlen(e);
		while (t > e && (t[-1] == ' ' || t[-1] == '\t' ||
		    t[-1] == '\r'))
			*--t = '\0';
		if (*e == '\0')
			continue;
		if (strpbrk(e, " \t") != NULL)
			return line_err(l, (size_t)(strpbrk(e, " \t") - line)
			    + 1, "one entry per line", NULL);
		if (set_entry(s, l, e, (size_t)(e - line) + 1) == -1)
			return -1;
		s->lines++;
	}
	return 0;
}

struct rules_set *
rules_set_load_buf(const char *name, const char *fname, const char *buf,
    size_t len, enum rules_set_type type, char *err, size_t errlen)
{
	struct line_ctx	 l = { fname, 0, err, errlen };
	struct rules_set *s;
	char		*copy = NULL;

	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->name = strdup(name)) == NULL ||
	    (s->path = strdup(fname)) == NULL ||
	    (s->cidrs = rules_trie_new()) == NULL ||
	    (s->domains = rules_domain_new()) == NULL ||
	    (copy = malloc(len + 1)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", fname);
		goto fail;
	}
	s->type = type;
	memcpy(copy, buf, len);
	copy[len] = '\0';
	if (set_parse(s, &l, copy, len) == -1)
		goto fail;
	free(copy);
	return s;
fail:
	free(copy);
	rules_set_free(s);
	return NULL;
}

struct rules_set *
rules_set_load(const char *name, const char *path, enum rules_set_type type,
    char *err, size_t errlen)
{
	struct rules_set *s = NULL;
	struct stat	  st;
	char		 *buf = NULL;
	size_t		  len = 0;
	ssize_t		  r;
	int		  fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto out;
	}
	if ((unsigned long long)st.st_size > RULES_SET_FILE_MAX) {
		snprintf(err, errlen, "%s: larger than %u MiB", path,
		    RULES_SET_FILE_MAX >> 20);
		goto out;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	while (len < (size_t)st.st_size) {
		r = read(fd, buf + len, (size_t)st.st_size - len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0) {
			snprintf(err, errlen, "%s: %s", path, r == 0 ?
			    "changed while read" : strerror(errno));
			goto out;
		}
		len += (size_t)r;
	}
	s = rules_set_load_buf(name, path, buf, len, type, err, errlen);
out:
	free(buf);
	close(fd);
	return s;
}
