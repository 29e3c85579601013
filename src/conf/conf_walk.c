/*
 * The walk over the composed YAML document: errors with their positions,
 * the key path, nodes, the table-driven mapping walk, and the handlers of
 * the primitive values (booleans, numbers, durations, sizes, names, paths,
 * keys, host:port, address lists) that every section's table uses.
 * libyaml composes the whole document first (yaml_parser_load), so every
 * node still carries its line and column while we validate it.
 */
#include "config.h"

#include "conf/conf_int.h"

#include <sys/stat.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "wire/auth.h"
#include "core/limit.h"

#define CONF_KEYFILE_MAX	1024
#define CONF_HOST_MAX		253
#define CONF_MAX_CIDRS		1024

static int conf_verr(struct ctx *, const yaml_mark_t *, const char *,
    va_list) LOG_PRINTF(3, 0);

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

int
conf_err(struct ctx *x, const yaml_node_t *n, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	conf_verr(x, &n->start_mark, fmt, ap);
	va_end(ap);
	return -1;
}

/* Printable, bounded copy of user text for messages (never of secrets). */
const char *
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

size_t
conf_path_push(struct ctx *x, const char *key)
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

void
conf_path_pop(struct ctx *x, size_t old)
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
yaml_node_t *
conf_node_get(struct ctx *x, int idx, const yaml_node_t *where)
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

const char *
conf_node_kind(const yaml_node_t *n)
{
	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	if (n->type == YAML_SEQUENCE_NODE)
		return "a list";
	return node_is_null(n) ? "nothing" : "a single value";
}

/* The scalar's text, or NULL once the reason is reported. */
const char *
conf_scalar(struct ctx *x, yaml_node_t *n)
{
	const char	*s;

	if (n->type != YAML_SCALAR_NODE || node_is_null(n)) {
		conf_err(x, n, "expected a value, found %s", conf_node_kind(n));
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

size_t
conf_list_count(const yaml_node_t *n)
{
	if (n->type == YAML_SEQUENCE_NODE)
		return (size_t)(n->data.sequence.items.top -
		    n->data.sequence.items.start);
	return 1;
}

typedef int (*conf_item_fn)(struct ctx *, yaml_node_t *, size_t, void *);

/* A single value or a list of between min and max values. */
int
conf_list_walk(struct ctx *x, yaml_node_t *n, size_t min, size_t max,
    conf_item_fn fn, void *arg)
{
	yaml_node_item_t	*it;
	yaml_node_t		*item;
	size_t			 i, old;

	if (n->type == YAML_SCALAR_NODE && !node_is_null(n))
		return fn(x, n, 0, arg);
	if (n->type != YAML_SEQUENCE_NODE)
		return conf_err(x, n, "expected a value or a list, found %s",
		    conf_node_kind(n));
	if (conf_list_count(n) < min)
		return conf_err(x, n, "empty list");
	if (conf_list_count(n) > max)
		return conf_err(x, n, "too many entries (max %zu)", max);
	for (it = n->data.sequence.items.start, i = 0;
	    it < n->data.sequence.items.top; it++, i++) {
		old = path_push_index(x, i);
		if ((item = conf_node_get(x, *it, n)) == NULL ||
		    fn(x, item, i, arg) == -1)
			return -1;
		conf_path_pop(x, old);
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
bool
conf_seen(const struct ctx *x, const char *name)
{
	int	i = key_index(x->map, name);

	return i >= 0 && (x->seen & (1ull << i));
}

int
conf_map_walk(struct ctx *x, yaml_node_t *n, const struct conf_map *m,
    void *base)
{
	const struct conf_map	*omap = x->map;
	yaml_node_pair_t	*p;
	yaml_node_t		*k, *v;
	uint64_t		 oseen = x->seen;
	size_t			 old;
	int			 i, rc = -1;

	if (n->type != YAML_MAPPING_NODE)
		return conf_err(x, n, "expected a mapping, found %s",
		    conf_node_kind(n));
	x->map = m;
	x->seen = 0;
	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	    p++) {
		if ((k = conf_node_get(x, p->key, NULL)) == NULL)
			goto out;
		if (k->type != YAML_SCALAR_NODE || strlen((const char *)
		    k->data.scalar.value) != k->data.scalar.length) {
			conf_err(x, k, "keys must be plain names");
			goto out;
		}
		old = conf_path_push(x, (const char *)k->data.scalar.value);
		if ((i = key_index(m, (const char *)k->data.scalar.value)) < 0) {
			conf_err(x, k, "unknown key");
			goto out;
		}
		if (i >= 64) {		/* a table too long for seen */
			conf_err(x, k, "internal error: key table too long");
			goto out;
		}
		if (x->seen & (1ull << i)) {
			conf_err(x, k, "duplicate key");
			goto out;
		}
		x->seen |= 1ull << i;
		x->knode = k;
		if ((v = conf_node_get(x, p->value, k)) == NULL ||
		    m->keys[i].fn(x, v, &m->keys[i], base) == -1)
			goto out;
		conf_path_pop(x, old);
	}
	if (m->check != NULL && m->check(x, n, base) == -1)
		goto out;
	rc = 0;
out:
	x->map = omap;
	x->seen = oseen;
	return rc;
}

int
conf_require(struct ctx *x, yaml_node_t *map, const char *name)
{
	if (conf_seen(x, name))
		return 0;
	conf_path_push(x, name);
	return conf_err(x, map, "missing required key");
}

/* ---- value parsers ---------------------------------------------------- */

/* Decimal or 0x hex; no sign, no space, no trailing junk. */
int
conf_parse_u64(const char *s, unsigned long long *out)
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
const char *
conf_duration_fmt(long long ms, char *out, size_t outlen)
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
bool
conf_host_valid(const char *s)
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

/* One of a few words; the message names them all, in the table's order. */
int
conf_choice(struct ctx *x, yaml_node_t *n, const struct conf_word *w,
    int *value)
{
	const char	*s = conf_scalar(x, n), *sep;
	char		 list[128];
	size_t		 i, len;

	if (s == NULL)
		return -1;
	for (i = 0; w[i].word != NULL; i++)
		if (strcmp(s, w[i].word) == 0) {
			*value = w[i].value;
			return 0;
		}
	list[0] = '\0';
	for (i = 0; w[i].word != NULL; i++) {
		sep = i == 0 ? "" : w[i + 1].word == NULL ? " or " : ", ";
		len = strlen(list);
		snprintf(list + len, sizeof(list) - len, "%s%s", sep,
		    w[i].word);
	}
	return conf_err(x, n, "'%s' is not %s", conf_vis(x, s), list);
}

/* A bool field set by one of the words w. */
int
conf_flag(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base, const struct conf_word *w)
{
	int	v;

	if (conf_choice(x, n, w, &v) == -1)
		return -1;
	*CONF_FIELD(base, k, bool) = v != 0;
	return 0;
}

int
conf_key_bool(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	static const struct conf_word	w[] = {
		{ "true", 1 }, { "false", 0 }, { "yes", 1 }, { "no", 0 },
		{ NULL, 0 }
	};

	return conf_flag(x, n, k, base, w);
}

int
conf_number(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    unsigned long long *v)
{
	const char	*s = conf_scalar(x, n);

	if (s == NULL)
		return -1;
	if (conf_parse_u64(s, v) == -1)
		return conf_err(x, n, "'%s' is not an integer", conf_vis(x, s));
	if (*v < (unsigned long long)k->min || *v > (unsigned long long)k->max)
		return conf_err(x, n, "%s out of range (%lld..%lld)",
		    conf_vis(x, s), k->min, k->max);
	return 0;
}

int
conf_key_uint(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	unsigned long long	v;

	if (conf_number(x, n, k, &v) == -1)
		return -1;
	*CONF_FIELD(base, k, unsigned) = (unsigned)v;
	return 0;
}

int
conf_key_u32(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	unsigned long long	v;

	if (conf_number(x, n, k, &v) == -1)
		return -1;
	*CONF_FIELD(base, k, uint32_t) = (uint32_t)v;
	return 0;
}

static int
duration(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    long long *ms)
{
	const char	*s = conf_scalar(x, n);
	char		 lo[32], hi[32];

	if (s == NULL)
		return -1;
	if ((*ms = conf_parse_duration_ms(s)) == -1)
		return conf_err(x, n, "'%s' is not a duration (250ms, 30s, 5m, "
		    "1h)", conf_vis(x, s));
	if (*ms < k->min || *ms > k->max)
		return conf_err(x, n, "%s out of range (%s..%s)", conf_vis(x, s),
		    conf_duration_fmt(k->min, lo, sizeof(lo)),
		    conf_duration_fmt(k->max, hi, sizeof(hi)));
	return 0;
}

int
conf_key_ms(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	long long	ms;

	if (duration(x, n, k, &ms) == -1)
		return -1;
	*CONF_FIELD(base, k, unsigned) = (unsigned)ms;
	return 0;
}

int
conf_key_secs(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	long long	ms;

	if (duration(x, n, k, &ms) == -1)
		return -1;
	if (ms % 1000 != 0)
		return conf_err(x, n, "must be whole seconds");
	*CONF_FIELD(base, k, unsigned) = (unsigned)(ms / 1000);
	return 0;
}

/*
 * A byte count: "64M", "512K", "1G" or bare bytes.  0 means no limit;
 * anything else must lie in min..max.
 */
int
conf_key_size(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char		*s = conf_scalar(x, n);
	unsigned long long	 v, max = (unsigned long long)k->max;

	if (s == NULL)
		return -1;
	/* A 32-bit system holds less than the key's maximum. */
	if (max > SIZE_MAX)
		max = SIZE_MAX;
	if (limit_parse_size(s, &v) == -1)
		return conf_err(x, n, "'%s' is not a size (4096, 512K, 64M, 1G)",
		    conf_vis(x, s));
	if (v != 0 && (v < (unsigned long long)k->min || v > max))
		return conf_err(x, n, "%s out of range (0 for no limit, or "
		    "%lldM..%lluG)", conf_vis(x, s), k->min >> 20, max >> 30);
	*CONF_FIELD(base, k, size_t) = (size_t)v;
	return 0;
}

/* A file name, kept as given; existence is checked when it is used. */
int
conf_key_path(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = conf_scalar(x, n);

	if (s == NULL)
		return -1;
	if (strlen(s) >= PATH_MAX)
		return conf_err(x, n, "path too long");
	if ((*CONF_FIELD(base, k, char *) = strdup(s)) == NULL)
		return conf_err(x, n, "out of memory");
	return 0;
}

/* A name into a fixed buffer of k->max bytes. */
int
conf_key_word(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = conf_scalar(x, n);

	if (s == NULL)
		return -1;
	if (strlen(s) >= (size_t)k->max)
		return conf_err(x, n, "'%s' too long (max %lld characters)",
		    conf_vis(x, s), k->max - 1);
	if (!word_valid(s))
		return conf_err(x, n, "'%s' contains characters other than "
		    "letters, digits, '.', '-', '_' or '@'", conf_vis(x, s));
	memcpy(CONF_FIELD(base, k, char), s, strlen(s) + 1);
	return 0;
}

int
conf_key_map(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	return conf_map_walk(x, n, k->sub, base);
}

/* ---- keys ------------------------------------------------------------- */

bool
conf_redacted(struct ctx *x, yaml_node_t *n, const char *s)
{
	if (strcmp(s, CONF_REDACTED) != 0)
		return false;
	conf_err(x, n, "the secret was redacted by tunsplit check: "
	    "`tunsplit check --secrets` prints it, or use a key_file");
	return true;
}

int
conf_sha224(struct ctx *x, yaml_node_t *n, const char *s,
    char hex[CONF_TROJAN_HEX_LEN + 1])
{
	size_t	i;

	if (conf_redacted(x, n, s))
		return -1;
	for (i = 0; i < CONF_TROJAN_HEX_LEN; i++)
		if (!isxdigit((unsigned char)s[i]))
			break;
	if (i != CONF_TROJAN_HEX_LEN || s[i] != '\0')
		return conf_err(x, n, "not a SHA-224 (%d hex digits)",
		    CONF_TROJAN_HEX_LEN);
	for (i = 0; i < CONF_TROJAN_HEX_LEN; i++)
		hex[i] = (char)tolower((unsigned char)s[i]);
	hex[i] = '\0';
	return 0;
}

int
conf_key_key(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = conf_scalar(x, n);

	if (s == NULL)
		return -1;
	if (conf_seen(x, "key_file"))
		return conf_err(x, n, "key and key_file are mutually exclusive");
	if (conf_redacted(x, n, s))
		return -1;
	if (auth_key_parse(s, CONF_FIELD(base, k, uint8_t)) == -1)
		return conf_err(x, n, "not a valid key (base64 of %d bytes, "
		    "see tunsplit genkey)", CONF_KEY_LEN);
	x->inline_key = true;
	return 0;
}

int
conf_key_file(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	char		 buf[CONF_KEYFILE_MAX + 1], *s, *e, abs[PATH_MAX];
	const char	*path = conf_scalar(x, n), *why;
	size_t		 len = 0;
	bool		 shared = false;
	int		 rc = -1;

	if (path == NULL)
		return -1;
	if (conf_seen(x, "key"))
		return conf_err(x, n, "key and key_file are mutually exclusive");
	if ((path = conf_file_name(x, n, path, abs, sizeof(abs))) == NULL)
		return -1;
	why = conf_read_file(path, buf, sizeof(buf), &len, &shared);
	if (shared)
		log_warnx("%s: key file is readable by group or others",
		    conf_vis(x, path));
	if (why != NULL) {
		conf_err(x, n, "%s: %s", conf_vis(x, path), why);
		goto out;
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
	if (auth_key_parse(s, CONF_FIELD(base, k, uint8_t)) == -1) {
		conf_err(x, n, "%s: not a valid key (base64 of %d bytes, see "
		    "tunsplit genkey)", conf_vis(x, path), CONF_KEY_LEN);
		goto out;
	}
	/* Kept for the dump, which shows the file rather than the key. */
	if ((*(char **)(void *)((char *)base + k->min) = strdup(path)) ==
	    NULL) {
		conf_err(x, n, "out of memory");
		goto out;
	}
	rc = 0;
out:
	sodium_memzero(buf, sizeof(buf));
	return rc;
}

int
conf_check_key(struct ctx *x, yaml_node_t *map)
{
	if (conf_seen(x, "key") || conf_seen(x, "key_file"))
		return 0;
	conf_path_push(x, "key");
	return conf_err(x, map, "missing required key (or key_file)");
}

/* ---- addresses --------------------------------------------------------- */

/* "host:port" or "[v6]:port" with a host name or address; *host is
 * allocated. */
int
conf_hostport(struct ctx *x, yaml_node_t *n, char **hostp, uint16_t *portp)
{
	const char		*s = conf_scalar(x, n), *colon, *h;
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
	if (h != s ? inet_pton(AF_INET6, host, &in6) != 1 :
	    !conf_host_valid(host))
		goto bad;
	if (strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
	    conf_parse_u64(colon + 1, &port) == -1 || port < 1 || port > 65535)
		return conf_err(x, n, "'%s' has no valid port (1..65535)",
		    conf_vis(x, s));
	if ((*hostp = strdup(host)) == NULL)
		return conf_err(x, n, "out of memory");
	*portp = (uint16_t)port;
	return 0;
bad:
	return conf_err(x, n, "'%s' is not host:port", conf_vis(x, s));
}

struct cidr_list {
	struct cidr	*v;
	size_t		*n;
};

static int
cidr_item(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct cidr_list	*l = arg;
	const char		*s = conf_scalar(x, n);

	if (s == NULL)
		return -1;
	if (cidr_parse(&l->v[i], s) == -1)
		return conf_err(x, n, "'%s' is not an address/prefix",
		    conf_vis(x, s));
	*l->n = i + 1;
	return 0;
}

int
conf_cidrs(struct ctx *x, yaml_node_t *n, struct cidr **v, size_t *nv)
{
	struct cidr_list	l = { NULL, nv };

	/* Count errors are conf_list_walk's to report, with their position. */
	if (conf_list_count(n) > 0 && conf_list_count(n) <= CONF_MAX_CIDRS &&
	    (*v = calloc(conf_list_count(n), sizeof(**v))) == NULL)
		return conf_err(x, n, "out of memory");
	l.v = *v;
	return conf_list_walk(x, n, 0, CONF_MAX_CIDRS, cidr_item, &l);
}
