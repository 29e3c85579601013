/*
 * The client: section: where the outer streams go and how (server, TLS,
 * protocol and its credentials), the client's limits and timeouts, DNS and
 * routing; check_client decides what each protocol needs and rejects what
 * it cannot use.
 */
#include "config.h"

#include "conf/conf_int.h"

#include <arpa/inet.h>
#include <string.h>

#include <sodium.h>

#include "wire/proto_trojan.h"

_Static_assert(CONF_TROJAN_HEX_LEN == PROTO_TROJAN_HEX_LEN, "trojan hash size");

static int
key_server_addr(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	(void)k;
	(void)base;
	return conf_hostport(x, n, &x->c->client.server_host,
	    &x->c->client.server_port);
}

/*
 * SHA-256 of the server's SubjectPublicKeyInfo, base64 -- the form curl's
 * --pinnedpubkey takes, whose "sha256//" prefix is accepted too.
 */
static int
key_pin(struct ctx *x, yaml_node_t *n, const struct conf_key *k, void *base)
{
	const char	*s = conf_scalar(x, n), *end = NULL;
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
	struct conf	*c = base;

	(void)k;
	if (s == NULL || conf_redacted(x, n, s))
		return -1;
	if (conf_seen(x, "password_sha224"))
		return conf_err(x, n, "password and password_sha224 are "
		    "mutually exclusive");
	if (proto_trojan_hash(s, strlen(s), c->client.trojan_hex) == -1)
		return conf_err(x, n, "cannot hash the password (SHA-224)");
	if (strlen(s) <= CONF_SOCKS_MAX)
		memcpy(c->client.password, s, strlen(s) + 1);
	return 0;
}

/* protocol: trojan sends only the password's hash: it may be given as
 * that (what check --secrets prints). */
static int
key_password_sha224(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = conf_scalar(x, n);
	struct conf	*c = base;

	(void)k;
	if (s == NULL)
		return -1;
	if (conf_seen(x, "password"))
		return conf_err(x, n, "password and password_sha224 are "
		    "mutually exclusive");
	return conf_sha224(x, n, s, c->client.trojan_hex);
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
check_client_socks5(struct ctx *x, yaml_node_t *map, struct conf *c)
{
	if (conf_seen(x, "username") != conf_seen(x, "password")) {
		conf_path_push(x, conf_seen(x, "username") ? "password" :
		    "username");
		return conf_err(x, map, "username and password go together "
		    "(RFC 1929)");
	}
	if (conf_seen(x, "password") && c->client.password[0] == '\0') {
		conf_path_push(x, "password");
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
	if (c->client.protocol != CONF_PROTO_TROJAN &&
	    unused_key(x, map, "password_sha224", "needs protocol: trojan") ==
	    -1)
		return -1;
	if (!tls && (unused_key(x, map, "key", why) == -1 ||
	    unused_key(x, map, "key_file", why) == -1))
		return -1;
	switch (c->client.protocol) {
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
		if (c->client.faithful) {
			conf_path_push(x, "connect_mode");
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
			conf_path_push(x, "mark");
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
	    conf_require(x, map, "server") == -1)
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
key_fingerprint(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	static const struct conf_word	w[] = {
		{ "curl", 0 }, { "browser", 1 }, { NULL, 0 }
	};

	return conf_flag(x, n, k, base, w);
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
	{ "server", key_server_addr, 0, 0, 0, NULL },
	{ "sni", key_sni, C(client.sni), 0, 0, NULL },
	{ "ca", conf_key_filename, C(client.ca_file), 0, 0, NULL },
	{ "insecure", conf_key_bool, C(client.insecure), 0, 0, NULL },
	{ "pin_sha256", key_pin, 0, 0, 0, NULL },
	{ "fingerprint", key_fingerprint, C(client.fp_browser), 0, 0, NULL },
	{ "key", conf_key_key, C(client.key), 0, 0, NULL },
	{ "key_file", conf_key_file, C(client.key), C(client.key_file), 0,
	    NULL },
	{ "protocol", key_protocol, C(client.protocol), 0, 0, NULL },
	{ "username", key_username, C(client.username), 0, 0, NULL },
	{ "password", key_password, 0, 0, 0, NULL },
	{ "password_sha224", key_password_sha224, 0, 0, 0, NULL },
	{ "congestion", conf_key_word, C(client.congestion), 0, CONF_CC_MAX,
	    NULL },
	{ "mark", conf_key_u32, C(client.mark), 0, UINT32_MAX, NULL },
	{ "max_flows", conf_key_uint, C(client.max_flows), 1, 1000000, NULL },
	{ "connect_timeout", conf_key_ms, C(client.connect_timeout_ms), 100,
	    600000, NULL },
	{ "idle_timeout", conf_key_ms, C(client.idle_timeout_ms), 1000,
	    CONF_MS_MAX, NULL },
	{ "connect_mode", key_connect_mode, C(client.faithful), 0, 0, NULL },
	{ "sniff", key_sniff, C(client.sniff), 0, 0, NULL },
	{ "sniff_timeout", conf_key_ms, C(client.sniff_timeout_ms), 1, 1000,
	    NULL },
	{ "padding", conf_key_uint, C(client.padding), 0, 64, NULL },
	{ "pool", conf_key_uint, C(client.pool), 0, 64, NULL },
	{ "pool_lifetime", conf_key_ms, C(client.pool_lifetime_ms), 1000,
	    600000, NULL },
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
