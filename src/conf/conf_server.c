/*
 * The server: section: listen addresses, certificate, users and trojan
 * passwords with their own egress lists and limits, the server-wide egress
 * lists, limits and timeouts, the resolver and the cover site (fallback).
 */
#include "config.h"

#include "conf/conf_int.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "core/limit.h"
#include "wire/proto_trojan.h"

#define CONF_MAX_USERS	10000

/* ---- listen ------------------------------------------------------------ */

static int
listen_item(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct conf	*c = arg;
	const char	*s = conf_scalar(x, n);
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
	return conf_list_walk(x, n, 1, CONF_MAX_LISTEN, listen_item, base);
}

/* ---- users and their egress lists ------------------------------------ */

static int check_user(struct ctx *, yaml_node_t *, void *);

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
		return conf_cidrs(x, n, &(*e)->allow, &(*e)->nallow);
	return conf_cidrs(x, n, &(*e)->deny, &(*e)->ndeny);
}

static int
key_user_egress(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	return egress_list(x, n, k, CONF_FIELD(base, k, struct conf_egress *));
}

static const struct conf_key keys_user[] = {
	{ "name", conf_key_word, offsetof(struct conf_user, name), 0,
	    CONF_NAME_MAX, NULL },
	{ "key", conf_key_key, offsetof(struct conf_user, key), 0, 0, NULL },
	{ "key_file", conf_key_file, offsetof(struct conf_user, key),
	    offsetof(struct conf_user, key_file), 0, NULL },
	{ "max_conns", conf_key_uint, offsetof(struct conf_user, max_conns), 1,
	    1000000, NULL },
	{ "max_udp", conf_key_uint, offsetof(struct conf_user, max_udp), 1,
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

	if (conf_require(x, map, "name") == -1 || conf_check_key(x, map) == -1)
		return -1;
	for (j = 0; &users[j] < u; j++) {
		if (strcmp(users[j].name, u->name) == 0) {
			conf_path_push(x, "name");
			return conf_err(x, map, "duplicate user name '%s'",
			    u->name);
		}
		if (sodium_memcmp(users[j].key, u->key, CONF_KEY_LEN) == 0) {
			conf_path_push(x, "key");
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

	return conf_map_walk(x, n, &map_user, &c->server.users[i]);
}

static int
key_users(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf	*c = base;

	(void)k;
	if (n->type != YAML_SEQUENCE_NODE)
		return conf_err(x, n, "expected a list of users, found %s",
		    conf_node_kind(n));
	if (conf_list_count(n) == 0)
		return conf_err(x, n, "at least one user is required");
	if (conf_list_count(n) > CONF_MAX_USERS)
		return conf_err(x, n, "too many users (max %d)", CONF_MAX_USERS);
	/* Sized once: growing would leave copies of keys behind. */
	if ((c->server.users = calloc(conf_list_count(n),
	    sizeof(*c->server.users))) == NULL)
		return conf_err(x, n, "out of memory");
	c->server.nusers = conf_list_count(n);
	return conf_list_walk(x, n, 1, CONF_MAX_USERS, user_item, base);
}

/* ---- trojan passwords ------------------------------------------------- */

/* One trojan_passwords entry: a password, or a mapping with one and the
 * password's own egress lists. */
struct trojan_entry {
	struct conf	*c;
	size_t		 i;
};

/* hashed: s is the password's SHA-224 already (sha224:). */
static int
trojan_password(struct ctx *x, yaml_node_t *n, struct conf *c, size_t i,
    bool hashed)
{
	const char	*s = conf_scalar(x, n);
	size_t		 j;

	if (s == NULL || conf_redacted(x, n, s))
		return -1;
	if (hashed) {
		if (conf_sha224(x, n, s, c->server.trojan_hex[i]) == -1)
			return -1;
	} else if (proto_trojan_hash(s, strlen(s),
	    c->server.trojan_hex[i]) == -1)
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

	if (conf_seen(x, k->min ? "password" : "sha224"))
		return conf_err(x, n, "password and sha224 are mutually "
		    "exclusive");
	return trojan_password(x, n, t->c, t->i, k->min != 0);
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

	if (conf_number(x, n, k, &v) == -1)
		return -1;
	*(k->off == 0 ? &l->max_conns : &l->max_udp) = (unsigned)v;
	return 0;
}

static int
check_trojan(struct ctx *x, yaml_node_t *map, void *base)
{
	(void)base;
	if (conf_seen(x, "sha224"))
		return 0;
	return conf_require(x, map, "password");
}

/* min 1: the password's SHA-224 in hex rather than the password. */
static const struct conf_key keys_trojan[] = {
	{ "password", key_trojan_password, 0, 0, 0, NULL },
	{ "sha224", key_trojan_password, 0, 1, 0, NULL },
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
		return conf_map_walk(x, n, &map_trojan, &t);
	return trojan_password(x, n, t.c, i, false);
}

static int
key_trojan(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf	*c = base;

	(void)k;
	if (conf_list_count(n) > 0 && conf_list_count(n) <= CONF_MAX_TROJAN &&
	    ((c->server.trojan_hex = calloc(conf_list_count(n),
	    sizeof(*c->server.trojan_hex))) == NULL ||
	    (c->server.trojan_egress = calloc(conf_list_count(n),
	    sizeof(*c->server.trojan_egress))) == NULL ||
	    (c->server.trojan_limits = calloc(conf_list_count(n),
	    sizeof(*c->server.trojan_limits))) == NULL))
		return conf_err(x, n, "out of memory");
	return conf_list_walk(x, n, 1, CONF_MAX_TROJAN, trojan_item, base);
}

/* ---- egress, fallback, the section ----------------------------------- */

static int
key_allow(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	(void)k;
	(void)base;
	return conf_cidrs(x, n, &x->c->server.egress_allow,
	    &x->c->server.negress_allow);
}

static int
key_deny(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	(void)k;
	(void)base;
	return conf_cidrs(x, n, &x->c->server.egress_deny,
	    &x->c->server.negress_deny);
}

static int
key_fallback(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	(void)k;
	(void)base;
	return conf_hostport(x, n, &x->c->server.fallback_host,
	    &x->c->server.fallback_port);
}

static int
key_fallback_plain(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	(void)k;
	(void)base;
	return conf_hostport(x, n, &x->c->server.fallback_plain_host,
	    &x->c->server.fallback_plain_port);
}

static int
check_server(struct ctx *x, yaml_node_t *map, void *base)
{
	(void)base;
	if (conf_require(x, map, "listen") == -1 ||
	    conf_require(x, map, "cert") == -1 ||
	    conf_require(x, map, "cert_key") == -1 ||
	    conf_require(x, map, "users") == -1)
		return -1;
	/* The cover's budget follows the main one unless set. */
	if (!conf_seen(x, "cover_buffer_memory"))
		x->c->server.cover_buffer_memory =
		    limit_cover_memory_default(x->c->server.max_buffer_memory);
	if (x->c->server.fallback_tls && !conf_seen(x, "fallback")) {
		conf_path_push(x, "fallback_tls");
		return conf_err(x, map, "needs fallback (the cover site)");
	}
	if (x->c->server.fallback_plain_host != NULL &&
	    !conf_seen(x, "fallback")) {
		conf_path_push(x, "fallback_plain");
		return conf_err(x, map, "needs fallback (the cover site)");
	}
	return 0;
}

static const struct conf_key keys_egress[] = {
	{ "allow", key_allow, 0, 0, 0, NULL },
	{ "deny", key_deny, 0, 0, 0, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};
static const struct conf_map map_egress = { keys_egress, NULL };

static const struct conf_key keys_resolver[] = {
	{ "workers", conf_key_uint, C(server.resolve_workers), 1, 64, NULL },
	{ "queue", conf_key_uint, C(server.resolve_queue), 1, 65536, NULL },
	{ "timeout", conf_key_ms, C(server.resolve_timeout_ms), 100, 600000,
	    NULL },
	{ "cache", conf_key_uint, C(server.resolve_cache), 0, 1000000, NULL },
	{ "cache_ttl", conf_key_ms, C(server.resolve_ttl_ms), 0, CONF_MS_MAX,
	    NULL },
	{ "negative_ttl", conf_key_ms, C(server.resolve_negative_ttl_ms), 0,
	    CONF_MS_MAX, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};
static const struct conf_map map_resolver = { keys_resolver, NULL };

static const struct conf_key keys_server[] = {
	{ "listen", key_listen, 0, 0, 0, NULL },
	{ "cert", conf_key_filename, C(server.cert_file), 0, 0, NULL },
	{ "cert_key", conf_key_filename, C(server.cert_key_file), 0, 0, NULL },
	{ "users", key_users, 0, 0, 0, NULL },
	{ "trojan_passwords", key_trojan, 0, 0, 0, NULL },
	{ "congestion", conf_key_word, C(server.congestion), 0, CONF_CC_MAX,
	    NULL },
	{ "mark", conf_key_u32, C(server.mark), 0, UINT32_MAX, NULL },
	{ "max_conns", conf_key_uint, C(server.max_conns), 1, 1000000, NULL },
	{ "max_conns_per_source", conf_key_uint,
	    C(server.max_conns_per_source), 0, 1000000, NULL },
	{ "max_conns_per_user", conf_key_uint, C(server.max_conns_per_user), 0,
	    1000000, NULL },
	{ "max_udp", conf_key_uint, C(server.max_udp), 1, 1000000, NULL },
	{ "max_udp_per_user", conf_key_uint, C(server.max_udp_per_user), 0,
	    1000000, NULL },
	{ "max_buffer_memory", conf_key_size, C(server.max_buffer_memory),
	    CONF_SIZE_MIN, CONF_SIZE_MAX, NULL },
	{ "cover_buffer_memory", conf_key_size, C(server.cover_buffer_memory),
	    CONF_SIZE_MIN, CONF_SIZE_MAX, NULL },
	{ "max_cover_per_source", conf_key_uint,
	    C(server.max_cover_per_source), 0, 1000000, NULL },
	{ "max_preauth", conf_key_uint, C(server.max_preauth), 1, 1000000,
	    NULL },
	{ "max_preauth_per_source", conf_key_uint,
	    C(server.max_preauth_per_source), 0, 1000000, NULL },
	{ "padding", conf_key_uint, C(server.padding), 0, 64, NULL },
	{ "workers", conf_key_uint, C(server.workers), 0, 64, NULL },
	{ "connect_timeout", conf_key_ms, C(server.connect_timeout_ms), 100,
	    600000, NULL },
	{ "idle_timeout", conf_key_ms, C(server.idle_timeout_ms), 1000,
	    CONF_MS_MAX, NULL },
	{ "handshake_timeout", conf_key_ms, C(server.handshake_timeout_ms), 100,
	    600000, NULL },
	{ "reuse", conf_key_uint, C(server.reuse), 1, 100000, NULL },
	{ "reuse_age", conf_key_ms, C(server.reuse_age_ms), 1000, 3600000,
	    NULL },
	{ "time_window", conf_key_secs, C(server.time_window_s), 1000, 3600000,
	    NULL },
	{ "accept_v1", conf_key_bool, C(server.accept_v1), 0, 0, NULL },
	{ "egress", conf_key_map, 0, 0, 0, &map_egress },
	{ "resolver", conf_key_map, 0, 0, 0, &map_resolver },
	{ "fallback", key_fallback, 0, 0, 0, NULL },
	{ "fallback_tls", conf_key_bool, C(server.fallback_tls), 0, 0, NULL },
	{ "fallback_plain", key_fallback_plain, 0, 0, 0, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};
const struct conf_map conf_map_server = { keys_server, check_server };
