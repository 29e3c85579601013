/*
 * Configuration loader.  libyaml composes the whole document first
 * (yaml_parser_load), so every node still carries its line and column while
 * we validate it.  The walk is driven by one key table per mapping: a key
 * names its handler, its field and its range, and the walker alone deals
 * with unknown keys, duplicates and error positions.
 */
#include "conf.h"

#include <sys/stat.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>
#include <yaml.h>

#include "auth.h"
#include "limit.h"
#include "log.h"
#include "proto_trojan.h"

_Static_assert(CONF_TROJAN_HEX_LEN == PROTO_TROJAN_HEX_LEN, "trojan hash size");

#define CONF_FILE_MAX		(1024 * 1024)
#define CONF_KEYFILE_MAX	1024
#define CONF_MAX_USERS		10000
#define CONF_MAX_CIDRS		1024
#define CONF_HOST_MAX		253
#define CONF_METRICS_PORT	9353

struct ctx {
	const char		*name;
	yaml_document_t		*doc;
	struct conf		*c;
	char			*err;
	size_t			 errlen;
	bool			 failed;
	uint8_t			*visited;	/* per node index: aliases */
	size_t			 nnodes;
	char			 path[256];	/* "server.users[1].key" */
	const struct conf_map	*map;		/* mapping being walked */
	uint32_t		 seen;		/* its keys seen so far (<= 32) */
	yaml_node_t		*knode;		/* key of the value handled */
	yaml_node_t		*tun_knode;
	bool			 inline_key;
	char			 vis[64];
};

struct conf_key;
typedef int (*conf_key_fn)(struct ctx *, yaml_node_t *,
    const struct conf_key *, void *);

/* One key of a mapping; off is relative to the base the walker got. */
struct conf_key {
	const char		*name;
	conf_key_fn		 fn;
	size_t			 off;
	long long		 min, max;	/* range, or buffer size */
	const struct conf_map	*sub;
};

struct conf_map {
	const struct conf_key	*keys;
	int			(*check)(struct ctx *, yaml_node_t *, void *);
};

#define FIELD(base, k, type)	((type *)(void *)((char *)(base) + (k)->off))

static int conf_verr(struct ctx *, const yaml_mark_t *, const char *,
    va_list) LOG_PRINTF(3, 0);
static int conf_err(struct ctx *, const yaml_node_t *, const char *, ...)
    LOG_PRINTF(3, 4);

/* ---- errors and paths ------------------------------------------------ */

static int
conf_verr(struct ctx *x, const yaml_mark_t *m, const char *fmt, va_list ap)
{
	char	msg[256];

	/* The first error is the one the user needs; later ones are noise. */
	if (x->failed)
		return -1;
	x->failed = true;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (x->errlen == 0)
		return -1;
	if (x->path[0] != '\0')
		snprintf(x->err, x->errlen, "%s:%zu:%zu: %s: %s", x->name,
		    m->line + 1, m->column + 1, x->path, msg);
	else
		snprintf(x->err, x->errlen, "%s:%zu:%zu: %s", x->name,
		    m->line + 1, m->column + 1, msg);
	return -1;
}

static int
conf_err(struct ctx *x, const yaml_node_t *n, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	conf_verr(x, &n->start_mark, fmt, ap);
	va_end(ap);
	return -1;
}

/* Printable, bounded copy of user text for messages (never of secrets). */
static const char *
conf_vis(struct ctx *x, const char *s)
{
	size_t	i, o = 0;

	for (i = 0; s[i] != '\0' && o < sizeof(x->vis) - 4; i++)
		x->vis[o++] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	if (s[i] != '\0') {
		memcpy(x->vis + o, "...", 3);
		o += 3;
	}
	x->vis[o] = '\0';
	return x->vis;
}

static size_t
path_push(struct ctx *x, const char *key)
{
	size_t	old = strlen(x->path), i, o = old;

	if (old > 0 && o < sizeof(x->path) - 1)
		x->path[o++] = '.';
	for (i = 0; key[i] != '\0' && o < sizeof(x->path) - 1; i++)
		x->path[o++] = key[i] > 0x20 && key[i] < 0x7f ? key[i] : '?';
	x->path[o] = '\0';
	return old;
}

static size_t
path_push_index(struct ctx *x, size_t i)
{
	size_t	old = strlen(x->path);

	snprintf(x->path + old, sizeof(x->path) - old, "[%zu]", i);
	return old;
}

static void
path_pop(struct ctx *x, size_t old)
{
	x->path[old] = '\0';
}

/* ---- nodes ------------------------------------------------------------ */

/*
 * Every node is visited once: a second visit can only come from an alias,
 * which this schema never needs and which could blow up the walk.  The
 * node's own mark is its anchor's, so the error goes to where (the key or
 * list holding the alias) when given.
 */
static yaml_node_t *
node_get(struct ctx *x, int idx, const yaml_node_t *where)
{
	yaml_node_t	*n = yaml_document_get_node(x->doc, idx);

	if (n == NULL || (size_t)idx > x->nnodes)
		return NULL;
	if (x->visited[idx]) {
		conf_err(x, where != NULL ? where : n,
		    "aliases are not supported");
		return NULL;
	}
	x->visited[idx] = 1;
	return n;
}

static bool
node_is_null(const yaml_node_t *n)
{
	const char	*s = (const char *)n->data.scalar.value;

	if (n->type != YAML_SCALAR_NODE ||
	    n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	return *s == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
	    strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

static const char *
node_kind(const yaml_node_t *n)
{
	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	if (n->type == YAML_SEQUENCE_NODE)
		return "a list";
	return node_is_null(n) ? "nothing" : "a single value";
}

/* The scalar's text, or NULL once the reason is reported. */
static const char *
scalar(struct ctx *x, yaml_node_t *n)
{
	const char	*s;

	if (n->type != YAML_SCALAR_NODE || node_is_null(n)) {
		conf_err(x, n, "expected a value, found %s", node_kind(n));
		return NULL;
	}
	s = (const char *)n->data.scalar.value;
	if (strlen(s) != n->data.scalar.length) {
		conf_err(x, n, "NUL character in value");
		return NULL;
	}
	if (*s == '\0') {
		conf_err(x, n, "empty value");
		return NULL;
	}
	return s;
}

static size_t
list_count(const yaml_node_t *n)
{
	if (n->type == YAML_SEQUENCE_NODE)
		return (size_t)(n->data.sequence.items.top -
		    n->data.sequence.items.start);
	return 1;
}

typedef int (*item_fn)(struct ctx *, yaml_node_t *, size_t, void *);

/* A single value or a list of between min and max values. */
static int
list_walk(struct ctx *x, yaml_node_t *n, size_t min, size_t max, item_fn fn,
    void *arg)
{
	yaml_node_item_t	*it;
	yaml_node_t		*item;
	size_t			 i, old;

	if (n->type == YAML_SCALAR_NODE && !node_is_null(n))
		return fn(x, n, 0, arg);
	if (n->type != YAML_SEQUENCE_NODE)
		return conf_err(x, n, "expected a value or a list, found %s",
		    node_kind(n));
	if (list_count(n) < min)
		return conf_err(x, n, "empty list");
	if (list_count(n) > max)
		return conf_err(x, n, "too many entries (max %zu)", max);
	for (it = n->data.sequence.items.start, i = 0;
	    it < n->data.sequence.items.top; it++, i++) {
		old = path_push_index(x, i);
		if ((item = node_get(x, *it, n)) == NULL ||
		    fn(x, item, i, arg) == -1)
			return -1;
		path_pop(x, old);
	}
	return 0;
}

static int
key_index(const struct conf_map *m, const char *name)
{
	int	i;

	for (i = 0; m->keys[i].name != NULL; i++)
		if (strcmp(m->keys[i].name, name) == 0)
			return i;
	return -1;
}

/* Whether key name was seen in the mapping being walked. */
static bool
seen(const struct ctx *x, const char *name)
{
	int	i = key_index(x->map, name);

	return i >= 0 && (x->seen & (1u << i));
}

static int
map_walk(struct ctx *x, yaml_node_t *n, const struct conf_map *m, void *base)
{
	const struct conf_map	*omap = x->map;
	yaml_node_pair_t	*p;
	yaml_node_t		*k, *v;
	uint32_t		 oseen = x->seen;
	size_t			 old;
	int			 i, rc = -1;

	if (n->type != YAML_MAPPING_NODE)
		return conf_err(x, n, "expected a mapping, found %s",
		    node_kind(n));
	x->map = m;
	x->seen = 0;
	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	    p++) {
		if ((k = node_get(x, p->key, NULL)) == NULL)
			goto out;
		if (k->type != YAML_SCALAR_NODE || strlen((const char *)
		    k->data.scalar.value) != k->data.scalar.length) {
			conf_err(x, k, "keys must be plain names");
			goto out;
		}
		old = path_push(x, (const char *)k->data.scalar.value);
		if ((i = key_index(m, (const char *)k->data.scalar.value)) < 0) {
			conf_err(x, k, "unknown key");
			goto out;
		}
		if (x->seen & (1u << i)) {
			conf_err(x, k, "duplicate key");
			goto out;
		}
		x->seen |= 1u << i;
		x->knode = k;
		if ((v = node_get(x, p->value, k)) == NULL ||
		    m->keys[i].fn(x, v, &m->keys[i], base) == -1)
			goto out;
		path_pop(x, old);
	}
	if (m->check != NULL && m->check(x, n, base) == -1)
		goto out;
	rc = 0;
out:
	x->map = omap;
	x->seen = oseen;
	return rc;
}

static int
require(struct ctx *x, yaml_node_t *map, const char *name)
{
	if (seen(x, name))
		return 0;
	path_push(x, name);
	return conf_err(x, map, "missing required key");
}

/* ---- value parsers ---------------------------------------------------- */

/* Decimal or 0x hex; no sign, no space, no trailing junk. */
static int
parse_u64(const char *s, unsigned long long *out)
{
	const char	*digits = "0123456789";
	char		*end;
	int		 base = 10;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		base = 16;
		digits = "0123456789abcdefABCDEF";
	}
	/* strtoull alone would take signs, spaces and a second "0x". */
	if (*s == '\0' || strspn(s, digits) != strlen(s))
		return -1;
	errno = 0;
	*out = strtoull(s, &end, base);
	if (errno != 0 || *end != '\0')
		return -1;
	return 0;
}

long long
conf_parse_duration_ms(const char *s)
{
	static const struct {
		const char	*unit;
		long long	 ms;
	} units[] = {
		{ "", 1000 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 },
		{ "h", 3600000 },
	};
	long long	v = 0;
	size_t		i;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (LLONG_MAX - (*s - '0')) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(s, units[i].unit) != 0)
			continue;
		if (v > LLONG_MAX / units[i].ms)
			return -1;
		return v * units[i].ms;
	}
	return -1;
}

/* The largest unit that represents ms exactly. */
static const char *
duration_fmt(long long ms, char *out, size_t outlen)
{
	if (ms != 0 && ms % 3600000 == 0)
		snprintf(out, outlen, "%lldh", ms / 3600000);
	else if (ms != 0 && ms % 60000 == 0)
		snprintf(out, outlen, "%lldm", ms / 60000);
	else if (ms % 1000 == 0)
		snprintf(out, outlen, "%llds", ms / 1000);
	else
		snprintf(out, outlen, "%lldms", ms);
	return out;
}

/* Host name (or IPv4 literal) as a resolver or SNI would take it. */
static bool
host_valid(const char *s)
{
	size_t	i, n = strlen(s);

	if (n == 0 || n > CONF_HOST_MAX || s[0] == '.' || s[0] == '-')
		return false;
	for (i = 0; i < n; i++)
		if (strchr("abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_", s[i]) == NULL ||
		    (s[i] == '.' && s[i + 1] == '.'))
			return false;
	return true;
}

/* Names of things: interfaces, users, congestion control algorithms. */
static bool
word_valid(const char *s)
{
	if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (; *s != '\0'; s++)
		if (strchr("abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_@", *s) == NULL)
			return false;
	return true;
}

/* ---- generic handlers ------------------------------------------------- */

static int
key_bool(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	const char	*s = scalar(x, n);

	if (s == NULL)
		return -1;
	if (strcmp(s, "true") == 0 || strcmp(s, "yes") == 0)
		*FIELD(base, k, bool) = true;
	else if (strcmp(s, "false") == 0 || strcmp(s, "no") == 0)
		*FIELD(base, k, bool) = false;
	else
		return conf_err(x, n, "'%s' is not true, false, yes or no",
		    conf_vis(x, s));
	return 0;
}

static int
number(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    unsigned long long *v)
{
	const char	*s = scalar(x, n);

	if (s == NULL)
		return -1;
	if (parse_u64(s, v) == -1)
		return conf_err(x, n, "'%s' is not an integer", conf_vis(x, s));
	if (*v < (unsigned long long)k->min || *v > (unsigned long long)k->max)
		return conf_err(x, n, "%s out of range (%lld..%lld)",
		    conf_vis(x, s), k->min, k->max);
	return 0;
}

static int
key_uint(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	unsigned long long	v;

	if (number(x, n, k, &v) == -1)
		return -1;
	*FIELD(base, k, unsigned) = (unsigned)v;
	return 0;
}

static int
key_u32(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	unsigned long long	v;

	if (number(x, n, k, &v) == -1)
		return -1;
	*FIELD(base, k, uint32_t) = (uint32_t)v;
	return 0;
}

static int
duration(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    long long *ms)
{
	const char	*s = scalar(x, n);
	char		 lo[32], hi[32];

	if (s == NULL)
		return -1;
	if ((*ms = conf_parse_duration_ms(s)) == -1)
		return conf_err(x, n, "'%s' is not a duration (250ms, 30s, 5m, "
		    "1h)", conf_vis(x, s));
	if (*ms < k->min || *ms > k->max)
		return conf_err(x, n, "%s out of range (%s..%s)", conf_vis(x, s),
		    duration_fmt(k->min, lo, sizeof(lo)),
		    duration_fmt(k->max, hi, sizeof(hi)));
	return 0;
}

static int
key_ms(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	long long	ms;

	if (duration(x, n, k, &ms) == -1)
		return -1;
	*FIELD(base, k, unsigned) = (unsigned)ms;
	return 0;
}

static int
key_secs(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	long long	ms;

	if (duration(x, n, k, &ms) == -1)
		return -1;
	if (ms % 1000 != 0)
		return conf_err(x, n, "must be whole seconds");
	*FIELD(base, k, unsigned) = (unsigned)(ms / 1000);
	return 0;
}

/*
 * A byte count: "64M", "512K", "1G" or bare bytes.  0 means no limit;
 * anything else must lie in min..max.
 */
static int
key_size(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	const char		*s = scalar(x, n);
	unsigned long long	 v;

	if (s == NULL)
		return -1;
	if (limit_parse_size(s, &v) == -1)
		return conf_err(x, n, "'%s' is not a size (4096, 512K, 64M, 1G)",
		    conf_vis(x, s));
	if (v != 0 && (v < (unsigned long long)k->min ||
	    v > (unsigned long long)k->max))
		return conf_err(x, n, "%s out of range (0 for no limit, or "
		    "%lldM..%lldG)", conf_vis(x, s), k->min >> 20, k->max >> 30);
	*FIELD(base, k, size_t) = (size_t)v;
	return 0;
}

/* A file name, kept as given; existence is checked when it is used. */
static int
key_path(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	const char	*s = scalar(x, n);

	if (s == NULL)
		return -1;
	if (strlen(s) >= PATH_MAX)
		return conf_err(x, n, "path too long");
	if ((*FIELD(base, k, char *) = strdup(s)) == NULL)
		return conf_err(x, n, "out of memory");
	return 0;
}

/* A name into a fixed buffer of k->max bytes. */
static int
key_word(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	const char	*s = scalar(x, n);

	if (s == NULL)
		return -1;
	if (strlen(s) >= (size_t)k->max)
		return conf_err(x, n, "'%s' too long (max %lld characters)",
		    conf_vis(x, s), k->max - 1);
	if (!word_valid(s))
		return conf_err(x, n, "'%s' contains characters other than "
		    "letters, digits, '.', '-', '_' or '@'", conf_vis(x, s));
	memcpy(FIELD(base, k, char), s, strlen(s) + 1);
	return 0;
}

static int
key_map(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	return map_walk(x, n, k->sub, base);
}

/* ---- keys ------------------------------------------------------------- */

static int
key_key(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	const char	*s = scalar(x, n);

	if (s == NULL)
		return -1;
	if (seen(x, "key_file"))
		return conf_err(x, n, "key and key_file are mutually exclusive");
	if (auth_key_parse(s, FIELD(base, k, uint8_t)) == -1)
		return conf_err(x, n, "not a valid key (base64 of %d bytes, "
		    "see tunsplit genkey)", CONF_KEY_LEN);
	x->inline_key = true;
	return 0;
}

static int
key_file(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	char		 buf[CONF_KEYFILE_MAX + 1], *s, *e;
	const char	*path = scalar(x, n);
	struct stat	 st;
	ssize_t		 r;
	size_t		 len = 0;
	int		 fd, rc = -1;

	if (path == NULL)
		return -1;
	if (seen(x, "key"))
		return conf_err(x, n, "key and key_file are mutually exclusive");
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1)
		return conf_err(x, n, "%s: %s", conf_vis(x, path),
		    strerror(errno));
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		conf_err(x, n, "%s: not a regular file", conf_vis(x, path));
		goto out;
	}
	if (st.st_mode & (S_IRGRP | S_IROTH))
		log_warnx("%s: key file is readable by group or others",
		    conf_vis(x, path));
	while (len < sizeof(buf) &&
	    (r = read(fd, buf + len, sizeof(buf) - len)) != 0) {
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			conf_err(x, n, "%s: %s", conf_vis(x, path),
			    strerror(errno));
			goto out;
		}
		len += (size_t)r;
	}
	if (len == sizeof(buf)) {
		conf_err(x, n, "%s: too large for a key file",
		    conf_vis(x, path));
		goto out;
	}
	buf[len] = '\0';
	for (s = buf; *s == ' ' || *s == '\t' || *s == '\r' || *s == '\n'; s++)
		;
	for (e = buf + len; e > s && (e[-1] == ' ' || e[-1] == '\t' ||
	    e[-1] == '\r' || e[-1] == '\n'); e--)
		;
	*e = '\0';
	if (auth_key_parse(s, FIELD(base, k, uint8_t)) == -1) {
		conf_err(x, n, "%s: not a valid key (base64 of %d bytes, see "
		    "tunsplit genkey)", conf_vis(x, path), CONF_KEY_LEN);
		goto out;
	}
	rc = 0;
out:
	sodium_memzero(buf, sizeof(buf));
	close(fd);
	return rc;
}

static int
check_key(struct ctx *x, yaml_node_t *map)
{
	if (seen(x, "key") || seen(x, "key_file"))
		return 0;
	path_push(x, "key");
	return conf_err(x, map, "missing required key (or key_file)");
}

/* ---- log, tun ---------------------------------------------------------- */

static int
key_level(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	const char	*s = scalar(x, n);
	int		 lvl;

	if (s == NULL)
		return -1;
	if ((lvl = log_level_parse(s)) == -1)
		return conf_err(x, n, "'%s' is not error, warn, info or debug",
		    conf_vis(x, s));
	*FIELD(base, k, int) = lvl;
	return 0;
}

static int
tun_addr_item(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct conf	*c = arg;
	const char	*s = scalar(x, n);
	struct cidr	 cidr;

	(void)i;
	if (s == NULL)
		return -1;
	if (cidr_parse(&cidr, s) == -1)
		return conf_err(x, n, "'%s' is not an address/prefix",
		    conf_vis(x, s));
	if (cidr.family == AF_INET ? c->tun.has_addr4 : c->tun.has_addr6)
		return conf_err(x, n, "only one IPv%d address allowed",
		    cidr.family == AF_INET ? 4 : 6);
	if (cidr.family == AF_INET) {
		c->tun.addr4 = cidr;
		c->tun.has_addr4 = true;
	} else {
		c->tun.addr6 = cidr;
		c->tun.has_addr6 = true;
	}
	return 0;
}

static int
key_tun_addr(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	(void)k;
	x->c->tun.has_addr4 = x->c->tun.has_addr6 = false;
	return list_walk(x, n, 1, 2, tun_addr_item, base);
}

/* ---- client ------------------------------------------------------------ */

/* "host:port" or "[v6]:port" with a host name or address; *host is
 * allocated. */
static int
hostport(struct ctx *x, yaml_node_t *n, char **hostp, uint16_t *portp)
{
	const char		*s = scalar(x, n), *colon, *h;
	struct in6_addr		 in6;
	char			 host[CONF_HOST_MAX + 1];
	unsigned long long	 port;
	size_t			 hlen;

	if (s == NULL)
		return -1;
	if (*s == '[') {
		h = s + 1;
		if ((colon = strchr(h, ']')) == NULL || colon[1] != ':')
			goto bad;
		hlen = (size_t)(colon++ - h);
	} else {
		h = s;
		if ((colon = strrchr(s, ':')) == NULL)
			return conf_err(x, n, "'%s' has no port (host:port)",
			    conf_vis(x, s));
		if (memchr(s, ':', (size_t)(colon - s)) != NULL)
			return conf_err(x, n, "IPv6 address needs brackets "
			    "([addr]:port)");
		hlen = (size_t)(colon - h);
	}
	if (hlen == 0 || hlen >= sizeof(host))
		goto bad;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (h != s ? inet_pton(AF_INET6, host, &in6) != 1 : !host_valid(host))
		goto bad;
	if (strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
	    parse_u64(colon + 1, &port) == -1 || port < 1 || port > 65535)
		return conf_err(x, n, "'%s' has no valid port (1..65535)",
		    conf_vis(x, s));
	if ((*hostp = strdup(host)) == NULL)
		return conf_err(x, n, "out of memory");
	*portp = (uint16_t)port;
	return 0;
bad:
	return conf_err(x, n, "'%s' is not host:port", conf_vis(x, s));
}

static int
key_server_addr(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	(void)k;
	(void)base;
	return hostport(x, n, &x->c->client.server_host,
	    &x->c->client.server_port);
}

/*
 * SHA-256 of the server's SubjectPublicKeyInfo, base64 -- the form curl's
 * --pinnedpubkey takes, whose "sha256//" prefix is accepted too.
 */
static int
key_pin(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	const char	*s = scalar(x, n), *end = NULL;
	uint8_t		 pin[32];
	size_t		 binlen = 0;

	(void)k;
	(void)base;
	if (s == NULL)
		return -1;
	if (strncmp(s, "sha256//", 8) == 0)
		s += 8;
	if (strlen(s) != 44 || sodium_base642bin(pin, sizeof(pin), s,
	    strlen(s), NULL, &binlen, &end,
	    sodium_base64_VARIANT_ORIGINAL) != 0 || binlen != sizeof(pin) ||
	    *end != '\0')
		return conf_err(x, n, "'%s' is not a base64 SHA-256 digest "
		    "(44 characters)", conf_vis(x, s));
	memcpy(x->c->client.pin_sha256, pin, sizeof(pin));
	x->c->client.has_pin = true;
	return 0;
}

/* The resolver every port-53 query is pinned to: numeric, because a name
 * would need DNS to find DNS.  A bare address means port 53. */
static int
key_dns(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	const char	*s = scalar(x, n);
	struct addr	*a = &x->c->client.dns;

	(void)k;
	(void)base;
	if (s == NULL)
		return -1;
	if ((addr_parse(a, s) == -1 || addr_port(a) == 0) &&
	    addr_from_ip(a, s, 53) == -1)
		return conf_err(x, n, "'%s' is not a numeric address[:port] "
		    "(192.0.2.53:53, [2001:db8::53]:53)", conf_vis(x, s));
	x->c->client.has_dns = true;
	return 0;
}

static int
key_sni(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	const char	*s = scalar(x, n);

	struct in6_addr	 in6;

	if (s == NULL)
		return -1;
	/* An address is accepted (it is what an address-only server.
	 * defaults to); it is then a name to verify, not one to send. */
	if (!host_valid(s) && inet_pton(AF_INET6, s, &in6) != 1)
		return conf_err(x, n, "'%s' is not a host name", conf_vis(x, s));
	return key_path(x, n, k, base);
}

static const char *const conf_protos[] = {
	[CONF_PROTO_TUNSPLIT] = "tunsplit", [CONF_PROTO_TROJAN] = "trojan",
	[CONF_PROTO_SOCKS5] = "socks5", [CONF_PROTO_DIRECT] = "direct",
	[CONF_PROTO_BLOCK] = "block",
};

const char *
conf_proto_name(enum conf_proto p)
{
	if ((size_t)p >= sizeof(conf_protos) / sizeof(conf_protos[0]))
		return "?";
	return conf_protos[p];
}

static int
key_protocol(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = scalar(x, n);
	size_t		 i;

	if (s == NULL)
		return -1;
	for (i = 0; i < sizeof(conf_protos) / sizeof(conf_protos[0]); i++)
		if (strcmp(s, conf_protos[i]) == 0) {
			*FIELD(base, k, enum conf_proto) = (enum conf_proto)i;
			return 0;
		}
	return conf_err(x, n, "'%s' is not tunsplit, trojan, socks5, direct "
	    "or block", conf_vis(x, s));
}

/*
 * The protocol may come after the password, so both forms are kept until
 * check_client: the hash (all trojan needs) and, when it fits RFC 1929's
 * 255 bytes, the plain text (socks5 sends it).  check_client wipes the one
 * the protocol does not use.
 */
static int
key_password(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = scalar(x, n);
	struct conf	*c = base;

	(void)k;
	if (s == NULL)
		return -1;
	if (proto_trojan_hash(s, strlen(s), c->client.trojan_hex) == -1)
		return conf_err(x, n, "cannot hash the password (SHA-224)");
	if (strlen(s) <= CONF_SOCKS_MAX)
		memcpy(c->client.password, s, strlen(s) + 1);
	return 0;
}

static int
key_username(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = scalar(x, n);

	if (s == NULL)
		return -1;
	if (*s == '\0' || strlen(s) > CONF_SOCKS_MAX)
		return conf_err(x, n, "must be 1..%d bytes (RFC 1929)",
		    CONF_SOCKS_MAX);
	memcpy(FIELD(base, k, char), s, strlen(s) + 1);
	return 0;
}

/* Rejects a key the protocol has no use for. */
static int
unused_key(struct ctx *x, yaml_node_t *map, const char *key, const char *why)
{
	if (!seen(x, key))
		return 0;
	path_push(x, key);
	return conf_err(x, map, "%s", why);
}

static int
check_client_socks5(struct ctx *x, yaml_node_t *map, struct conf *c)
{
	if (seen(x, "username") != seen(x, "password")) {
		path_push(x, seen(x, "username") ? "password" : "username");
		return conf_err(x, map, "username and password go together "
		    "(RFC 1929)");
	}
	if (seen(x, "password") && c->client.password[0] == '\0') {
		path_push(x, "password");
		return conf_err(x, map, "must be 1..%d bytes (RFC 1929)",
		    CONF_SOCKS_MAX);
	}
	return 0;
}

/* Per protocol: which credentials it needs, which keys it cannot use. */
static int
check_client_proto(struct ctx *x, yaml_node_t *map, struct conf *c)
{
	const char	*name = conf_proto_name(c->client.protocol);
	char		 why[64];
	bool		 tls = c->client.protocol <= CONF_PROTO_TROJAN;

	snprintf(why, sizeof(why), "not used with protocol: %s", name);
	if (c->client.protocol != CONF_PROTO_SOCKS5 &&
	    unused_key(x, map, "username", "needs protocol: socks5") == -1)
		return -1;
	if (!tls && (unused_key(x, map, "key", why) == -1 ||
	    unused_key(x, map, "key_file", why) == -1))
		return -1;
	switch (c->client.protocol) {
	case CONF_PROTO_TUNSPLIT:
		if (check_key(x, map) == -1)
			return -1;
		return unused_key(x, map, "password",
		    "needs protocol: trojan or socks5");
	case CONF_PROTO_TROJAN:
		/* trojan flows and UDP associations authenticate with the
		 * password; a key is not used (ICMP echo, which only the
		 * native protocol carries, is dropped). */
		if (require(x, map, "password") == -1)
			return -1;
		if (c->client.faithful) {
			path_push(x, "connect_mode");
			return conf_err(x, map, "faithful needs the connect "
			    "status, which protocol trojan does not have");
		}
		return 0;
	case CONF_PROTO_SOCKS5:
		return check_client_socks5(x, map, c);
	case CONF_PROTO_DIRECT:
	case CONF_PROTO_BLOCK:
		if (unused_key(x, map, "server", why) == -1 ||
		    unused_key(x, map, "password", why) == -1)
			return -1;
		/* Without a mark the direct sockets would be routed back
		 * into the TUN they come from. */
		if (c->client.protocol == CONF_PROTO_DIRECT &&
		    c->client.mark == 0) {
			path_push(x, "mark");
			return conf_err(x, map, "protocol: direct needs a mark "
			    "(e.g. mark: 0x7353) so that its sockets bypass "
			    "the TUN");
		}
		return 0;
	}
	return 0;
}

static int
check_client(struct ctx *x, yaml_node_t *map, void *base)
{
	struct conf	*c = base;

	if (c->client.protocol != CONF_PROTO_DIRECT &&
	    c->client.protocol != CONF_PROTO_BLOCK &&
	    require(x, map, "server") == -1)
		return -1;
	if (check_client_proto(x, map, c) == -1)
		return -1;
	/* Keep only the form of the password the protocol sends. */
	if (c->client.protocol != CONF_PROTO_SOCKS5)
		sodium_memzero(c->client.password, sizeof(c->client.password));
	if (c->client.protocol != CONF_PROTO_TROJAN)
		sodium_memzero(c->client.trojan_hex,
		    sizeof(c->client.trojan_hex));
	/* Without a mark the outer connections would be routed into the
	 * TUN they come from. */
	if (c->client.route_auto && c->client.mark == 0) {
		path_push(x, "route");
		return conf_err(x, map, "route: auto needs a mark (e.g. mark: "
		    "0x7353)");
	}
	return 0;
}

/* ---- server ------------------------------------------------------------ */

static int
listen_item(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct conf	*c = arg;
	const char	*s = scalar(x, n);
	size_t		 j;

	if (s == NULL)
		return -1;
	if (addr_parse(&c->server.listen[i], s) == -1 ||
	    addr_port(&c->server.listen[i]) == 0)
		return conf_err(x, n, "'%s' is not a numeric address:port "
		    "(0.0.0.0:443, [::]:443)", conf_vis(x, s));
	for (j = 0; j < i; j++)
		if (addr_eq(&c->server.listen[j], &c->server.listen[i]))
			return conf_err(x, n, "duplicate listen address");
	c->server.nlisten = i + 1;
	return 0;
}

static int
key_listen(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	(void)k;
	return list_walk(x, n, 1, CONF_MAX_LISTEN, listen_item, base);
}

static int check_user(struct ctx *, yaml_node_t *, void *);
static int cidrs(struct ctx *, yaml_node_t *, struct cidr **, size_t *);

struct conf_egress *
conf_egress_ref(struct conf_egress *e)
{
	if (e != NULL)
		e->refs++;
	return e;
}

void
conf_egress_unref(struct conf_egress *e)
{
	if (e == NULL || --e->refs > 0)
		return;
	free(e->allow);
	free(e->deny);
	free(e);
}

/* A user's (or trojan password's) own egress list; *e made on first use.
 * k->min: 1 allow, 0 deny. */
static int
egress_list(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    struct conf_egress **e)
{
	if (*e == NULL) {
		if ((*e = calloc(1, sizeof(**e))) == NULL)
			return conf_err(x, n, "out of memory");
		(*e)->refs = 1;
	}
	if (k->min != 0)
		return cidrs(x, n, &(*e)->allow, &(*e)->nallow);
	return cidrs(x, n, &(*e)->deny, &(*e)->ndeny);
}

static int
key_user_egress(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	return egress_list(x, n, k, FIELD(base, k, struct conf_egress *));
}

static const struct conf_key keys_user[] = {
	{ "name", key_word, offsetof(struct conf_user, name), 0,
	    CONF_NAME_MAX, NULL },
	{ "key", key_key, offsetof(struct conf_user, key), 0, 0, NULL },
	{ "key_file", key_file, offsetof(struct conf_user, key), 0, 0, NULL },
	{ "max_conns", key_uint, offsetof(struct conf_user, max_conns), 1,
	    1000000, NULL },
	{ "max_udp", key_uint, offsetof(struct conf_user, max_udp), 1,
	    1000000, NULL },
	{ "egress_allow", key_user_egress, offsetof(struct conf_user, egress),
	    1, 0, NULL },
	{ "egress_deny", key_user_egress, offsetof(struct conf_user, egress),
	    0, 0, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};
static const struct conf_map map_user = { keys_user, check_user };

static int
check_user(struct ctx *x, yaml_node_t *map, void *base)
{
	struct conf_user	*u = base, *users = x->c->server.users;
	size_t			 j;

	if (require(x, map, "name") == -1 || check_key(x, map) == -1)
		return -1;
	for (j = 0; &users[j] < u; j++) {
		if (strcmp(users[j].name, u->name) == 0) {
			path_push(x, "name");
			return conf_err(x, map, "duplicate user name '%s'",
			    u->name);
		}
		if (sodium_memcmp(users[j].key, u->key, CONF_KEY_LEN) == 0) {
			path_push(x, "key");
			return conf_err(x, map, "same key as user '%s'",
			    users[j].name);
		}
	}
	return 0;
}

static int
user_item(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct conf	*c = arg;

	return map_walk(x, n, &map_user, &c->server.users[i]);
}

static int
key_users(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf	*c = base;

	(void)k;
	if (n->type != YAML_SEQUENCE_NODE)
		return conf_err(x, n, "expected a list of users, found %s",
		    node_kind(n));
	if (list_count(n) == 0)
		return conf_err(x, n, "at least one user is required");
	if (list_count(n) > CONF_MAX_USERS)
		return conf_err(x, n, "too many users (max %d)", CONF_MAX_USERS);
	/* Sized once: growing would leave copies of keys behind. */
	if ((c->server.users = calloc(list_count(n),
	    sizeof(*c->server.users))) == NULL)
		return conf_err(x, n, "out of memory");
	c->server.nusers = list_count(n);
	return list_walk(x, n, 1, CONF_MAX_USERS, user_item, base);
}

/* One trojan_passwords entry: a password, or a mapping with one and the
 * password's own egress lists. */
struct trojan_entry {
	struct conf	*c;
	size_t		 i;
};

static int
trojan_password(struct ctx *x, yaml_node_t *n, struct conf *c, size_t i)
{
	const char	*s = scalar(x, n);
	size_t		 j;

	if (s == NULL)
		return -1;
	if (proto_trojan_hash(s, strlen(s), c->server.trojan_hex[i]) == -1)
		return conf_err(x, n, "cannot hash the password (SHA-224)");
	for (j = 0; j < i; j++)
		if (strcmp(c->server.trojan_hex[j], c->server.trojan_hex[i]) == 0)
			return conf_err(x, n, "duplicate password");
	return 0;
}

static int
key_trojan_password(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct trojan_entry	*t = base;

	(void)k;
	return trojan_password(x, n, t->c, t->i);
}

static int
key_trojan_egress(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct trojan_entry	*t = base;

	return egress_list(x, n, k, &t->c->server.trojan_egress[t->i]);
}

/* off 0: max_conns, 1: max_udp. */
static int
key_trojan_limit(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct trojan_entry	*t = base;
	struct conf_limits	*l = &t->c->server.trojan_limits[t->i];
	unsigned long long	 v;

	if (number(x, n, k, &v) == -1)
		return -1;
	*(k->off == 0 ? &l->max_conns : &l->max_udp) = (unsigned)v;
	return 0;
}

static int
check_trojan(struct ctx *x, yaml_node_t *map, void *base)
{
	(void)base;
	return require(x, map, "password");
}

static const struct conf_key keys_trojan[] = {
	{ "password", key_trojan_password, 0, 0, 0, NULL },
	{ "egress_allow", key_trojan_egress, 0, 1, 0, NULL },
	{ "egress_deny", key_trojan_egress, 0, 0, 0, NULL },
	{ "max_conns", key_trojan_limit, 0, 1, 1000000, NULL },
	{ "max_udp", key_trojan_limit, 1, 1, 1000000, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};
static const struct conf_map map_trojan = { keys_trojan, check_trojan };

static int
trojan_item(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct trojan_entry	 t = { arg, i };

	/* Counted first: conf_free releases what a failed entry made. */
	t.c->server.ntrojan = i + 1;
	if (n->type == YAML_MAPPING_NODE)
		return map_walk(x, n, &map_trojan, &t);
	return trojan_password(x, n, t.c, i);
}

static int
key_trojan(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf	*c = base;

	(void)k;
	if (list_count(n) > 0 && list_count(n) <= CONF_MAX_TROJAN &&
	    ((c->server.trojan_hex = calloc(list_count(n),
	    sizeof(*c->server.trojan_hex))) == NULL ||
	    (c->server.trojan_egress = calloc(list_count(n),
	    sizeof(*c->server.trojan_egress))) == NULL ||
	    (c->server.trojan_limits = calloc(list_count(n),
	    sizeof(*c->server.trojan_limits))) == NULL))
		return conf_err(x, n, "out of memory");
	return list_walk(x, n, 1, CONF_MAX_TROJAN, trojan_item, base);
}

struct cidr_list {
	struct cidr	*v;
	size_t		*n;
};

static int
cidr_item(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct cidr_list	*l = arg;
	const char		*s = scalar(x, n);

	if (s == NULL)
		return -1;
	if (cidr_parse(&l->v[i], s) == -1)
		return conf_err(x, n, "'%s' is not an address/prefix",
		    conf_vis(x, s));
	*l->n = i + 1;
	return 0;
}

static int
cidrs(struct ctx *x, yaml_node_t *n, struct cidr **v, size_t *nv)
{
	struct cidr_list	l = { NULL, nv };

	/* Count errors are list_walk's to report, with their position. */
	if (list_count(n) > 0 && list_count(n) <= CONF_MAX_CIDRS &&
	    (*v = calloc(list_count(n), sizeof(**v))) == NULL)
		return conf_err(x, n, "out of memory");
	l.v = *v;
	return list_walk(x, n, 0, CONF_MAX_CIDRS, cidr_item, &l);
}

static int
key_allow(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	(void)k;
	(void)base;
	return cidrs(x, n, &x->c->server.egress_allow,
	    &x->c->server.negress_allow);
}

static int
key_deny(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	(void)k;
	(void)base;
	return cidrs(x, n, &x->c->server.egress_deny,
	    &x->c->server.negress_deny);
}

static int
key_fallback(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	(void)k;
	(void)base;
	return hostport(x, n, &x->c->server.fallback_host,
	    &x->c->server.fallback_port);
}

static int
check_server(struct ctx *x, yaml_node_t *map, void *base)
{
	(void)base;
	if (require(x, map, "listen") == -1 || require(x, map, "cert") == -1 ||
	    require(x, map, "cert_key") == -1 || require(x, map, "users") == -1)
		return -1;
	if (x->c->server.fallback_tls && !seen(x, "fallback")) {
		path_push(x, "fallback_tls");
		return conf_err(x, map, "needs fallback (the cover site)");
	}
	return 0;
}

/* ---- process: control, metrics, pid file, user ------------------------ */

/* Paths the daemon uses after chdir("/"), so they must be absolute. */
static int
key_abspath(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = scalar(x, n);

	if (s == NULL)
		return -1;
	if (*s != '/')
		return conf_err(x, n, "'%s' is not an absolute path",
		    conf_vis(x, s));
	return key_path(x, n, k, base);
}

static int
key_control(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = scalar(x, n);

	if (s == NULL)
		return -1;
	if (strcmp(s, "off") == 0) {
		FIELD(base, k, char)[0] = '\0';
		return 0;
	}
	if (*s != '/')
		return conf_err(x, n, "'%s' is not an absolute path (or off)",
		    conf_vis(x, s));
	if (strlen(s) >= (size_t)k->max)
		return conf_err(x, n, "path too long for a socket (max %lld "
		    "characters)", k->max - 1);
	memcpy(FIELD(base, k, char), s, strlen(s) + 1);
	return 0;
}

/* "9353" (loopback), "127.0.0.1:9353", "[::1]:9353"; numeric only. */
static int
key_metrics(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf		*c = base;
	const char		*s = scalar(x, n);
	unsigned long long	 port;

	(void)k;
	if (s == NULL)
		return -1;
	if (strcmp(s, "off") == 0) {
		c->has_metrics = false;
		return 0;
	}
	if (strchr(s, ':') == NULL) {
		if (parse_u64(s, &port) == -1 || port < 1 || port > 65535)
			return conf_err(x, n, "'%s' is not a port (1..65535) or "
			    "address:port", conf_vis(x, s));
		addr_from_ip(&c->metrics, "127.0.0.1", (uint16_t)port);
	} else if (addr_parse(&c->metrics, s) == -1 ||
	    addr_port(&c->metrics) == 0)
		return conf_err(x, n, "'%s' is not a numeric address:port "
		    "(127.0.0.1:%d, [::1]:%d)", conf_vis(x, s),
		    CONF_METRICS_PORT, CONF_METRICS_PORT);
	c->has_metrics = true;
	return 0;
}

/* Looked up now, so that `check` catches a typo before a restart does. */
static int
key_user(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	const char	*s;

	if (key_word(x, n, k, base) == -1)
		return -1;
	s = FIELD(base, k, char);
	if (getpwnam(s) == NULL)
		return conf_err(x, n, "no such user '%s'", conf_vis(x, s));
	return 0;
}

static int
key_group(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	const char	*s;

	if (key_word(x, n, k, base) == -1)
		return -1;
	s = FIELD(base, k, char);
	if (getgrnam(s) == NULL)
		return conf_err(x, n, "no such group '%s'", conf_vis(x, s));
	return 0;
}

static int
key_route(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = scalar(x, n);

	if (s == NULL)
		return -1;
	if (strcmp(s, "auto") == 0)
		*FIELD(base, k, bool) = true;
	else if (strcmp(s, "off") == 0)
		*FIELD(base, k, bool) = false;
	else
		return conf_err(x, n, "'%s' is not auto or off", conf_vis(x, s));
	return 0;
}

static int
key_connect_mode(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = scalar(x, n);

	if (s == NULL)
		return -1;
	if (strcmp(s, "faithful") == 0)
		*FIELD(base, k, bool) = true;
	else if (strcmp(s, "fast") == 0)
		*FIELD(base, k, bool) = false;
	else
		return conf_err(x, n, "'%s' is not fast or faithful",
		    conf_vis(x, s));
	return 0;
}

static int
key_route_exclude(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	(void)k;
	(void)base;
	return cidrs(x, n, &x->c->client.route_exclude,
	    &x->c->client.nroute_exclude);
}

static int
check_log(struct ctx *x, yaml_node_t *map, void *base)
{
	struct conf	*c = base;

	(void)map;
	c->log_syslog_set = seen(x, "syslog");
	return 0;
}

/* ---- tables ------------------------------------------------------------ */

#define C(f)	offsetof(struct conf, f)
#define MS_MAX	(24LL * 3600 * 1000)
#define SIZE_MIN_B	(1LL << 20)		/* max_buffer_memory */
#define SIZE_MAX_B	(1024LL << 30)

static const struct conf_key keys_log[] = {
	{ "level", key_level, C(log_level), 0, 0, NULL },
	{ "syslog", key_bool, C(log_syslog), 0, 0, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};

static const struct conf_key keys_tun[] = {
	{ "name", key_word, C(tun.name), 0, IFNAMSIZ, NULL },
	{ "mtu", key_uint, C(tun.mtu), 576, 65535, NULL },
	{ "address", key_tun_addr, 0, 0, 0, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};

static const struct conf_key keys_client[] = {
	{ "server", key_server_addr, 0, 0, 0, NULL },
	{ "sni", key_sni, C(client.sni), 0, 0, NULL },
	{ "ca", key_path, C(client.ca_file), 0, 0, NULL },
	{ "insecure", key_bool, C(client.insecure), 0, 0, NULL },
	{ "pin_sha256", key_pin, 0, 0, 0, NULL },
	{ "key", key_key, C(client.key), 0, 0, NULL },
	{ "key_file", key_file, C(client.key), 0, 0, NULL },
	{ "protocol", key_protocol, C(client.protocol), 0, 0, NULL },
	{ "username", key_username, C(client.username), 0, 0, NULL },
	{ "password", key_password, 0, 0, 0, NULL },
	{ "congestion", key_word, C(client.congestion), 0, CONF_CC_MAX, NULL },
	{ "mark", key_u32, C(client.mark), 0, UINT32_MAX, NULL },
	{ "max_flows", key_uint, C(client.max_flows), 1, 1000000, NULL },
	{ "connect_timeout", key_ms, C(client.connect_timeout_ms), 100,
	    600000, NULL },
	{ "idle_timeout", key_ms, C(client.idle_timeout_ms), 1000, MS_MAX,
	    NULL },
	{ "connect_mode", key_connect_mode, C(client.faithful), 0, 0, NULL },
	{ "padding", key_uint, C(client.padding), 0, 64, NULL },
	{ "pool", key_uint, C(client.pool), 0, 64, NULL },
	{ "pool_lifetime", key_ms, C(client.pool_lifetime_ms), 1000, 600000,
	    NULL },
	{ "max_udp", key_uint, C(client.max_udp), 1, 1000000, NULL },
	{ "max_buffer_memory", key_size, C(client.max_buffer_memory), SIZE_MIN_B,
	    SIZE_MAX_B, NULL },
	{ "udp_timeout", key_ms, C(client.udp_timeout_ms), 1000, MS_MAX, NULL },
	{ "dns_timeout", key_ms, C(client.dns_timeout_ms), 1000, MS_MAX, NULL },
	{ "dns", key_dns, 0, 0, 0, NULL },
	{ "route", key_route, C(client.route_auto), 0, 0, NULL },
	{ "route_exclude", key_route_exclude, 0, 0, 0, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};

static const struct conf_key keys_egress[] = {
	{ "allow", key_allow, 0, 0, 0, NULL },
	{ "deny", key_deny, 0, 0, 0, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};
static const struct conf_map map_egress = { keys_egress, NULL };

static const struct conf_key keys_resolver[] = {
	{ "workers", key_uint, C(server.resolve_workers), 1, 64, NULL },
	{ "queue", key_uint, C(server.resolve_queue), 1, 65536, NULL },
	{ "timeout", key_ms, C(server.resolve_timeout_ms), 100, 600000, NULL },
	{ "cache", key_uint, C(server.resolve_cache), 0, 1000000, NULL },
	{ "cache_ttl", key_ms, C(server.resolve_ttl_ms), 0, MS_MAX, NULL },
	{ "negative_ttl", key_ms, C(server.resolve_negative_ttl_ms), 0,
	    MS_MAX, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};
static const struct conf_map map_resolver = { keys_resolver, NULL };

static const struct conf_key keys_server[] = {
	{ "listen", key_listen, 0, 0, 0, NULL },
	{ "cert", key_path, C(server.cert_file), 0, 0, NULL },
	{ "cert_key", key_path, C(server.cert_key_file), 0, 0, NULL },
	{ "users", key_users, 0, 0, 0, NULL },
	{ "trojan_passwords", key_trojan, 0, 0, 0, NULL },
	{ "congestion", key_word, C(server.congestion), 0, CONF_CC_MAX, NULL },
	{ "mark", key_u32, C(server.mark), 0, UINT32_MAX, NULL },
	{ "max_conns", key_uint, C(server.max_conns), 1, 1000000, NULL },
	{ "max_conns_per_source", key_uint, C(server.max_conns_per_source), 0,
	    1000000, NULL },
	{ "max_conns_per_user", key_uint, C(server.max_conns_per_user), 0,
	    1000000, NULL },
	{ "max_udp", key_uint, C(server.max_udp), 1, 1000000, NULL },
	{ "max_udp_per_user", key_uint, C(server.max_udp_per_user), 0,
	    1000000, NULL },
	{ "max_buffer_memory", key_size, C(server.max_buffer_memory), SIZE_MIN_B,
	    SIZE_MAX_B, NULL },
	{ "padding", key_uint, C(server.padding), 0, 64, NULL },
	{ "connect_timeout", key_ms, C(server.connect_timeout_ms), 100,
	    600000, NULL },
	{ "idle_timeout", key_ms, C(server.idle_timeout_ms), 1000, MS_MAX,
	    NULL },
	{ "handshake_timeout", key_ms, C(server.handshake_timeout_ms), 100,
	    600000, NULL },
	{ "time_window", key_secs, C(server.time_window_s), 1000, 3600000,
	    NULL },
	{ "egress", key_map, 0, 0, 0, &map_egress },
	{ "resolver", key_map, 0, 0, 0, &map_resolver },
	{ "fallback", key_fallback, 0, 0, 0, NULL },
	{ "fallback_tls", key_bool, C(server.fallback_tls), 0, 0, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};

static const struct conf_map map_log = { keys_log, check_log };
static const struct conf_map map_tun = { keys_tun, NULL };
static const struct conf_map map_client = { keys_client, check_client };
static const struct conf_map map_server = { keys_server, check_server };

static int
key_role(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	if (x->c->role != 0)
		return conf_err(x, x->knode, "client: and server: are mutually "
		    "exclusive");
	x->c->role = (enum conf_role)k->min;
	return map_walk(x, n, k->sub, base);
}

static int
key_tun(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	x->tun_knode = x->knode;
	return map_walk(x, n, k->sub, base);
}

static int check_top(struct ctx *, yaml_node_t *, void *);

static const struct conf_key keys_top[] = {
	{ "log", key_map, 0, 0, 0, &map_log },
	{ "tun", key_tun, 0, 0, 0, &map_tun },
	{ "client", key_role, 0, CONF_ROLE_CLIENT, 0, &map_client },
	{ "server", key_role, 0, CONF_ROLE_SERVER, 0, &map_server },
	{ "control", key_control, C(control), 0, CONF_SOCK_MAX, NULL },
	{ "metrics", key_metrics, 0, 0, 0, NULL },
	{ "pidfile", key_abspath, C(pidfile), 0, 0, NULL },
	{ "user", key_user, C(user), 0, CONF_NAME_MAX, NULL },
	{ "group", key_group, C(group), 0, CONF_NAME_MAX, NULL },
	{ "drain_timeout", key_ms, C(drain_timeout_ms), 0, 3600000, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};
static const struct conf_map map_top = { keys_top, check_top };

static int
check_top(struct ctx *x, yaml_node_t *map, void *base)
{
	struct conf	*c = base;

	if (c->role == 0)
		return conf_err(x, map, "a client: or a server: section is "
		    "required");
	if (c->group[0] != '\0' && c->user[0] == '\0') {
		path_push(x, "group");
		return conf_err(x, map, "group: needs user:");
	}
	if (x->tun_knode != NULL && c->role != CONF_ROLE_CLIENT) {
		path_push(x, "tun");
		return conf_err(x, x->tun_knode, "only valid with client:");
	}
	if (c->role == CONF_ROLE_CLIENT && c->client.sni == NULL &&
	    c->client.server_host != NULL &&
	    (c->client.sni = strdup(c->client.server_host)) == NULL)
		return conf_err(x, map, "out of memory");
	return 0;
}

/* ---- load -------------------------------------------------------------- */

static struct conf *
conf_new(void)
{
	static const uint8_t	 a4[4] = { 198, 18, 0, 1 };
	static const uint8_t	 a6[16] = { 0xfd, 0xfe, 0xdc, 0xba, 0x98, 0x76,
	    0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
	struct conf		*c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->log_level = LOG_LVL_INFO;
	snprintf(c->tun.name, sizeof(c->tun.name), "tun0");
	c->tun.mtu = 9000;
	c->tun.has_addr4 = c->tun.has_addr6 = true;
	c->tun.addr4.family = AF_INET;
	memcpy(c->tun.addr4.bytes, a4, sizeof(a4));
	c->tun.addr4.prefix = 15;
	c->tun.addr6.family = AF_INET6;
	memcpy(c->tun.addr6.bytes, a6, sizeof(a6));
	c->tun.addr6.prefix = 64;
	snprintf(c->client.congestion, sizeof(c->client.congestion), "bbr");
	c->client.max_flows = 4096;
	c->client.connect_timeout_ms = 10000;
	c->client.idle_timeout_ms = 300000;
	c->client.pool = 2;
	c->client.padding = 8;
	c->server.padding = 8;
	c->client.pool_lifetime_ms = 8000;
	c->client.max_udp = 1024;
	c->client.max_buffer_memory = (size_t)64 << 20;
	c->client.udp_timeout_ms = 60000;
	c->client.dns_timeout_ms = 10000;
	snprintf(c->server.congestion, sizeof(c->server.congestion), "bbr");
	c->server.max_conns = 8192;
	c->server.max_conns_per_source = LIMIT_SOURCE_DEFAULT;
	c->server.max_udp = 4096;
	c->server.max_buffer_memory = (size_t)256 << 20;
	c->server.connect_timeout_ms = 10000;
	c->server.idle_timeout_ms = 300000;
	c->server.handshake_timeout_ms = 10000;
	c->server.time_window_s = 120;
	c->server.resolve_workers = 4;
	c->server.resolve_queue = 256;
	c->server.resolve_timeout_ms = 5000;
	c->server.resolve_cache = 1024;
	c->server.resolve_ttl_ms = 60000;
	c->server.resolve_negative_ttl_ms = 10000;
	snprintf(c->control, sizeof(c->control), "%s", CONF_CONTROL_DEFAULT);
	c->drain_timeout_ms = CONF_DRAIN_DEFAULT_MS;
	return c;
}

void
conf_free(struct conf *c)
{
	size_t	i;

	if (c == NULL)
		return;
	free(c->path);
	free(c->client.server_host);
	free(c->client.sni);
	free(c->client.ca_file);
	free(c->client.route_exclude);
	free(c->pidfile);
	free(c->server.cert_file);
	free(c->server.cert_key_file);
	for (i = 0; c->server.users != NULL && i < c->server.nusers; i++)
		conf_egress_unref(c->server.users[i].egress);
	for (i = 0; c->server.trojan_egress != NULL && i < c->server.ntrojan;
	    i++)
		conf_egress_unref(c->server.trojan_egress[i]);
	free(c->server.trojan_egress);
	free(c->server.trojan_limits);
	if (c->server.users != NULL)
		sodium_memzero(c->server.users,
		    c->server.nusers * sizeof(*c->server.users));
	free(c->server.users);
	if (c->server.trojan_hex != NULL)
		sodium_memzero(c->server.trojan_hex,
		    c->server.ntrojan * sizeof(*c->server.trojan_hex));
	free(c->server.trojan_hex);
	free(c->server.egress_allow);
	free(c->server.egress_deny);
	free(c->server.fallback_host);
	sodium_memzero(c, sizeof(*c));
	free(c);
}

/* Reader errors carry a byte offset instead of a mark. */
static void
syntax_err(struct ctx *x, const yaml_parser_t *p, const char *buf, size_t len)
{
	yaml_mark_t	m = p->problem_mark;
	size_t		i;

	if (p->error == YAML_MEMORY_ERROR) {
		snprintf(x->err, x->errlen, "%s: out of memory", x->name);
		return;
	}
	if (p->error == YAML_READER_ERROR) {
		memset(&m, 0, sizeof(m));
		for (i = 0; i < p->problem_offset && i < len; i++) {
			if (buf[i] == '\n') {
				m.line++;
				m.column = 0;
			} else
				m.column++;
		}
	}
	/* The context mark says where the unfinished construct began: the
	 * opening quote of an unterminated string, say. */
	if (p->context != NULL)
		snprintf(x->err, x->errlen, "%s:%zu:%zu: syntax error: %s %s "
		    "at %zu:%zu", x->name, m.line + 1, m.column + 1,
		    p->problem != NULL ? p->problem : "unknown", p->context,
		    p->context_mark.line + 1, p->context_mark.column + 1);
	else
		snprintf(x->err, x->errlen, "%s:%zu:%zu: syntax error: %s",
		    x->name, m.line + 1, m.column + 1,
		    p->problem != NULL ? p->problem : "unknown");
}

/* Secrets may sit in scalars and in the parser's buffers. */
static void
doc_wipe(yaml_document_t *d)
{
	yaml_node_t	*n;

	for (n = d->nodes.start; n < d->nodes.top; n++)
		if (n->type == YAML_SCALAR_NODE)
			sodium_memzero(n->data.scalar.value,
			    n->data.scalar.length);
}

static struct conf *
conf_load(const char *name, const char *buf, size_t len, char *err,
    size_t errlen, bool shared)
{
	yaml_parser_t	 parser;
	yaml_document_t	 doc, extra;
	yaml_node_t	*root;
	struct ctx	 x;
	struct conf	*c = NULL;
	bool		 have_doc = false;

	memset(&x, 0, sizeof(x));
	x.name = name != NULL ? name : "<config>";
	x.err = err;
	x.errlen = err != NULL ? errlen : 0;
	if (x.errlen > 0)
		err[0] = '\0';
	if (!yaml_parser_initialize(&parser)) {
		snprintf(x.err, x.errlen, "%s: out of memory", x.name);
		return NULL;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &doc)) {
		syntax_err(&x, &parser, buf, len);
		goto out;
	}
	have_doc = true;
	if ((root = yaml_document_get_root_node(&doc)) == NULL) {
		snprintf(x.err, x.errlen, "%s:1:1: empty configuration",
		    x.name);
		goto out;
	}
	if (!yaml_parser_load(&parser, &extra)) {
		syntax_err(&x, &parser, buf, len);
		goto out;
	}
	if ((root = yaml_document_get_root_node(&extra)) != NULL)
		conf_err(&x, root, "only one YAML document is allowed");
	doc_wipe(&extra);
	yaml_document_delete(&extra);
	if (x.failed)
		goto out;

	x.doc = &doc;
	x.nnodes = (size_t)(doc.nodes.top - doc.nodes.start);
	if ((x.visited = calloc(x.nnodes + 1, 1)) == NULL ||
	    (c = x.c = conf_new()) == NULL) {
		snprintf(x.err, x.errlen, "%s: out of memory", x.name);
		goto out;
	}
	if ((root = node_get(&x, 1, NULL)) == NULL ||
	    map_walk(&x, root, &map_top, c) == -1) {
		/* Only a node libyaml failed to give back errs silently. */
		if (!x.failed)
			snprintf(x.err, x.errlen, "%s: malformed document",
			    x.name);
		conf_free(c);
		c = NULL;
		goto out;
	}
	if (shared && x.inline_key)
		log_warnx("%s: holds keys and is readable by group or others",
		    x.name);
out:
	free(x.visited);
	if (have_doc) {
		doc_wipe(&doc);
		yaml_document_delete(&doc);
	}
	if (parser.raw_buffer.start != NULL)
		sodium_memzero(parser.raw_buffer.start,
		    (size_t)(parser.raw_buffer.end - parser.raw_buffer.start));
	if (parser.buffer.start != NULL)
		sodium_memzero(parser.buffer.start,
		    (size_t)(parser.buffer.end - parser.buffer.start));
	yaml_parser_delete(&parser);
	return c;
}

struct conf *
conf_load_buf(const char *name, const char *buf, size_t len, char *err,
    size_t errlen)
{
	return conf_load(name, buf, len, err, errlen, false);
}

struct conf *
conf_load_file(const char *path, char *err, size_t errlen)
{
	struct conf	*c = NULL;
	struct stat	 st;
	char		*buf = NULL;
	size_t		 len = 0;
	ssize_t		 r;
	int		 fd;

	if (err == NULL)
		errlen = 0;
	else if (errlen > 0)
		err[0] = '\0';
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto out;
	}
	if ((buf = malloc(CONF_FILE_MAX + 1)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	while (len <= CONF_FILE_MAX &&
	    (r = read(fd, buf + len, CONF_FILE_MAX + 1 - len)) != 0) {
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			goto out;
		}
		len += (size_t)r;
	}
	if (len > CONF_FILE_MAX) {
		snprintf(err, errlen, "%s: larger than %d bytes", path,
		    CONF_FILE_MAX);
		goto out;
	}
	c = conf_load(path, buf, len, err, errlen,
	    (st.st_mode & (S_IRGRP | S_IROTH)) != 0);
	/* Kept so that a server can read the same file again on SIGHUP. */
	if (c != NULL && (c->path = strdup(path)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		conf_free(c);
		c = NULL;
	}
out:
	if (buf != NULL) {
		sodium_memzero(buf, len);
		free(buf);
	}
	close(fd);
	return c;
}

/* ---- dump -------------------------------------------------------------- */

/* Double-quoted YAML string, so that any name reads back as it was. */
static void
dump_str(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(fp, "\\%c", *s);
		else if ((unsigned char)*s < 0x20 || *s == 0x7f)
			fprintf(fp, "\\x%02x", (unsigned char)*s);
		else
			fputc(*s, fp);
	}
	fputc('"', fp);
}

static void
dump_kv(FILE *fp, const char *indent, const char *key, const char *s)
{
	fprintf(fp, "%s%s: ", indent, key);
	dump_str(fp, s);
	fputc('\n', fp);
}

/* Bytes in the largest unit that is exact. */
static void
dump_size(FILE *fp, const char *key, size_t v)
{
	static const char	 units[] = "GMK";
	unsigned		 shift;
	size_t			 i;

	for (i = 0, shift = 30; i < 3; i++, shift -= 10)
		if (v != 0 && v % ((size_t)1 << shift) == 0) {
			fprintf(fp, "  %s: %zu%c\n", key, v >> shift, units[i]);
			return;
		}
	fprintf(fp, "  %s: %zu\n", key, v);
}

static void
dump_ms(FILE *fp, const char *key, unsigned ms)
{
	char	buf[32];

	fprintf(fp, "  %s: %s\n", key, duration_fmt(ms, buf, sizeof(buf)));
}

/* Marks are written in hex everywhere else (ip rule, iptables). */
static void
dump_mark(FILE *fp, uint32_t mark)
{
	if (mark == 0)
		fprintf(fp, "  mark: 0\n");
	else
		fprintf(fp, "  mark: 0x%" PRIx32 "\n", mark);
}

static void
dump_cidr_list(FILE *fp, const char *indent, const char *key,
    const struct cidr *v, size_t n)
{
	char	buf[INET6_ADDRSTRLEN + 8];
	size_t	i;

	fprintf(fp, "%s%s:%s\n", indent, key, n == 0 ? " []" : "");
	for (i = 0; i < n; i++)
		fprintf(fp, "%s  - %s\n", indent,
		    cidr_fmt(&v[i], buf, sizeof(buf)));
}

static void
dump_cidrs(FILE *fp, const char *key, const struct cidr *v, size_t n)
{
	dump_cidr_list(fp, "    ", key, v, n);
}

/* A user's own lists, when it has them. */
static void
dump_user_egress(FILE *fp, const char *indent, const struct conf_egress *e)
{
	if (e == NULL)
		return;
	dump_cidr_list(fp, indent, "egress_allow", e->allow, e->nallow);
	dump_cidr_list(fp, indent, "egress_deny", e->deny, e->ndeny);
}

static void
dump_hostport(FILE *fp, const char *key, const char *host, uint16_t port)
{
	bool	v6 = strchr(host, ':') != NULL;

	fprintf(fp, "  %s: \"%s%s%s:%u\"\n", key, v6 ? "[" : "", host,
	    v6 ? "]" : "", port);
}

static void
dump_client(const struct conf *c, FILE *fp)
{
	char	buf[INET6_ADDRSTRLEN + 8];
	size_t	i;
	char	pin[sodium_base64_ENCODED_LEN(32,
	    sodium_base64_VARIANT_ORIGINAL)];

	fprintf(fp, "tun:\n");
	dump_kv(fp, "  ", "name", c->tun.name);
	fprintf(fp, "  mtu: %u\n  address:\n", c->tun.mtu);
	if (c->tun.has_addr4)
		fprintf(fp, "    - %s\n",
		    cidr_fmt(&c->tun.addr4, buf, sizeof(buf)));
	if (c->tun.has_addr6)
		fprintf(fp, "    - %s\n",
		    cidr_fmt(&c->tun.addr6, buf, sizeof(buf)));
	fprintf(fp, "client:\n");
	if (c->client.server_host != NULL)	/* none for direct, block */
		dump_hostport(fp, "server", c->client.server_host,
		    c->client.server_port);
	if (c->client.sni != NULL)
		dump_kv(fp, "  ", "sni", c->client.sni);
	if (c->client.ca_file != NULL)
		dump_kv(fp, "  ", "ca", c->client.ca_file);
	else
		fprintf(fp, "  # ca: system trust store\n");
	fprintf(fp, "  insecure: %s\n", c->client.insecure ? "true" : "false");
	if (c->client.has_pin) {
		sodium_bin2base64(pin, sizeof(pin), c->client.pin_sha256,
		    sizeof(c->client.pin_sha256),
		    sodium_base64_VARIANT_ORIGINAL);
		fprintf(fp, "  pin_sha256: \"%s\"\n", pin);
	}
	if (c->client.protocol <= CONF_PROTO_TROJAN)
		fprintf(fp, "  key: (redacted)\n");
	if (c->client.protocol != CONF_PROTO_TUNSPLIT)
		fprintf(fp, "  protocol: %s\n",
		    conf_proto_name(c->client.protocol));
	if (c->client.username[0] != '\0')
		dump_kv(fp, "  ", "username", c->client.username);
	if (c->client.protocol == CONF_PROTO_TROJAN ||
	    c->client.password[0] != '\0')
		fprintf(fp, "  password: (redacted)\n");
	dump_kv(fp, "  ", "congestion", c->client.congestion);
	dump_mark(fp, c->client.mark);
	fprintf(fp, "  max_flows: %u\n", c->client.max_flows);
	dump_ms(fp, "connect_timeout", c->client.connect_timeout_ms);
	dump_ms(fp, "idle_timeout", c->client.idle_timeout_ms);
	dump_kv(fp, "  ", "connect_mode", c->client.faithful ? "faithful" : "fast");
	fprintf(fp, "  padding: %u\n", c->client.padding);
	fprintf(fp, "  pool: %u\n", c->client.pool);
	dump_ms(fp, "pool_lifetime", c->client.pool_lifetime_ms);
	fprintf(fp, "  max_udp: %u\n", c->client.max_udp);
	dump_size(fp, "max_buffer_memory", c->client.max_buffer_memory);
	dump_ms(fp, "udp_timeout", c->client.udp_timeout_ms);
	dump_ms(fp, "dns_timeout", c->client.dns_timeout_ms);
	if (c->client.has_dns) {
		char	dbuf[ADDR_STRLEN];

		fprintf(fp, "  dns: \"%s\"\n",
		    addr_fmt(&c->client.dns, dbuf, sizeof(dbuf)));
	}
	fprintf(fp, "  route: %s\n", c->client.route_auto ? "auto" : "off");
	if (c->client.nroute_exclude > 0)
		fprintf(fp, "  route_exclude:\n");
	for (i = 0; i < c->client.nroute_exclude; i++)
		fprintf(fp, "    - %s\n", cidr_fmt(&c->client.route_exclude[i],
		    buf, sizeof(buf)));
}

static void
dump_server(const struct conf *c, FILE *fp)
{
	char	buf[ADDR_STRLEN];
	size_t	i;

	fprintf(fp, "server:\n  listen:\n");
	for (i = 0; i < c->server.nlisten; i++)
		fprintf(fp, "    - \"%s\"\n",
		    addr_fmt(&c->server.listen[i], buf, sizeof(buf)));
	dump_kv(fp, "  ", "cert", c->server.cert_file);
	dump_kv(fp, "  ", "cert_key", c->server.cert_key_file);
	fprintf(fp, "  users:\n");
	for (i = 0; i < c->server.nusers; i++) {
		dump_kv(fp, "    - ", "name", c->server.users[i].name);
		fprintf(fp, "      key: (redacted)\n");
		if (c->server.users[i].max_conns != 0)
			fprintf(fp, "      max_conns: %u\n",
			    c->server.users[i].max_conns);
		if (c->server.users[i].max_udp != 0)
			fprintf(fp, "      max_udp: %u\n",
			    c->server.users[i].max_udp);
		dump_user_egress(fp, "      ", c->server.users[i].egress);
	}
	if (c->server.ntrojan > 0)
		fprintf(fp, "  # trojan_passwords: %zu (redacted)\n",
		    c->server.ntrojan);
	for (i = 0; i < c->server.ntrojan; i++) {
		const struct conf_limits *l = &c->server.trojan_limits[i];

		if (c->server.trojan_egress[i] == NULL && l->max_conns == 0 &&
		    l->max_udp == 0)
			continue;
		fprintf(fp, "  # trojan_passwords[%zu]:\n", i);
		if (l->max_conns != 0)
			fprintf(fp, "  #   max_conns: %u\n", l->max_conns);
		if (l->max_udp != 0)
			fprintf(fp, "  #   max_udp: %u\n", l->max_udp);
		dump_user_egress(fp, "  #   ", c->server.trojan_egress[i]);
	}
	dump_kv(fp, "  ", "congestion", c->server.congestion);
	dump_mark(fp, c->server.mark);
	fprintf(fp, "  max_conns: %u\n", c->server.max_conns);
	fprintf(fp, "  max_conns_per_source: %u\n",
	    c->server.max_conns_per_source);
	fprintf(fp, "  max_conns_per_user: %u\n", c->server.max_conns_per_user);
	fprintf(fp, "  max_udp: %u\n", c->server.max_udp);
	fprintf(fp, "  max_udp_per_user: %u\n", c->server.max_udp_per_user);
	dump_size(fp, "max_buffer_memory", c->server.max_buffer_memory);
	fprintf(fp, "  padding: %u\n", c->server.padding);
	dump_ms(fp, "connect_timeout", c->server.connect_timeout_ms);
	dump_ms(fp, "idle_timeout", c->server.idle_timeout_ms);
	dump_ms(fp, "handshake_timeout", c->server.handshake_timeout_ms);
	dump_ms(fp, "time_window", c->server.time_window_s * 1000);
	fprintf(fp, "  egress:\n");
	dump_cidrs(fp, "allow", c->server.egress_allow,
	    c->server.negress_allow);
	dump_cidrs(fp, "deny", c->server.egress_deny, c->server.negress_deny);
	fprintf(fp, "  resolver:\n    workers: %u\n    queue: %u\n",
	    c->server.resolve_workers, c->server.resolve_queue);
	dump_ms(fp, "  timeout", c->server.resolve_timeout_ms);
	fprintf(fp, "    cache: %u\n", c->server.resolve_cache);
	dump_ms(fp, "  cache_ttl", c->server.resolve_ttl_ms);
	dump_ms(fp, "  negative_ttl", c->server.resolve_negative_ttl_ms);
	if (c->server.fallback_host != NULL) {
		dump_hostport(fp, "fallback", c->server.fallback_host,
		    c->server.fallback_port);
		fprintf(fp, "  fallback_tls: %s\n",
		    c->server.fallback_tls ? "true" : "false");
	} else
		fprintf(fp, "  # fallback: none (unauthenticated connections "
		    "are closed)\n");
}

void
conf_dump(const struct conf *c, FILE *fp)
{
	static const char *const levels[] = {
		[LOG_LVL_ERROR] = "error", [LOG_LVL_WARN] = "warn",
		[LOG_LVL_INFO] = "info", [LOG_LVL_DEBUG] = "debug",
	};

	char		 buf[ADDR_STRLEN], ms[32];

	fprintf(fp, "log:\n  level: %s\n  syslog: %s\n",
	    c->log_level >= 0 && c->log_level <= LOG_LVL_DEBUG ?
	    levels[c->log_level] : "info", c->log_syslog ? "true" : "false");
	if (c->control[0] != '\0')
		dump_kv(fp, "", "control", c->control);
	else
		fprintf(fp, "control: off\n");
	if (c->has_metrics)
		fprintf(fp, "metrics: \"%s\"\n",
		    addr_fmt(&c->metrics, buf, sizeof(buf)));
	else
		fprintf(fp, "metrics: off\n");
	if (c->pidfile != NULL)
		dump_kv(fp, "", "pidfile", c->pidfile);
	else
		fprintf(fp, "# pidfile: none\n");
	if (c->user[0] != '\0')
		dump_kv(fp, "", "user", c->user);
	if (c->group[0] != '\0')
		dump_kv(fp, "", "group", c->group);
	fprintf(fp, "drain_timeout: %s\n",
	    duration_fmt(c->drain_timeout_ms, ms, sizeof(ms)));
	if (c->role == CONF_ROLE_CLIENT)
		dump_client(c, fp);
	else
		dump_server(c, fp);
}
