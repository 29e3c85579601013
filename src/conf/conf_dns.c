/*
 * client.dns: where the apps' DNS goes.  Two forms:
 *
 *   dns: 192.0.2.53            every port-53 query pinned to that resolver
 *                              (through the tunnel); the same as
 *   dns: {mode: redirect, server: 192.0.2.53}
 *
 *   dns: {mode: fake-ip, ...}  A and AAAA queries answered by the client
 *                              itself from the fake ranges; other queries
 *                              and fake_ip_exclude names forwarded (to
 *                              server when given, else where they went)
 *
 * Both modes take upstreams: resolvers for names under their domains
 * (the first upstream that matches; other names go to server), and
 * cache_size, the answers kept (0: none).
 *
 * The fake ranges are judged against the TUN and route_exclude once the
 * whole file is read (conf_dns_check, from check_top).
 */
#include "config.h"

#include "conf/conf_int.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DNS_FILE_DEFAULT	"/run/tunsplit/fakeip"
#define DNS_SIZE_DEFAULT	65536
#define DNS_SIZE_MAX		(1 << 20)	/* FAKEIP_SIZE_MAX */
#define DNS_EXCLUDE_MAX		4096
#define DNS_PREFIX4_MAX		24	/* at least 254 names */
#define DNS_PREFIX6_MAX		120
#define DNS_CACHE_MAX		(1 << 20)

enum { DNS_MODE_REDIRECT = 1, DNS_MODE_FAKEIP = 2 };

static const struct conf_word dns_modes[] = {
	{ "redirect", DNS_MODE_REDIRECT }, { "fake-ip", DNS_MODE_FAKEIP },
	{ NULL, 0 }
};

/* The resolver: numeric, because a name would need DNS to find DNS.  A
 * bare address means port 53. */
static int
dns_server(struct ctx *x, yaml_node_t *n)
{
	const char	*s = conf_scalar(x, n);
	struct addr	*a = &x->c->client.dns;

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
key_server(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	(void)k;
	(void)base;
	return dns_server(x, n);
}

static int
key_mode(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	int	v;

	(void)k;
	(void)base;
	if (conf_choice(x, n, dns_modes, &v) == -1)
		return -1;
	x->c->client.dns_fakeip = v == DNS_MODE_FAKEIP;
	return 0;
}

static int
key_range(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	const char	*s = conf_scalar(x, n);
	struct cidr	*c = CONF_FIELD(base, k, struct cidr);
	int		 family = k->min == 4 ? AF_INET : AF_INET6;

	if (s == NULL)
		return -1;
	if (cidr_parse(c, s) == -1 || strchr(s, '/') == NULL ||
	    c->family != family)
		return conf_err(x, n, "'%s' is not an %s prefix (%s)",
		    conf_vis(x, s), family == AF_INET ? "IPv4" : "IPv6",
		    family == AF_INET ? "198.19.0.0/16" :
		    "fdfe:dcba:9876:1::/64");
	if (c->prefix > (family == AF_INET ? DNS_PREFIX4_MAX :
	    DNS_PREFIX6_MAX))
		return conf_err(x, n, "too small: a fake-IP range needs a "
		    "/%d or larger", family == AF_INET ? DNS_PREFIX4_MAX :
		    DNS_PREFIX6_MAX);
	if (family == AF_INET) {
		x->dns_range4 = n;
	} else {
		x->dns_range6 = n;
		x->c->client.has_fake_ip_range6 = true;
	}
	return 0;
}

/* A domain as the DNS keys take it (p without a leading '.'): the
 * letters, digits, '-' and '_' a query's name may have, in labels. */
static bool
dns_domain_ok(const char *p)
{
	size_t	len = strlen(p);

	return len > 0 && len <= 253 && p[len - 1] != '.' && *p != '.' &&
	    strstr(p, "..") == NULL &&
	    strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789-_.") == len;
}

/* A lower-case copy of s, or NULL. */
static char *
dns_lower_dup(const char *s)
{
	char	*copy, *q;

	if ((copy = strdup(s)) == NULL)
		return NULL;
	for (q = copy; *q != '\0'; q++)
		if (*q >= 'A' && *q <= 'Z')
			*q = (char)(*q - 'A' + 'a');
	return copy;
}

/* A name (exact) or ".suffix" (the name and every name under it), lower
 * case. */
static int
exclude_item(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	const char	*s = conf_scalar(x, n);
	char		*copy;

	(void)arg;
	if (s == NULL)
		return -1;
	if (!dns_domain_ok(*s == '.' ? s + 1 : s))
		return conf_err(x, n, "'%s' is not a domain name or "
		    "\".suffix\"", conf_vis(x, s));
	if ((copy = dns_lower_dup(s)) == NULL)
		return conf_err(x, n, "out of memory");
	x->c->client.fake_ip_exclude[i] = copy;
	x->c->client.nfake_ip_exclude = i + 1;
	return 0;
}

/* ---- upstreams ------------------------------------------------------------ */

#define DNS_UPSTREAMS_MAX	64
#define DNS_DOMAINS_MAX		4096

static int
up_domain(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct conf_dns_upstream *up = arg;
	const char	*s = conf_scalar(x, n), *p;

	if (s == NULL)
		return -1;
	p = *s == '.' ? s + 1 : s;
	if (*p != '\0' || *s != '.') {		/* "." alone: every name */
		if (!dns_domain_ok(p))
			return conf_err(x, n, "'%s' is not a domain name (it "
			    "and every name under it)", conf_vis(x, s));
	}
	if ((up->domains[i] = dns_lower_dup(p)) == NULL)
		return conf_err(x, n, "out of memory");
	up->ndomains = i + 1;
	return 0;
}

static int
key_up_domains(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf_dns_upstream *up = base;
	size_t	count = conf_list_count(n);

	(void)k;
	if (count == 0)
		count = 1;
	if (count <= DNS_DOMAINS_MAX &&
	    (up->domains = calloc(count, sizeof(char *))) == NULL)
		return conf_err(x, n, "out of memory");
	return conf_list_walk(x, n, 1, DNS_DOMAINS_MAX, up_domain, up);
}

static int
key_up_name(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf_dns_upstream *up = base, *v = x->c->client.dns_upstreams;
	const char	*s = conf_scalar(x, n);

	(void)k;
	if (s == NULL)
		return -1;
	if (*s == '\0' || strlen(s) > CONF_OB_NAME_MAX ||
	    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") != strlen(s))
		return conf_err(x, n, "'%s' is not a name of 1..%d characters "
		    "a-z, 0-9, '_' or '-'", conf_vis(x, s), CONF_OB_NAME_MAX);
	for (; v < up; v++)
		if (strcmp(v->name, s) == 0)
			return conf_err(x, n, "'%s': an upstream of that name "
			    "is listed already", s);
	memcpy(up->name, s, strlen(s) + 1);
	return 0;
}

static int
key_up_address(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf_dns_upstream *up = base;
	const char	*s = conf_scalar(x, n);

	(void)k;
	if (s == NULL)
		return -1;
	up->has_port = addr_parse(&up->addr, s) == 0 &&
	    addr_port(&up->addr) != 0;
	if (!up->has_port && addr_from_ip(&up->addr, s, 53) == -1)
		return conf_err(x, n, "'%s' is not a numeric address[:port] "
		    "(192.0.2.53:53, [2001:db8::53]:53)", conf_vis(x, s));
	return 0;
}

/* udp: the query goes as the app sent it; tcp, tls, https: the client
 * asks over a stream of its own (client/dns/dnsup.h). */
static int
key_up_protocol(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	static const struct conf_word w[] = { { "udp", CONF_DNS_UDP },
	    { "tcp", CONF_DNS_TCP }, { "tls", CONF_DNS_TLS },
	    { "https", CONF_DNS_HTTPS }, { NULL, 0 } };

	(void)k;
	return conf_choice(x, n, w, &((struct conf_dns_upstream *)base)->
	    protocol);
}

static int
check_upstream(struct ctx *x, yaml_node_t *map, void *base)
{
	static const uint16_t port[] = { 53, 53, 853, 443 };
	struct conf_dns_upstream *up = base;
	const void *src;
	uint8_t	ip[16];
	size_t	len;
	bool	tls = up->protocol == CONF_DNS_TLS ||
	    up->protocol == CONF_DNS_HTTPS;

	if (conf_require(x, map, "name") == -1 ||
	    conf_require(x, map, "address") == -1 ||
	    conf_require(x, map, "domains") == -1)
		return -1;
	if (!up->has_port) {
		src = addr_ip(&up->addr, &len);
		memcpy(ip, src, len);
		addr_from_raw(&up->addr, addr_family(&up->addr), ip,
		    port[up->protocol]);
	}
	if (!tls && (up->tls_name[0] != '\0' || up->ca_file != NULL))
		return conf_err(x, map, "tls_name and ca are for protocol tls "
		    "and https");
	if (up->protocol != CONF_DNS_HTTPS && up->path != NULL)
		return conf_err(x, map, "path is for protocol https");
	if (up->protocol == CONF_DNS_HTTPS && up->path != NULL &&
	    (up->path[0] != '/' || strpbrk(up->path, " \t\r\n") != NULL))
		return conf_err(x, map, "path: '%s' is not an absolute path "
		    "without blanks", conf_vis(x, up->path));
	return 0;
}

static const struct conf_key keys_upstream[] = {
	{ "name", key_up_name, 0, 0, 0, NULL },
	{ "address", key_up_address, 0, 0, 0, NULL },
	{ "protocol", key_up_protocol, 0, 0, 0, NULL },
	{ "domains", key_up_domains, 0, 0, 0, NULL },
	{ "tls_name", conf_key_word, offsetof(struct conf_dns_upstream,
	    tls_name), 0, sizeof(((struct conf_dns_upstream *)0)->tls_name),
	    NULL },
	{ "path", conf_key_path, offsetof(struct conf_dns_upstream, path), 0,
	    0, NULL },
	{ "ca", conf_key_filename, offsetof(struct conf_dns_upstream,
	    ca_file), 0, 0, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};
static const struct conf_map map_upstream = { keys_upstream, check_upstream };

static int
upstream_item(struct ctx *x, yaml_node_t *n, size_t i, void *arg)
{
	struct conf	*c = x->c;

	(void)arg;
	c->client.ndns_upstreams = i + 1;
	return conf_map_walk(x, n, &map_upstream, &c->client.dns_upstreams[i]);
}

static int
key_upstreams(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	struct conf	*c = x->c;
	size_t		 count = conf_list_count(n);

	(void)k;
	(void)base;
	if (n->type != YAML_SEQUENCE_NODE)
		return conf_err(x, n, "expected a list of upstreams, found %s",
		    conf_node_kind(n));
	if (count > 0 && count <= DNS_UPSTREAMS_MAX &&
	    (c->client.dns_upstreams = calloc(count,
	    sizeof(*c->client.dns_upstreams))) == NULL)
		return conf_err(x, n, "out of memory");
	return conf_list_walk(x, n, 1, DNS_UPSTREAMS_MAX, upstream_item, NULL);
}

static int
key_exclude(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	size_t	count = conf_list_count(n);

	(void)k;
	(void)base;
	if (count == 0)
		count = 1;
	if (count <= DNS_EXCLUDE_MAX &&
	    (x->c->client.fake_ip_exclude = calloc(count,
	    sizeof(char *))) == NULL)
		return conf_err(x, n, "out of memory");
	return conf_list_walk(x, n, 0, DNS_EXCLUDE_MAX, exclude_item, NULL);
}

/* A file name, or "" (quoted) for none. */
static int
key_file(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	free(x->c->client.fake_ip_file);
	x->c->client.fake_ip_file = NULL;
	if (n->type == YAML_SCALAR_NODE && n->data.scalar.length == 0 &&
	    (n->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
	    n->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE))
		return 0;
	return conf_key_filename(x, n, k, base);
}

static int
check_dns(struct ctx *x, yaml_node_t *map, void *base)
{
	static const char *const fake_keys[] = { "fake_ip_range",
	    "fake_ip_range6", "fake_ip_exclude", "fake_ip_file",
	    "fake_ip_size", NULL };
	struct conf	*c = base;
	size_t		 i;

	if (conf_require(x, map, "mode") == -1)
		return -1;
	if (c->client.dns_fakeip) {
		/* The default file; "" keeps none. */
		if (!conf_seen(x, "fake_ip_file") &&
		    (c->client.fake_ip_file = strdup(DNS_FILE_DEFAULT)) ==
		    NULL)
			return conf_err(x, map, "out of memory");
		return 0;
	}
	for (i = 0; fake_keys[i] != NULL; i++)
		if (conf_seen(x, fake_keys[i])) {
			conf_path_push(x, fake_keys[i]);
			return conf_err(x, map, "needs mode: fake-ip");
		}
	return conf_require(x, map, "server");
}

static const struct conf_key keys_dns[] = {
	{ "mode", key_mode, 0, 0, 0, NULL },
	{ "server", key_server, 0, 0, 0, NULL },
	{ "fake_ip_range", key_range, C(client.fake_ip_range4), 4, 0, NULL },
	{ "fake_ip_range6", key_range, C(client.fake_ip_range6), 6, 0, NULL },
	{ "fake_ip_exclude", key_exclude, 0, 0, 0, NULL },
	{ "fake_ip_file", key_file, C(client.fake_ip_file), 0, 0, NULL },
	{ "fake_ip_size", conf_key_uint, C(client.fake_ip_size), 2,
	    DNS_SIZE_MAX, NULL },
	{ "upstreams", key_upstreams, 0, 0, 0, NULL },
	{ "cache_size", conf_key_uint, C(client.dns_cache_size), 0,
	    DNS_CACHE_MAX, NULL },
	{ NULL, NULL, 0, 0, 0, NULL }
};
static const struct conf_map map_dns = { keys_dns, check_dns };

int
conf_key_dns(struct ctx *x, yaml_node_t *n, const struct conf_key *k,
    void *base)
{
	(void)k;
	x->dns_knode = x->knode;
	if (n->type != YAML_MAPPING_NODE)
		return dns_server(x, n);
	x->c->client.dns_map = true;
	return conf_map_walk(x, n, &map_dns, base);
}

/* ---- with the whole file read ------------------------------------------ */

static bool
cidr_overlap(const struct cidr *a, const struct cidr *b)
{
	const struct cidr *wide = a->prefix <= b->prefix ? a : b;
	const struct cidr *other = wide == a ? b : a;

	return a->family == b->family &&
	    cidr_match(wide, other->family, other->bytes);
}

static int
dns_range_err(struct ctx *x, yaml_node_t *n, const char *key,
    const char *msg)
{
	conf_path_push(x, "client");
	conf_path_push(x, "dns");
	conf_path_push(x, key);
	return conf_err(x, n, "%s", msg);
}

/* One fake range against the TUN's address and route_exclude. */
static int
dns_range_check(struct ctx *x, const struct cidr *r, yaml_node_t *n,
    const char *key)
{
	const struct conf *c = x->c;
	const struct cidr *tun = r->family == AF_INET ? &c->tun.addr4 :
	    &c->tun.addr6;
	bool		 has_tun = r->family == AF_INET ? c->tun.has_addr4 :
	    c->tun.has_addr6;
	char		 buf[INET6_ADDRSTRLEN + 8], msg[160];
	size_t		 i;

	if (n == NULL)
		n = x->dns_knode;
	if (has_tun && cidr_match(r, tun->family, tun->bytes)) {
		inet_ntop(tun->family, tun->bytes, buf, sizeof(buf));
		snprintf(msg, sizeof(msg), "holds the TUN's own address %s",
		    buf);
		return dns_range_err(x, n, key, msg);
	}
	for (i = 0; i < c->client.nroute_exclude; i++)
		if (cidr_overlap(r, &c->client.route_exclude[i])) {
			cidr_fmt(&c->client.route_exclude[i], buf,
			    sizeof(buf));
			snprintf(msg, sizeof(msg), "overlaps route_exclude "
			    "%s: fake addresses must be routed into the TUN",
			    buf);
			return dns_range_err(x, n, key, msg);
		}
	return 0;
}

/*
 * Defaults that depend on the TUN: 198.18.0.0/16, or 198.19.0.0/16 when
 * the TUN's address is in the first (as the examples' 198.18.0.1/15);
 * fdfe:dcba:9876:1::/64 (:2:: if the TUN is there) when the TUN has IPv6.
 */
static void
dns_defaults(struct conf *c)
{
	struct cidr	*r4 = &c->client.fake_ip_range4;
	struct cidr	*r6 = &c->client.fake_ip_range6;

	if (r4->family == 0) {
		(void)cidr_parse(r4, "198.18.0.0/16");
		if (c->tun.has_addr4 &&
		    cidr_match(r4, AF_INET, c->tun.addr4.bytes))
			(void)cidr_parse(r4, "198.19.0.0/16");
	}
	if (!c->client.has_fake_ip_range6 && c->tun.has_addr6) {
		(void)cidr_parse(r6, "fdfe:dcba:9876:1::/64");
		if (cidr_match(r6, AF_INET6, c->tun.addr6.bytes))
			(void)cidr_parse(r6, "fdfe:dcba:9876:2::/64");
		c->client.has_fake_ip_range6 = true;
	}
}

int
conf_dns_check(struct ctx *x)
{
	struct conf	*c = x->c;
	size_t		 old = strlen(x->path);
	int		 rc = 0;

	if (c->role != CONF_ROLE_CLIENT || !c->client.dns_fakeip)
		return 0;
	if (c->client.fake_ip_size == 0)
		c->client.fake_ip_size = DNS_SIZE_DEFAULT;
	dns_defaults(c);
	if (dns_range_check(x, &c->client.fake_ip_range4, x->dns_range4,
	    "fake_ip_range") == -1 || (c->client.has_fake_ip_range6 &&
	    dns_range_check(x, &c->client.fake_ip_range6, x->dns_range6,
	    "fake_ip_range6") == -1))
		rc = -1;
	if (rc == 0)
		conf_path_pop(x, old);
	return rc;
}

void
conf_dns_free(struct conf *c)
{
	size_t	i, j;

	for (i = 0; i < c->client.nfake_ip_exclude; i++)
		free(c->client.fake_ip_exclude[i]);
	for (i = 0; i < c->client.ndns_upstreams; i++) {
		for (j = 0; j < c->client.dns_upstreams[i].ndomains; j++)
			free(c->client.dns_upstreams[i].domains[j]);
		free(c->client.dns_upstreams[i].domains);
		free(c->client.dns_upstreams[i].path);
		free(c->client.dns_upstreams[i].ca_file);
	}
	free(c->client.dns_upstreams);
	free(c->client.fake_ip_exclude);
	free(c->client.fake_ip_file);
}
