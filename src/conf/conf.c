/*
 * Configuration loader: the document and its top level (log, tun, the
 * process keys and the role section), defaults, and conf_free.  The walk
 * and the primitive keys are conf_walk.c's, the sections conf_client.c's
 * and conf_server.c's, the dump conf_dump.c's.
 */
#include "config.h"

#include "conf/conf.h"

#include <sys/stat.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "conf/conf_int.h"
#include "core/limit.h"
#include "rules/rules.h"

#define CONF_FILE_MAX		(1024 * 1024)
#define CONF_METRICS_PORT	9353

/* ---- log, tun ---------------------------------------------------------- */

static int
key_level(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	const char	*s = conf_scalar(x, n);
	int		 lvl;

	if (s == NULL)
		return -1;
	if ((lvl = log_level_parse(s)) == -1)
		return conf_err(x, n, "'%s' is not error, warn, info or debug",
		    conf_vis(x, s));
	*CONF_FIELD(base, k, int) = lvl;
	return 0;
}

/* tun.offload: on or off (and the usual booleans). */
static int
key_onoff(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	static const struct conf_word	w[] = {
		{ "on", 1 }, { "off", 0 }, { "true", 1 }, { "false", 0 },
		{ "yes", 1 }, { "no", 0 }, { NULL, 0 }
	};

	return conf_flag(x, n, k, base, w);
}

static int
tun_addr_item(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct conf	*c = arg;
	const char	*s = conf_scalar(x, n);
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
	return conf_list_walk(x, n, 1, 2, tun_addr_item, base);
}

/* ---- process: control, metrics, pid file, user ------------------------ */

/* Paths the daemon uses after chdir("/"): relative ones are taken from
 * the file's directory; a buffer has none, so there they are an error. */
static int
key_abspath(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = conf_scalar(x, n);

	if (s == NULL)
		return -1;
	if (*s != '/' && x->dir == NULL)
		return conf_err(x, n, "'%s' is not an absolute path",
		    conf_vis(x, s));
	return conf_key_filename(x, n, k, base);
}

static int
key_control(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = conf_scalar(x, n);
	char		 path[PATH_MAX];

	if (s == NULL)
		return -1;
	if (strcmp(s, "off") == 0) {
		CONF_FIELD(base, k, char)[0] = '\0';
		return 0;
	}
	if (*s != '/' && x->dir == NULL)
		return conf_err(x, n, "'%s' is not an absolute path (or off)",
		    conf_vis(x, s));
	if ((s = conf_file_name(x, n, s, path, sizeof(path))) == NULL)
		return -1;
	if (strlen(s) >= (size_t)k->max)
		return conf_err(x, n, "path too long for a socket (max %lld "
		    "characters)", k->max - 1);
	memcpy(CONF_FIELD(base, k, char), s, strlen(s) + 1);
	return 0;
}

/* "9353" (loopback), "127.0.0.1:9353", "[::1]:9353"; numeric only. */
static int
key_metrics(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf		*c = base;
	const char		*s = conf_scalar(x, n);
	unsigned long long	 port;

	(void)k;
	if (s == NULL)
		return -1;
	if (strcmp(s, "off") == 0) {
		c->has_metrics = false;
		return 0;
	}
	if (strchr(s, ':') == NULL) {
		if (conf_parse_u64(s, &port) == -1 || port < 1 || port > 65535)
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

/* user: and group:, looked up now, so that `check` catches a typo before
 * a restart does.  The key's name says which kind of account. */
static int
key_account(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s;
	bool		 found;

	if (conf_key_word(x, n, k, base) == -1)
		return -1;
	s = CONF_FIELD(base, k, char);
	if (strcmp(k->name, "group") == 0)
		found = getgrnam(s) != NULL;
	else
		found = getpwnam(s) != NULL;
	if (!found)
		return conf_err(x, n, "no such %s '%s'", k->name,
		    conf_vis(x, s));
	return 0;
}

/* ---- the top level ---------------------------------------------------- */

static int
check_log(struct ctx *x, yaml_node_t *map, void *base)
{
	struct conf	*c = base;

	(void)map;
	c->log_syslog_set = conf_seen(x, "syslog");
	return 0;
}

static const struct conf_key keys_log[] = {
	{ "level", key_level, C(log_level), 0, 0, NULL },
	{ "syslog", conf_key_bool, C(log_syslog), 0, 0, NULL },
	{ "flows", conf_key_bool, C(log_flows), 0, 0, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};

static const struct conf_key keys_tun[] = {
	{ "name", conf_key_word, C(tun.name), 0, IFNAMSIZ, NULL },
	{ "mtu", conf_key_uint, C(tun.mtu), 576, 65535, NULL },
	{ "address", key_tun_addr, 0, 0, 0, NULL },
	{ "offload", key_onoff, C(tun.offload), 0, 0, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};

static const struct conf_map map_log = { keys_log, check_log };
static const struct conf_map map_tun = { keys_tun, NULL };

static int
key_role(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	if (x->c->role != 0)
		return conf_err(x, x->knode, "client: and server: are mutually "
		    "exclusive");
	x->c->role = (enum conf_role)k->min;
	return conf_map_walk(x, n, k->sub, base);
}

static int
key_tun(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	x->tun_knode = x->knode;
	return conf_map_walk(x, n, k->sub, base);
}

static int check_top(struct ctx *, yaml_node_t *, void *);

static const struct conf_key keys_top[] = {
	{ "log", conf_key_map, 0, 0, 0, &map_log },
	{ "tun", key_tun, 0, 0, 0, &map_tun },
	{ "client", key_role, 0, CONF_ROLE_CLIENT, 0, &conf_map_client },
	{ "server", key_role, 0, CONF_ROLE_SERVER, 0, &conf_map_server },
	{ "control", key_control, C(control), 0, CONF_SOCK_MAX, NULL },
	{ "metrics", key_metrics, 0, 0, 0, NULL },
	{ "pidfile", key_abspath, C(pidfile), 0, 0, NULL },
	{ "user", key_account, C(user), 0, CONF_NAME_MAX, NULL },
	{ "group", key_account, C(group), 0, CONF_NAME_MAX, NULL },
	{ "drain_timeout", conf_key_ms, C(drain_timeout_ms), 0, 3600000, NULL },
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
		conf_path_push(x, "group");
		return conf_err(x, map, "group: needs user:");
	}
	if (x->tun_knode != NULL && c->role != CONF_ROLE_CLIENT) {
		conf_path_push(x, "tun");
		return conf_err(x, x->tun_knode, "only valid with client:");
	}
	if (conf_dns_check(x) == -1)
		return -1;
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
	c->refs = 1;
	c->generation = 1;
	c->log_level = LOG_LVL_INFO;
	snprintf(c->tun.name, sizeof(c->tun.name), "tun0");
	c->tun.mtu = 9000;
	c->tun.offload = true;
	c->tun.has_addr4 = c->tun.has_addr6 = true;
	c->tun.addr4.family = AF_INET;
	memcpy(c->tun.addr4.bytes, a4, sizeof(a4));
	c->tun.addr4.prefix = 15;
	c->tun.addr6.family = AF_INET6;
	memcpy(c->tun.addr6.bytes, a6, sizeof(a6));
	c->tun.addr6.prefix = 64;
	snprintf(c->client.congestion, sizeof(c->client.congestion), "bbr");
	c->client.max_flows = 4096;
	c->client.dial_threads = 1;
	c->client.workers = 0;	/* one per online CPU */
	c->client.connect_timeout_ms = 10000;
	c->client.idle_timeout_ms = 300000;
	c->client.sniff_timeout_ms = 50;
	c->server.padding = 8;
	c->client.max_udp = 1024;
	c->client.max_buffer_memory = (size_t)64 << 20;
	c->client.udp_timeout_ms = 60000;
	c->client.dns_timeout_ms = 10000;
	c->client.dns_cache_size = 1024;
	snprintf(c->server.congestion, sizeof(c->server.congestion), "bbr");
	c->server.max_conns = 8192;
	c->server.max_conns_per_source = LIMIT_SOURCE_DEFAULT;
	c->server.max_udp = 4096;
	c->server.max_buffer_memory = (size_t)256 << 20;
	c->server.max_cover_per_source = LIMIT_COVER_SOURCE_DEFAULT;
	c->server.max_preauth = LIMIT_PREAUTH_DEFAULT;
	c->server.max_preauth_per_source = LIMIT_PREAUTH_SOURCE_DEFAULT;
	c->server.connect_timeout_ms = 10000;
	c->server.idle_timeout_ms = 300000;
	c->server.handshake_timeout_ms = 60000;	/* nginx's client_header_timeout */
	c->server.reuse = 100;
	c->server.reuse_age_ms = 120000;
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
	conf_unref(c);
}

struct conf *
conf_ref(const struct conf *c)
{
	/* The count is bookkeeping, not configuration: a holder with a
	 * const view may still keep the generation alive. */
	struct conf *m = (struct conf *)(uintptr_t)c;

	if (m != NULL)
		m->refs++;
	return m;
}

void
conf_unref(const struct conf *cc)
{
	struct conf	*c = (struct conf *)(uintptr_t)cc;
	size_t		 i;

	if (c == NULL || --c->refs > 0)
		return;
	free(c->path);
	for (i = 0; i < c->client.noutbounds; i++) {
		free(c->client.outbounds[i].server_host);
		free(c->client.outbounds[i].sni);
		free(c->client.outbounds[i].ca_file);
		free(c->client.outbounds[i].key_file);
		free(c->client.outbounds[i].members);
	}
	if (c->client.outbounds != NULL)
		sodium_memzero(c->client.outbounds,
		    c->client.noutbounds * sizeof(*c->client.outbounds));
	free(c->client.outbounds);
	free(c->client.route_exclude);
	rules_free(c->client.rules);
	conf_dns_free(c);
	free(c->pidfile);
	free(c->server.cert_file);
	free(c->server.cert_key_file);
	for (i = 0; c->server.users != NULL && i < c->server.nusers; i++) {
		conf_egress_unref(c->server.users[i].egress);
		free(c->server.users[i].key_file);
	}
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
	free(c->server.fallback_plain_host);
	sodium_memzero(c, sizeof(*c));
	free(c);
}

/* An unquoted "[" that opens what looks like an IPv6 address: YAML
 * reads it as the start of a list. */
static bool
line_has_bare_ipv6(const char *s, const char *e)
{
	const char	*p, *q, *b;
	bool		 colon;

	for (p = s; p < e; p++) {
		if (*p == '#' || *p == '"' || *p == '\'')
			return false;	/* comment or quoted: not ours */
		if (*p != '[')
			continue;
		colon = false;
		for (q = p + 1; q < e && (isxdigit((unsigned char)*q) ||
		    *q == ':' || *q == '.'); q++)
			colon |= *q == ':';
		if (!colon || q >= e || *q != ']')
			continue;
		/* It starts a value: after "key:", "- " or a flow "[" ",". */
		for (b = p; b > s && b[-1] == ' '; b--)
			;
		if (b == s || b[-1] == ':' || b[-1] == '-' || b[-1] == '[' ||
		    b[-1] == ',')
			return true;
	}
	return false;
}

/* A hint for the two mistakes libyaml words least helpfully. */
static const char *
syntax_hint(const yaml_parser_t *p, const char *buf, size_t len,
    size_t line)
{
	const char	*s = buf, *e, *end = buf + len, *w;
	size_t		 l;

	for (l = 0; l < line && s < end; s++)
		if (*s == '\n')
			l++;
	if ((e = memchr(s, '\n', (size_t)(end - s))) == NULL)
		e = end;
	for (w = s; w < e && (*w == ' ' || *w == '\t'); w++)
		if (*w == '\t')
			return "use spaces, not tabs, to indent";
	if (p->problem != NULL && strstr(p->problem, "tab") != NULL)
		return "use spaces, not tabs";
	if (line_has_bare_ipv6(s, e))
		return "quote IPv6 addresses: \"[::]:443\"";
	return NULL;
}

/* Reader errors carry a byte offset instead of a mark. */
static void
syntax_err(struct ctx *x, const yaml_parser_t *p, const char *buf, size_t len)
{
	yaml_mark_t	m = p->problem_mark;
	const char	*hint;
	size_t		i, n;

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
	hint = syntax_hint(p, buf, len, m.line);
	if (hint == NULL && p->context != NULL)
		hint = syntax_hint(p, buf, len, p->context_mark.line);
	if (hint != NULL && x->errlen > 0) {
		n = strlen(x->err);
		snprintf(x->err + n, x->errlen - n, " (%s)", hint);
	}
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

/* dir: where relative file names start (the file's), NULL for a buffer. */
static struct conf *
conf_load(const char *name, const char *dir, const char *buf, size_t len,
    char *err, size_t errlen, bool shared)
{
	yaml_parser_t	 parser;
	yaml_document_t	 doc, extra;
	yaml_node_t	*root;
	struct ctx	 x;
	struct conf	*c = NULL;
	bool		 have_doc = false;

	memset(&x, 0, sizeof(x));
	x.name = name != NULL ? name : "<config>";
	x.dir = dir;
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
	if ((root = conf_node_get(&x, 1, NULL)) == NULL ||
	    conf_map_walk(&x, root, &map_top, c) == -1) {
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
	return conf_load(name, NULL, buf, len, err, errlen, false);
}

const char *
conf_read_file(const char *path, char *buf, size_t size, size_t *len,
    bool *shared)
{
	const char	*why = NULL;
	struct stat	 st;
	ssize_t		 r;
	int		 fd;

	*len = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1)
		return strerror(errno);
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		why = "not a regular file";
		goto out;
	}
	*shared = (st.st_mode & (S_IRGRP | S_IROTH)) != 0;
	while (*len < size && (r = read(fd, buf + *len, size - *len)) != 0) {
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			why = strerror(errno);
			goto out;
		}
		*len += (size_t)r;
	}
out:
	close(fd);
	return why;
}

struct conf *
conf_load_file(const char *path, char *err, size_t errlen)
{
	struct conf	*c = NULL;
	const char	*why;
	char		*buf = NULL, *abs = NULL, *dir = NULL;
	size_t		 len = 0;
	bool		 shared = false;

	if (err == NULL)
		errlen = 0;
	else if (errlen > 0)
		err[0] = '\0';
	/* Messages name the file as the user did; the daemon keeps the
	 * absolute path, which still means the same file after a chdir. */
	if ((abs = conf_path_abs(path)) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if ((dir = conf_path_dir(abs)) == NULL ||
	    (buf = malloc(CONF_FILE_MAX + 1)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	if ((why = conf_read_file(path, buf, CONF_FILE_MAX + 1, &len,
	    &shared)) != NULL) {
		snprintf(err, errlen, "%s: %s", path, why);
		goto out;
	}
	if (len > CONF_FILE_MAX) {
		snprintf(err, errlen, "%s: larger than %d bytes", path,
		    CONF_FILE_MAX);
		goto out;
	}
	c = conf_load(path, dir, buf, len, err, errlen, shared);
	/* Kept so that SIGHUP reads the same file again. */
	if (c != NULL) {
		c->path = abs;
		abs = NULL;
	}
out:
	if (buf != NULL)
		sodium_memzero(buf, len);
	free(buf);
	free(dir);
	free(abs);
	return c;
}
