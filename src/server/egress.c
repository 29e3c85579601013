/*
 * The server's egress policy: which addresses a session may dial or send
 * datagrams to.  Default deny of loopback, private, link-local, CGNAT,
 * multicast, unspecified and metadata ranges (and of the server's own
 * listeners), unless an allow entry covers the address; a user's own lists
 * go first.  IPv6 forms that embed an IPv4 address a gateway may
 * translate to (mapped, NAT64, 6to4) are judged by that address.
 *
 * The addresses of the host's interfaces (egress_local_*) are denied
 * too, even inside an allowed range: an allow entry opens one only when
 * it names exactly that address (a /32 or /128).  The table is the one
 * piece of state here; only the server's loop thread reads or writes it.
 */
#include "config.h"

#include "server/egress.h"

#include <sys/socket.h>

#include <ifaddrs.h>
#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "conf/conf.h"
#include "core/addr.h"

static const struct cidr egress_default_deny[] = {
	{ AF_INET,  { 0 }, 8 },			/* "this" network */
	{ AF_INET,  { 10 }, 8 },
	{ AF_INET,  { 100, 64 }, 10 },		/* CGNAT */
	{ AF_INET,  { 127 }, 8 },
	{ AF_INET,  { 169, 254 }, 16 },		/* link-local, cloud metadata */
	{ AF_INET,  { 172, 16 }, 12 },
	{ AF_INET,  { 192, 168 }, 16 },
	{ AF_INET,  { 224 }, 4 },		/* multicast */
	{ AF_INET,  { 240 }, 4 },		/* reserved, broadcast */
	{ AF_INET6, { 0 }, 128 },		/* unspecified */
	{ AF_INET6, { [15] = 1 }, 128 },	/* loopback */
	{ AF_INET6, { 0, 0x64, 0xff, 0x9b, 0, 1 }, 48 }, /* local NAT64 */
	{ AF_INET6, { 0xfc }, 7 },		/* unique local */
	{ AF_INET6, { 0xfe, 0x80 }, 10 },	/* link-local */
	{ AF_INET6, { 0xfe, 0xc0 }, 10 },	/* site-local (deprecated) */
	{ AF_INET6, { 0xff }, 8 },		/* multicast */
};

#define NITEMS(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * How an address is judged: as the IPv4 address it embeds where a gateway
 * may translate it to one -- IPv4-mapped ::ffff:0:0/96, the NAT64
 * well-known prefix 64:ff9b::/96 (RFC 6052: the last 32 bits) and 6to4
 * 2002::/16 (RFC 3056: bits 16 to 47) -- and as itself.  v[0] is the form
 * allow entries and the listeners' ports are judged by (the IPv4 one if
 * any); deny entries match either form.  The local-use NAT64 prefix
 * 64:ff9b:1::/48 (RFC 8215) may embed its IPv4 address anywhere, so it is
 * denied by default as a whole.
 */
struct egress_view {
	int		 family[2];
	const uint8_t	*ip[2];
	size_t		 n;
};

static void
egress_view(const struct addr *a, struct egress_view *v)
{
	static const uint8_t	 mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t	 nat64[12] = { 0, 0x64, 0xff, 0x9b };
	const uint8_t		*ip;
	size_t			 len;

	ip = addr_ip(a, &len);
	v->family[0] = addr_family(a);
	v->ip[0] = ip;
	v->n = 1;
	if (v->family[0] != AF_INET6)
		return;
	if (memcmp(ip, mapped, sizeof(mapped)) == 0 ||
	    memcmp(ip, nat64, sizeof(nat64)) == 0)
		v->ip[0] = ip + 12;
	else if (ip[0] == 0x20 && ip[1] == 0x02)
		v->ip[0] = ip + 2;
	else
		return;
	v->family[0] = AF_INET;
	v->family[1] = AF_INET6;
	v->ip[1] = ip;
	v->n = 2;
}

static bool
egress_in(const struct cidr *list, size_t n, int family, const uint8_t *ip)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (cidr_match(&list[i], family, ip))
			return true;
	return false;
}

/* A deny list: either form of the address. */
static bool
egress_in_any(const struct cidr *list, size_t n, const struct egress_view *v)
{
	size_t	 i;

	for (i = 0; i < v->n; i++)
		if (egress_in(list, n, v->family[i], v->ip[i]))
			return true;
	return false;
}

static bool
egress_is_wildcard(int family, const uint8_t *ip)
{
	static const uint8_t	 zero[16];

	return memcmp(ip, zero, family == AF_INET ? 4 : 16) == 0;
}

static bool
egress_is_loopback(int family, const uint8_t *ip)
{
	static const uint8_t	 one[16] = { [15] = 1 };

	if (family == AF_INET)
		return ip[0] == 127;
	return memcmp(ip, one, sizeof(one)) == 0;
}

/* ---- the host's own addresses -------------------------------------- */

/* A key: the family (4 or 6), then the address, zero-padded: sorted, so
 * a lookup is a binary search however many addresses the host has. */
#define EGRESS_LOCAL_KEY	17

/* Refreshed by the main thread, read by every worker's dials. */
static struct {
	pthread_rwlock_t  lock;
	uint8_t		(*key)[EGRESS_LOCAL_KEY];
	size_t		 n;
} egress_local = { .lock = PTHREAD_RWLOCK_INITIALIZER };

static void
egress_local_key(int family, const uint8_t *ip, uint8_t key[EGRESS_LOCAL_KEY])
{
	memset(key, 0, EGRESS_LOCAL_KEY);
	key[0] = family == AF_INET ? 4 : 6;
	memcpy(key + 1, ip, family == AF_INET ? 4 : 16);
}

static int
egress_local_cmp(const void *a, const void *b)
{
	return memcmp(a, b, EGRESS_LOCAL_KEY);
}

int
egress_local_set(const struct addr *a, size_t n)
{
	uint8_t		(*key)[EGRESS_LOCAL_KEY] = NULL, (*old)[EGRESS_LOCAL_KEY];
	const uint8_t	*ip;
	size_t		 i, len, m = 0;

	if (n > 0 && (key = calloc(n, sizeof(*key))) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		ip = addr_ip(&a[i], &len);
		if ((addr_family(&a[i]) == AF_INET && len == 4) ||
		    (addr_family(&a[i]) == AF_INET6 && len == 16))
			egress_local_key(addr_family(&a[i]), ip, key[m++]);
	}
	if (m > 0)
		qsort(key, m, sizeof(*key), egress_local_cmp);
	pthread_rwlock_wrlock(&egress_local.lock);
	old = egress_local.key;
	egress_local.key = key;
	egress_local.n = m;
	pthread_rwlock_unlock(&egress_local.lock);
	free(old);
	return 0;
}

int
egress_local_refresh(void)
{
	struct ifaddrs	*ifa, *i;
	struct addr	*a;
	size_t		 n = 0;
	int		 rc;

	if (getifaddrs(&ifa) == -1)
		return -1;
	for (i = ifa; i != NULL; i = i->ifa_next)
		n++;
	if ((a = calloc(n + 1, sizeof(*a))) == NULL) {
		freeifaddrs(ifa);
		return -1;
	}
	n = 0;
	for (i = ifa; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL)
			continue;
		if (i->ifa_addr->sa_family == AF_INET)
			a[n].len = sizeof(struct sockaddr_in);
		else if (i->ifa_addr->sa_family == AF_INET6)
			a[n].len = sizeof(struct sockaddr_in6);
		else
			continue;
		memcpy(&a[n].u.ss, i->ifa_addr, a[n].len);
		n++;
	}
	freeifaddrs(ifa);
	rc = egress_local_set(a, n);
	free(a);
	return rc;
}

size_t
egress_local_count(void)
{
	size_t	 n;

	pthread_rwlock_rdlock(&egress_local.lock);
	n = egress_local.n;
	pthread_rwlock_unlock(&egress_local.lock);
	return n;
}

void
egress_local_clear(void)
{
	(void)egress_local_set(NULL, 0);
}

static bool
egress_is_local1(int family, const uint8_t *ip)
{
	uint8_t		 key[EGRESS_LOCAL_KEY];
	bool		 found;

	egress_local_key(family, ip, key);
	pthread_rwlock_rdlock(&egress_local.lock);
	found = egress_local.n > 0 && bsearch(key, egress_local.key,
	    egress_local.n, sizeof(*egress_local.key), egress_local_cmp) != NULL;
	pthread_rwlock_unlock(&egress_local.lock);
	return found;
}

/* Either form of the address is one of the host's. */
static bool
egress_is_local(const struct egress_view *v)
{
	size_t		 i;

	for (i = 0; i < v->n; i++)
		if (egress_is_local1(v->family[i], v->ip[i]))
			return true;
	return false;
}

/* An allow entry naming exactly this address: a /32 or /128 of it. */
static bool
egress_names(const struct cidr *list, size_t n, const struct egress_view *v)
{
	size_t	 i, len;

	len = v->family[0] == AF_INET ? 4 : 16;
	for (i = 0; i < n; i++)
		if (list[i].family == v->family[0] &&
		    list[i].prefix == len * 8 &&
		    memcmp(list[i].bytes, v->ip[0], len) == 0)
			return true;
	return false;
}

/*
 * The server's own listen addresses.  exact: the address and port of a
 * listener, or a loopback, unspecified or local (interface) address on the
 * port of a wildcard listener -- dialing those loops back into this
 * server.  Otherwise: a
 * listener's (non-wildcard) address on any port.  Every form of the
 * target is compared with every form of a listener's address.
 */
static bool
egress_is_self1(const struct conf *c, int family, const uint8_t *ip,
    uint16_t port, bool exact)
{
	const struct addr	*l;
	struct egress_view	 lv;
	size_t			 i, j;

	for (i = 0; i < c->server.nlisten; i++) {
		l = &c->server.listen[i];
		egress_view(l, &lv);
		for (j = 0; j < lv.n; j++) {
			if (lv.family[j] != family)
				continue;
			if (egress_is_wildcard(family, lv.ip[j])) {
				if (exact && addr_port(l) == port &&
				    (egress_is_wildcard(family, ip) ||
				    egress_is_loopback(family, ip) ||
				    egress_is_local1(family, ip)))
					return true;
				continue;
			}
			if (memcmp(lv.ip[j], ip, family == AF_INET ? 4 : 16) ==
			    0 && (!exact || addr_port(l) == port))
				return true;
		}
	}
	return false;
}

static bool
egress_is_self(const struct conf *c, const struct egress_view *v,
    uint16_t port, bool exact)
{
	size_t	 i;

	for (i = 0; i < v->n; i++)
		if (egress_is_self1(c, v->family[i], v->ip[i], port, exact))
			return true;
	return false;
}

/*
 * In order: a listener itself is never dialed; a deny entry beats an allow
 * entry (both are the operator's words, deny is the safe reading); an allow
 * entry beats the default denies and the listeners' addresses on other
 * ports.  The host's own addresses come right after the deny lists: an
 * allow entry covering one opens it only when it names exactly that
 * address -- a range allowed for the network the server sits in must not
 * open the server's own services on it.
 */
bool
egress_allowed(const struct conf *c, const struct addr *a)
{
	return egress_allowed_user(c, NULL, a);
}

/*
 * A user's own lists come first, in the same order (deny, then allow):
 * they are the operator's more specific words, so a user's allow entry
 * opens what the server-wide deny list or the defaults close, for that
 * user only.  Only a listener itself stays closed to everyone.
 */
bool
egress_allowed_user(const struct conf *c, const struct conf_egress *u,
    const struct addr *a)
{
	struct egress_view	 v;
	uint16_t		 port = addr_port(a);

	egress_view(a, &v);
	if (egress_is_self(c, &v, port, true))
		return false;
	if (u != NULL && egress_in_any(u->deny, u->ndeny, &v))
		return false;
	if (egress_is_local(&v) && !(u != NULL && egress_names(u->allow,
	    u->nallow, &v)) && !egress_names(c->server.egress_allow,
	    c->server.negress_allow, &v))
		return false;
	if (u != NULL && egress_in(u->allow, u->nallow, v.family[0], v.ip[0]))
		return true;
	if (egress_in_any(c->server.egress_deny, c->server.negress_deny, &v))
		return false;
	if (egress_in(c->server.egress_allow, c->server.negress_allow,
	    v.family[0], v.ip[0]))
		return true;
	if (egress_in_any(egress_default_deny, NITEMS(egress_default_deny),
	    &v))
		return false;
	return !egress_is_self(c, &v, port, false);
}
