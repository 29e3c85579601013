/*
 * The client: section: where the outer streams go and how -- the
 * outbounds, each a protocol with its server, TLS settings and
 * credentials -- the client's limits and timeouts, DNS and routing.
 * check_outbound decides what each protocol needs and rejects what it
 * cannot use.
 *
 * Two forms: `outbounds:`, a list of named entries (keys_outbound), or the
 * single form with those keys right under client:, which is one outbound
 * named "default" (each such key is handed to keys_outbound's handler by
 * key_legacy).  A file uses one form or the other.
 */
#include "config.h"

#include "conf/conf_int.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "wire/proto_trojan.h"

_Static_assert(CONF_TROJAN_HEX_LEN == PROTO_TROJAN_HEX_LEN, "trojan hash size");

#define O(f)	offsetof(struct conf_outbound, f)

static int
key_server_addr(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf_outbound	*ob = base;

	(void)k;
	return conf_hostport(x, n, &ob->server_host, &ob->server_port);
}

/*
 * SHA-256 of the server's SubjectPublicKeyInfo, base64 -- the form curl's
 * --pinnedpubkey takes, whose "sha256//" prefix is accepted too.
 */
static int
key_pin(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	struct conf_outbound	*ob = base;
	const char	*s = conf_scalar(x, n), *end = NULL;
	uint8_t		 pin[32];
	size_t		 binlen = 0;

	(void)k;
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
	memcpy(ob->pin_sha256, pin, sizeof(pin));
	ob->has_pin = true;
	return 0;
}

static int
key_sni(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	const char	*s = conf_scalar(x, n);

	struct in6_addr	 in6;

	if (s == NULL)
		return -1;
	/* An address is accepted (it is what an address-only server.
	 * defaults to); it is then a name to verify, not one to send. */
	if (!conf_host_valid(s) && inet_pton(AF_INET6, s, &in6) != 1)
		return conf_err(x, n, "'%s' is not a host name", conf_vis(x, s));
	return conf_key_path(x, n, k, base);
}

static const struct conf_word conf_protos[] = {
	{ "tunsplit", CONF_PROTO_TUNSPLIT }, { "trojan", CONF_PROTO_TROJAN },
	{ "socks5", CONF_PROTO_SOCKS5 }, { "direct", CONF_PROTO_DIRECT },
	{ "block", CONF_PROTO_BLOCK }, { NULL, 0 }
};

const char *
conf_proto_name(enum conf_proto p)
{
	size_t	i;

	for (i = 0; conf_protos[i].word != NULL; i++)
		if (conf_protos[i].value == (int)p)
			return conf_protos[i].word;
	return "?";
}

static int
key_protocol(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	int	v;

	if (conf_choice(x, n, conf_protos, &v) == -1)
		return -1;
	*CONF_FIELD(base, k, enum conf_proto) = (enum conf_proto)v;
	return 0;
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
	const char	*s = conf_scalar(x, n);
	struct conf_outbound *ob = base;

	(void)k;
	if (s == NULL || conf_redacted(x, n, s))
		return -1;
	if (conf_seen(x, "password_sha224"))
		return conf_err(x, n, "password and password_sha224 are "
		    "mutually exclusive");
	if (proto_trojan_hash(s, strlen(s), ob->trojan_hex) == -1)
		return conf_err(x, n, "cannot hash the password (SHA-224)");
	if (strlen(s) <= CONF_SOCKS_MAX)
		memcpy(ob->password, s, strlen(s) + 1);
	return 0;
}

/* protocol: trojan sends only the password's hash: it may be given as
 * that (what check --secrets prints). */
static int
key_password_sha224(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = conf_scalar(x, n);
	struct conf_outbound *ob = base;

	(void)k;
	if (s == NULL)
		return -1;
	if (conf_seen(x, "password"))
		return conf_err(x, n, "password and password_sha224 are "
		    "mutually exclusive");
	return conf_sha224(x, n, s, ob->trojan_hex);
}

static int
key_username(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = conf_scalar(x, n);

	if (s == NULL)
		return -1;
	if (*s == '\0' || strlen(s) > CONF_SOCKS_MAX)
		return conf_err(x, n, "must be 1..%d bytes (RFC 1929)",
		    CONF_SOCKS_MAX);
	memcpy(CONF_FIELD(base, k, char), s, strlen(s) + 1);
	return 0;
}

/* Rejects a key the protocol has no use for. */
static int
unused_key(struct ctx *x, yaml_node_t *map, const char *key, const char *why)
{
	if (!conf_seen(x, key))
		return 0;
	conf_path_push(x, key);
	return conf_err(x, map, "%s", why);
}

static int
check_outbound_socks5(struct ctx *x, yaml_node_t *map,
    const struct conf_outbound *ob)
{
	if (conf_seen(x, "username") != conf_seen(x, "password")) {
		conf_path_push(x, conf_seen(x, "username") ? "password" :
		    "username");
		return conf_err(x, map, "username and password go together "
		    "(RFC 1929)");
	}
	if (conf_seen(x, "password") && ob->password[0] == '\0') {
		conf_path_push(x, "password");
		return conf_err(x, map, "must be 1..%d bytes (RFC 1929)",
		    CONF_SOCKS_MAX);
	}
	return 0;
}

/* Per protocol: which credentials it needs, which keys it cannot use.
 * map is the mapping that holds the outbound's keys (an entry of
 * outbounds:, or client: itself in the single form). */
static int
check_outbound_proto(struct ctx *x, yaml_node_t *map,
    const struct conf_outbound *ob)
{
	const char	*name = conf_proto_name(ob->protocol);
	char		 why[64];
	bool		 tls = ob->protocol <= CONF_PROTO_TROJAN;

	snprintf(why, sizeof(why), "not used with protocol: %s", name);
	if (ob->protocol != CONF_PROTO_SOCKS5 &&
	    unused_key(x, map, "username", "needs protocol: socks5") == -1)
		return -1;
	if (ob->protocol != CONF_PROTO_TROJAN &&
	    unused_key(x, map, "password_sha224", "needs protocol: trojan") ==
	    -1)
		return -1;
	if (!tls && (unused_key(x, map, "key", why) == -1 ||
	    unused_key(x, map, "key_file", why) == -1))
		return -1;
	switch (ob->protocol) {
	case CONF_PROTO_TUNSPLIT:
		if (conf_check_key(x, map) == -1)
			return -1;
		return unused_key(x, map, "password",
		    "needs protocol: trojan or socks5");
	case CONF_PROTO_TROJAN:
		/* trojan flows and UDP associations authenticate with the
		 * password; a key is not used (ICMP echo, which only the
		 * native protocol carries, is dropped). */
		if (!conf_seen(x, "password_sha224") &&
		    conf_require(x, map, "password") == -1)
			return -1;
		return 0;
	case CONF_PROTO_SOCKS5:
		return check_outbound_socks5(x, map, ob);
	case CONF_PROTO_DIRECT:
	case CONF_PROTO_BLOCK:
		if (unused_key(x, map, "server", why) == -1 ||
		    unused_key(x, map, "password", why) == -1)
			return -1;
		return 0;
	}
	return 0;
}

/* One outbound's own keys, whichever form held them. */
static int
check_outbound(struct ctx *x, yaml_node_t *map, struct conf_outbound *ob)
{
	if (ob->protocol != CONF_PROTO_DIRECT &&
	    ob->protocol != CONF_PROTO_BLOCK &&
	    conf_require(x, map, "server") == -1)
		return -1;
	if (check_outbound_proto(x, map, ob) == -1)
		return -1;
	/* Keep only the form of the password the protocol sends. */
	if (ob->protocol != CONF_PROTO_SOCKS5)
		sodium_memzero(ob->password, sizeof(ob->password));
	if (ob->protocol != CONF_PROTO_TROJAN)
		sodium_memzero(ob->trojan_hex, sizeof(ob->trojan_hex));
	if (ob->sni == NULL && ob->server_host != NULL &&
	    (ob->sni = strdup(ob->server_host)) == NULL)
		return conf_err(x, map, "out of memory");
	return 0;
}

static void
outbound_defaults(struct conf_outbound *ob, const char *name)
{
	memset(ob, 0, sizeof(*ob));
	snprintf(ob->name, sizeof(ob->name), "%s", name);
	ob->protocol = CONF_PROTO_TUNSPLIT;
	ob->header_version = 2;
	ob->padding = 8;
	ob->pool = 8;
	ob->pool_min = 1;
	ob->pool_idle_ms = 60000;
	ob->pool_lifetime_ms = 8000;
	ob->reuse = 100;
	ob->reuse_age_ms = 60000;
	/* congestion "" and connect_timeout 0: the client's. */
}

/* ---- outbounds: the list form ----------------------------------------- */

static const struct conf_key keys_outbound[];

/* A group has members and nothing of a protocol's. */
static int
check_group(struct ctx *x, yaml_node_t *map, struct conf_outbound *ob)
{
	size_t	i;

	if (conf_require(x, map, "members") == -1)
		return -1;
	for (i = 0; keys_outbound[i].name != NULL; i++) {
		if (strcmp(keys_outbound[i].name, "name") == 0 ||
		    strcmp(keys_outbound[i].name, "type") == 0 ||
		    strcmp(keys_outbound[i].name, "members") == 0)
			continue;
		if (strcmp(keys_outbound[i].name, "strategy") == 0) {
			if (ob->group != CONF_GROUP_BALANCE &&
			    unused_key(x, map, "strategy", "needs type: "
			    "balance") == -1)
				return -1;
			continue;
		}
		if (unused_key(x, map, keys_outbound[i].name, "not used by a "
		    "group (type:): its members have their own") == -1)
			return -1;
	}
	ob->protocol = CONF_PROTO_BLOCK;	/* all members down: refused */
	ob->pool = 0;
	return 0;
}

static int
check_outbound_entry(struct ctx *x, yaml_node_t *map, void *base)
{
	struct conf_outbound	*ob = base;

	if (conf_require(x, map, "name") == -1)
		return -1;
	if (ob->group != CONF_GROUP_NONE)
		return check_group(x, map, ob);
	if (conf_seen(x, "members")) {
		conf_path_push(x, "members");
		return conf_err(x, map, "members need a group type (type: "
		    "failover, select, balance or fastest)");
	}
	if (unused_key(x, map, "strategy", "needs type: balance") == -1)
		return -1;
	return check_outbound(x, map, base);
}

static const struct conf_word conf_groups[] = {
	{ "failover", CONF_GROUP_FAILOVER }, { "select", CONF_GROUP_SELECT },
	{ "balance", CONF_GROUP_BALANCE }, { "fastest", CONF_GROUP_FASTEST },
	{ NULL, 0 }
};

/* balance's strategy: destination (hash, default) or flow. */
static int
key_strategy(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	static const struct conf_word	w[] = {
		{ "destination", 0 }, { "flow", 1 }, { NULL, 0 }
	};

	return conf_flag(x, n, k, base, w);
}

const char *
conf_group_name(enum conf_group g)
{
	size_t	i;

	for (i = 0; conf_groups[i].word != NULL; i++)
		if (conf_groups[i].value == (int)g)
			return conf_groups[i].word;
	return "";
}

static int
key_ob_type(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	int	v;

	(void)k;
	if (conf_choice(x, n, conf_groups, &v) == -1)
		return -1;
	((struct conf_outbound *)base)->group = (enum conf_group)v;
	return 0;
}

/* A member: its name, or {name: NAME, weight: 1..100}. */
struct member_entry {
	unsigned	 weight;
};

static int
member_name(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	(void)k;
	(void)base;
	return conf_scalar(x, n) == NULL ? -1 : 0;
}

static int
check_member(struct ctx *x, yaml_node_t *map, void *base)
{
	(void)base;
	return conf_require(x, map, "name");
}

static const struct conf_key keys_member[] = {
	{ "name", member_name, 0, 0, 0, NULL },
	{ "weight", conf_key_uint, offsetof(struct member_entry, weight),
	    CONF_WEIGHT_MIN, CONF_WEIGHT_MAX, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};
static const struct conf_map map_member = { keys_member, check_member };

static int
member_item(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct member_entry	 e;

	(void)i;
	(void)arg;
	if (n->type == YAML_MAPPING_NODE)
		return conf_map_walk(x, n, &map_member, &e);
	return conf_scalar(x, n) == NULL ? -1 : 0;
}

/* A member item's name and weight node (NULL: 1); walked already. */
static const char *
member_parts(struct ctx *x, yaml_node_t *item, yaml_node_t **weight)
{
	yaml_node_pair_t	*p;
	yaml_node_t		*k, *v;
	const char		*name = NULL;

	*weight = NULL;
	if (item->type == YAML_SCALAR_NODE)
		return (const char *)item->data.scalar.value;
	for (p = item->data.mapping.pairs.start;
	    p < item->data.mapping.pairs.top; p++) {
		k = yaml_document_get_node(x->doc, p->key);
		v = yaml_document_get_node(x->doc, p->value);
		if (strcmp((const char *)k->data.scalar.value, "name") == 0)
			name = (const char *)v->data.scalar.value;
		else
			*weight = v;
	}
	return name;
}

/* Names, resolved once every outbound is known (group_resolve). */
static int
key_members(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf_outbound	*ob = base;

	(void)k;
	if (n->type != YAML_SEQUENCE_NODE)
		return conf_err(x, n, "expected a list of outbound names, "
		    "found %s", conf_node_kind(n));
	if (conf_list_count(n) == 0)
		return conf_err(x, n, "a group needs at least one member");
	if (conf_list_walk(x, n, 1, CONF_MAX_OUTBOUNDS, member_item,
	    NULL) == -1)
		return -1;
	x->members[ob - x->c->client.outbounds] = n;
	return 0;
}

static int
key_ob_name(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf_outbound	*ob = base, *v = x->c->client.outbounds;
	const char		*s = conf_scalar(x, n);

	(void)k;
	if (s == NULL)
		return -1;
	if (strlen(s) > CONF_OB_NAME_MAX ||
	    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(s))
		return conf_err(x, n, "'%s' is not a name of 1..%d characters "
		    "a-z, 0-9, '_' or '-'", conf_vis(x, s), CONF_OB_NAME_MAX);
	for (; v < ob; v++)
		if (strcmp(v->name, s) == 0)
			return conf_err(x, n, "'%s': an outbound of that name "
			    "is listed already", s);
	memcpy(ob->name, s, strlen(s) + 1);
	return 0;
}

static int
key_fingerprint(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	static const struct conf_word	w[] = {
		{ "curl", 0 }, { "browser", 1 }, { NULL, 0 }
	};

	return conf_flag(x, n, k, base, w);
}

/* pool: N (a ceiling of N, a floor of 1, or no pool for 0), or
 * pool: {min: A, max: B}. */
#define POOL_MAX	64
#define POOL_MIN_UNSET	(POOL_MAX + 1)

static int
check_pool(struct ctx *x, yaml_node_t *map, void *base)
{
	struct conf_outbound	*ob = base;

	if (ob->pool_min == POOL_MIN_UNSET)
		ob->pool_min = ob->pool > 0 ? 1 : 0;
	else if (ob->pool_min > ob->pool)
		return conf_err(x, map, "min %u is above max %u", ob->pool_min,
		    ob->pool);
	return 0;
}

static const struct conf_key keys_pool[] = {
	{ "min", conf_key_uint, O(pool_min), 0, POOL_MAX, NULL },
	{ "max", conf_key_uint, O(pool), 0, POOL_MAX, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};
static const struct conf_map map_pool = { keys_pool, check_pool };

static int
key_pool(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf_outbound	*ob = base;

	if (n->type == YAML_MAPPING_NODE) {
		ob->pool_min = POOL_MIN_UNSET;
		return conf_map_walk(x, n, &map_pool, base);
	}
	if (conf_key_uint(x, n, k, base) == -1)
		return -1;
	ob->pool_min = ob->pool > 0 ? 1 : 0;
	return 0;
}

static const struct conf_key keys_outbound[] = {
	{ "name", key_ob_name, 0, 0, 0, NULL },
	{ "type", key_ob_type, 0, 0, 0, NULL },
	{ "members", key_members, 0, 0, 0, NULL },
	{ "strategy", key_strategy, O(per_flow), 0, 0, NULL },
	{ "protocol", key_protocol, O(protocol), 0, 0, NULL },
	{ "server", key_server_addr, 0, 0, 0, NULL },
	{ "sni", key_sni, O(sni), 0, 0, NULL },
	{ "ca", conf_key_filename, O(ca_file), 0, 0, NULL },
	{ "insecure", conf_key_bool, O(insecure), 0, 0, NULL },
	{ "pin_sha256", key_pin, 0, 0, 0, NULL },
	{ "fingerprint", key_fingerprint, O(fp_browser), 0, 0, NULL },
	{ "key", conf_key_key, O(key), 0, 0, NULL },
	{ "key_file", conf_key_file, O(key), O(key_file), 0, NULL },
	{ "header_version", conf_key_uint, O(header_version), 1, 2, NULL },
	{ "username", key_username, O(username), 0, 0, NULL },
	{ "password", key_password, 0, 0, 0, NULL },
	{ "password_sha224", key_password_sha224, 0, 0, 0, NULL },
	{ "padding", conf_key_uint, O(padding), 0, 64, NULL },
	{ "pool", key_pool, O(pool), 0, POOL_MAX, NULL },
	{ "pool_idle", conf_key_ms, O(pool_idle_ms), 0, CONF_MS_MAX, NULL },
	{ "pool_lifetime", conf_key_ms, O(pool_lifetime_ms), 1000, 600000,
	    NULL },
	{ "reuse", conf_key_uint, O(reuse), 1, 100000, NULL },
	{ "reuse_age", conf_key_ms, O(reuse_age_ms), 1000, 3600000, NULL },
	{ "congestion", conf_key_word, O(congestion), 0, CONF_CC_MAX, NULL },
	{ "connect_timeout", conf_key_ms, O(connect_timeout_ms), 100, 600000,
	    NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};
static const struct conf_map map_outbound = { keys_outbound,
	check_outbound_entry };

/* The keys of one outbound that the single form puts under client:
 * (congestion and connect_timeout are the client's defaults there). */
static const char *const legacy_keys[] = {
	"server", "sni", "ca", "insecure", "pin_sha256", "fingerprint", "key",
	"key_file", "header_version",
	"protocol", "username", "password", "password_sha224", "padding",
	"pool", "pool_idle", "pool_lifetime", "reuse", "reuse_age", NULL
};

static int
outbound_item(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct conf	*c = x->c;

	(void)arg;
	outbound_defaults(&c->client.outbounds[i], "");
	c->client.noutbounds = i + 1;	/* conf_unref frees what it holds */
	return conf_map_walk(x, n, &map_outbound, &c->client.outbounds[i]);
}

static int
key_outbounds(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf	*c = base;
	size_t		 i;

	(void)k;
	for (i = 0; legacy_keys[i] != NULL; i++)
		if (conf_seen(x, legacy_keys[i]))
			return conf_err(x, x->knode, "cannot be mixed with "
			    "the single form (client.%s): move that key into "
			    "an outbound",
			    legacy_keys[i]);
	if (n->type != YAML_SEQUENCE_NODE)
		return conf_err(x, n, "expected a list of outbounds, found %s",
		    conf_node_kind(n));
	if (conf_list_count(n) > 0 &&
	    conf_list_count(n) <= CONF_MAX_OUTBOUNDS &&
	    (c->client.outbounds = calloc(conf_list_count(n),
	    sizeof(*c->client.outbounds))) == NULL)
		return conf_err(x, n, "out of memory");
	return conf_list_walk(x, n, 1, CONF_MAX_OUTBOUNDS, outbound_item, NULL);
}

/* The single form: the key goes to the outbound "default". */
static int
key_legacy(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf	*c = base;
	size_t		 i;

	if (conf_seen(x, "outbounds"))
		return conf_err(x, x->knode, "cannot be mixed with "
		    "client.outbounds: move it into an outbound");
	if (c->client.outbounds == NULL) {
		if ((c->client.outbounds = calloc(1,
		    sizeof(*c->client.outbounds))) == NULL)
			return conf_err(x, n, "out of memory");
		outbound_defaults(c->client.outbounds, "default");
		c->client.noutbounds = 1;
	}
	for (i = 0; keys_outbound[i].name != NULL; i++)
		if (strcmp(keys_outbound[i].name, k->name) == 0)
			return keys_outbound[i].fn(x, n, &keys_outbound[i],
			    c->client.outbounds);
	return conf_err(x, n, "internal error: no such outbound key");
}

static int
key_final(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	(void)k;
	(void)base;
	if (conf_scalar(x, n) == NULL)
		return -1;
	x->final_node = n;	/* resolved once the outbounds are known */
	return 0;
}

int
conf_outbound_index(const struct conf *c, const char *name)
{
	size_t	i;

	for (i = 0; i < c->client.noutbounds; i++)
		if (strcmp(c->client.outbounds[i].name, name) == 0)
			return (int)i;
	return -1;
}

const struct conf_outbound *
conf_final(const struct conf *c)
{
	return &c->client.outbounds[c->client.final];
}

/* Whether following members from i comes back to a group on the way
 * (state: 0 unseen, 1 on the path, 2 done). */
static bool
group_cycle(const struct conf *c, size_t i, uint8_t *state)
{
	const struct conf_outbound	*ob = &c->client.outbounds[i];
	size_t				 m;

	if (state[i] == 2)
		return false;
	if (state[i] == 1)
		return true;
	state[i] = 1;
	for (m = 0; m < ob->nmembers; m++)
		if (group_cycle(c, ob->members[m], state))
			return true;
	state[i] = 2;
	return false;
}

/* The groups' member names to indexes; unknown, repeated and circular
 * members are errors. */
static int
group_resolve(struct ctx *x, struct conf *c)
{
	struct conf_outbound	*ob;
	yaml_node_t		*n, *item, *w;
	yaml_node_item_t	*it;
	uint8_t			 state[CONF_MAX_OUTBOUNDS];
	const char		*name;
	unsigned long long	 wv;
	size_t			 i, m;
	int			 j;

	for (i = 0; i < c->client.noutbounds; i++) {
		ob = &c->client.outbounds[i];
		if (ob->group == CONF_GROUP_NONE || (n = x->members[i]) == NULL)
			continue;
		if ((ob->members = calloc(conf_list_count(n),
		    sizeof(*ob->members))) == NULL)
			return conf_err(x, n, "out of memory");
		for (it = n->data.sequence.items.start;
		    it < n->data.sequence.items.top; it++) {
			/* Walked once already (key_members): not again. */
			item = yaml_document_get_node(x->doc, *it);
			name = member_parts(x, item, &w);
			if (w != NULL && ob->group != CONF_GROUP_BALANCE)
				return conf_err(x, w, "weight: only a balance "
				    "group weighs its members");
			ob->weights[ob->nmembers] = 1;
			if (w != NULL && conf_parse_u64((const char *)
			    w->data.scalar.value, &wv) == 0)
				ob->weights[ob->nmembers] = (uint8_t)wv;
			j = conf_outbound_index(c, name);
			if (j < 0)
				return conf_err(x, item, "'%s': no outbound of "
				    "that name", conf_vis(x, name));
			if ((size_t)j == i)
				return conf_err(x, item, "'%s': a group cannot "
				    "be its own member", ob->name);
			for (m = 0; m < ob->nmembers; m++)
				if (ob->members[m] == (size_t)j)
					return conf_err(x, item, "'%s': listed "
					    "twice", c->client.outbounds[j].name);
			ob->members[ob->nmembers++] = (size_t)j;
		}
	}
	for (i = 0; i < c->client.noutbounds; i++) {
		memset(state, 0, sizeof(state));
		if (group_cycle(c, i, state))
			return conf_err(x, x->members[i], "group '%s': its "
			    "members lead back to it (a cycle)",
			    c->client.outbounds[i].name);
	}
	return 0;
}

/* What the outbounds need of the client's own keys. */
static int
check_client_outbounds(struct ctx *x, yaml_node_t *map, struct conf *c)
{
	struct conf_outbound	*ob;
	const char		*s;
	size_t			 old;
	int			 i;

	old = conf_path_push(x, "outbounds");
	if (group_resolve(x, c) == -1)
		return -1;
	conf_path_pop(x, old);
	for (ob = c->client.outbounds;
	    ob < c->client.outbounds + c->client.noutbounds; ob++) {
		if (ob->congestion[0] == '\0')
			memcpy(ob->congestion, c->client.congestion,
			    sizeof(ob->congestion));
		if (ob->connect_timeout_ms == 0)
			ob->connect_timeout_ms = c->client.connect_timeout_ms;
		/* Without a mark the direct sockets would be routed back
		 * into the TUN they come from. */
		if (ob->protocol == CONF_PROTO_DIRECT && c->client.mark == 0) {
			conf_path_push(x, "mark");
			return conf_err(x, map, "protocol: direct needs a mark "
			    "(e.g. mark: 0x7353) so that its sockets bypass "
			    "the TUN");
		}
		if (ob->protocol == CONF_PROTO_TROJAN && c->client.faithful) {
			conf_path_push(x, "connect_mode");
			return conf_err(x, map, "faithful needs the connect "
			    "status, which protocol trojan does not have");
		}
	}
	/* final: named, else "default" if there is one, else the first. */
	c->client.final = 0;
	if (x->final_node != NULL) {
		s = (const char *)x->final_node->data.scalar.value;
		if ((i = conf_outbound_index(c, s)) < 0) {
			conf_path_push(x, "final");
			return conf_err(x, x->final_node, "'%s': no "
			    "outbound of that name", conf_vis(x, s));
		}
		c->client.final = (size_t)i;
	} else if ((i = conf_outbound_index(c, "default")) >= 0)
		c->client.final = (size_t)i;
	return 0;
}

static int
check_client(struct ctx *x, yaml_node_t *map, void *base)
{
	struct conf	*c = base;

	/* The single form, or none at all: one outbound, "default". */
	if (!conf_seen(x, "outbounds")) {
		if (c->client.outbounds == NULL) {
			if ((c->client.outbounds = calloc(1,
			    sizeof(*c->client.outbounds))) == NULL)
				return conf_err(x, map, "out of memory");
			outbound_defaults(c->client.outbounds, "default");
			c->client.noutbounds = 1;
		}
		if (check_outbound(x, map, c->client.outbounds) == -1)
			return -1;
	}
	if (check_client_outbounds(x, map, c) == -1)
		return -1;
	/* Without a mark the outer connections would be routed into the
	 * TUN they come from. */
	if (c->client.route_auto && c->client.mark == 0) {
		conf_path_push(x, "route");
		return conf_err(x, map, "route: auto needs a mark (e.g. mark: "
		    "0x7353)");
	}
	return conf_rules_check(x, map, c);
}

static int
key_route(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	static const struct conf_word	w[] = {
		{ "auto", 1 }, { "off", 0 }, { NULL, 0 }
	};

	return conf_flag(x, n, k, base, w);
}

static int
key_ipv6(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	static const struct conf_word	w[] = {
		{ "block", 0 }, { "bypass", 1 }, { NULL, 0 }
	};

	return conf_flag(x, n, k, base, w);
}

static int
key_connect_mode(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	static const struct conf_word	w[] = {
		{ "fast", 0 }, { "faithful", 1 }, { NULL, 0 }
	};

	return conf_flag(x, n, k, base, w);
}

static int
key_sniff(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	static const struct conf_word	w[] = {
		{ "auto", CONF_SNIFF_AUTO }, { "always", CONF_SNIFF_ALWAYS },
		{ "never", CONF_SNIFF_NEVER }, { NULL, 0 }
	};

	return conf_choice(x, n, w, CONF_FIELD(base, k, int));
}

static int
key_route_exclude(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	(void)k;
	(void)base;
	return conf_cidrs(x, n, &x->c->client.route_exclude,
	    &x->c->client.nroute_exclude);
}

/* One user id range: a number, or "N-M". */
static int
uid_item(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct conf		*c = arg;
	const char		*s = conf_scalar(x, n);
	char			 lo[16], *hi;
	unsigned long long	 a, b;

	if (s == NULL)
		return -1;
	if (strlen(s) >= sizeof(lo))
		goto bad;
	memcpy(lo, s, strlen(s) + 1);
	if ((hi = strchr(lo, '-')) != NULL)
		*hi++ = '\0';
	if (conf_parse_u64(lo, &a) == -1 ||
	    (hi != NULL && conf_parse_u64(hi, &b) == -1))
		goto bad;
	if (hi == NULL)
		b = a;
	if (a > b || b > UINT32_MAX - 1)
		goto bad;
	c->client.route_uids[i].lo = (uint32_t)a;
	c->client.route_uids[i].hi = (uint32_t)b;
	c->client.nroute_uids = i + 1;
	return 0;
bad:
	return conf_err(x, n, "'%s' is not a user id or a range N-M "
	    "(0..4294967294)", conf_vis(x, s));
}

static int
key_route_uids(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf	*c = base;

	if (conf_seen(x, "route_uid_exclude") &&
	    conf_seen(x, "route_uid_include"))
		return conf_err(x, n, "route_uid_exclude and "
		    "route_uid_include do not mix: pick one");
	c->client.route_uids_include = k->min == 1;
	return conf_list_walk(x, n, 1, CONF_MAX_UIDS, uid_item, c);
}

static const struct conf_key keys_client[] = {
	{ "outbounds", key_outbounds, 0, 0, 0, NULL },
	{ "final", key_final, 0, 0, 0, NULL },
	{ "server", key_legacy, 0, 0, 0, NULL },
	{ "sni", key_legacy, 0, 0, 0, NULL },
	{ "ca", key_legacy, 0, 0, 0, NULL },
	{ "insecure", key_legacy, 0, 0, 0, NULL },
	{ "pin_sha256", key_legacy, 0, 0, 0, NULL },
	{ "fingerprint", key_legacy, 0, 0, 0, NULL },
	{ "key", key_legacy, 0, 0, 0, NULL },
	{ "key_file", key_legacy, 0, 0, 0, NULL },
	{ "header_version", key_legacy, 0, 0, 0, NULL },
	{ "protocol", key_legacy, 0, 0, 0, NULL },
	{ "username", key_legacy, 0, 0, 0, NULL },
	{ "password", key_legacy, 0, 0, 0, NULL },
	{ "password_sha224", key_legacy, 0, 0, 0, NULL },
	{ "padding", key_legacy, 0, 0, 0, NULL },
	{ "pool", key_legacy, 0, 0, 0, NULL },
	{ "pool_idle", key_legacy, 0, 0, 0, NULL },
	{ "pool_lifetime", key_legacy, 0, 0, 0, NULL },
	{ "reuse", key_legacy, 0, 0, 0, NULL },
	{ "reuse_age", key_legacy, 0, 0, 0, NULL },
	{ "congestion", conf_key_word, C(client.congestion), 0, CONF_CC_MAX,
	    NULL },
	{ "mark", conf_key_u32, C(client.mark), 0, UINT32_MAX, NULL },
	{ "max_flows", conf_key_uint, C(client.max_flows), 1, 1000000, NULL },
	{ "dial_threads", conf_key_uint, C(client.dial_threads), 0, 16, NULL },
	{ "workers", conf_key_uint, C(client.workers), 0, 64, NULL },
	{ "connect_timeout", conf_key_ms, C(client.connect_timeout_ms), 100,
	    600000, NULL },
	{ "idle_timeout", conf_key_ms, C(client.idle_timeout_ms), 1000,
	    CONF_MS_MAX, NULL },
	{ "connect_mode", key_connect_mode, C(client.faithful), 0, 0, NULL },
	{ "sniff", key_sniff, C(client.sniff), 0, 0, NULL },
	{ "sniff_timeout", conf_key_ms, C(client.sniff_timeout_ms), 1, 1000,
	    NULL },
	{ "max_udp", conf_key_uint, C(client.max_udp), 1, 1000000, NULL },
	{ "max_buffer_memory", conf_key_size, C(client.max_buffer_memory),
	    CONF_SIZE_MIN, CONF_SIZE_MAX, NULL },
	{ "udp_timeout", conf_key_ms, C(client.udp_timeout_ms), 1000,
	    CONF_MS_MAX, NULL },
	{ "dns_timeout", conf_key_ms, C(client.dns_timeout_ms), 1000,
	    CONF_MS_MAX, NULL },
	{ "dns", conf_key_dns, 0, 0, 0, NULL },
	{ "route", key_route, C(client.route_auto), 0, 0, NULL },
	{ "route_exclude", key_route_exclude, 0, 0, 0, NULL },
	{ "route_uid_exclude", key_route_uids, 0, 0, 0, NULL },
	{ "route_uid_include", key_route_uids, 0, 1, 0, NULL },
	{ "ipv6", key_ipv6, C(client.ipv6_bypass), 0, 0, NULL },
	{ "rules", conf_rules_key_rules, 0, 0, 0, NULL },
	{ "rule_sets", conf_rules_key_sets, 0, 0, 0, NULL },
	{ "geoip_database", conf_rules_key_geoip, 0, 0, 0, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};
const struct conf_map conf_map_client = { keys_client, check_client };
