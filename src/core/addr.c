/*
 * Numeric socket addresses and CIDR prefixes.  Nothing here resolves
 * names: configuration and wire formats carry literal addresses, and a
 * name lookup would block the loop.
 */
#include "config.h"

#include "core/addr.h"

#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

/* Decimal digits only, no sign or spaces, at most maxdigits long. */
static int
addr_parse_uint(const char *s, size_t maxdigits, unsigned long max,
    unsigned long *out)
{
	unsigned long	v = 0;
	size_t		n;

	for (n = 0; s[n] != '\0'; n++) {
		if (s[n] < '0' || s[n] > '9' || n >= maxdigits)
			return -1;
		v = v * 10 + (unsigned long)(s[n] - '0');
	}
	if (n == 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

int
addr_from_ip(struct addr *a, const char *ip, uint16_t port)
{
	struct in_addr	in4;
	struct in6_addr	in6;

	if (inet_pton(AF_INET, ip, &in4) == 1)
		addr_from_raw(a, AF_INET, &in4, port);
	else if (inet_pton(AF_INET6, ip, &in6) == 1)
		addr_from_raw(a, AF_INET6, &in6, port);
	else
		return -1;
	return 0;
}

void
addr_from_raw(struct addr *a, int family, const void *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	if (family == AF_INET) {
		a->u.sin.sin_family = AF_INET;
		a->u.sin.sin_port = htons(port);
		memcpy(&a->u.sin.sin_addr, ip, 4);
		a->len = sizeof(a->u.sin);
	} else {
		a->u.sin6.sin6_family = AF_INET6;
		a->u.sin6.sin6_port = htons(port);
		memcpy(&a->u.sin6.sin6_addr, ip, 16);
		a->len = sizeof(a->u.sin6);
	}
}

/*
 * "1.2.3.4:80" or "[v6]:443".  A bare IPv6 address with a port ("::1:80")
 * is ambiguous and therefore rejected.
 */
int
addr_parse(struct addr *a, const char *s)
{
	char		 host[INET6_ADDRSTRLEN];
	const char	*h, *colon;
	unsigned long	 port;
	size_t		 hlen;
	int		 family;

	if (s == NULL)
		return -1;
	if (*s == '[') {
		h = s + 1;
		if ((colon = strchr(h, ']')) == NULL || colon[1] != ':')
			return -1;
		hlen = (size_t)(colon - h);
		colon++;
		family = AF_INET6;
	} else {
		h = s;
		if ((colon = strchr(h, ':')) == NULL || strchr(colon + 1, ':'))
			return -1;
		hlen = (size_t)(colon - h);
		family = AF_INET;
	}
	if (hlen == 0 || hlen >= sizeof(host))
		return -1;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (addr_parse_uint(colon + 1, 5, 65535, &port) == -1)
		return -1;
	if (addr_from_ip(a, host, (uint16_t)port) == -1 ||
	    addr_family(a) != family)
		return -1;
	return 0;
}

uint16_t
addr_port(const struct addr *a)
{
	switch (a->u.sa.sa_family) {
	case AF_INET:
		return ntohs(a->u.sin.sin_port);
	case AF_INET6:
		return ntohs(a->u.sin6.sin6_port);
	default:
		return 0;
	}
}

int
addr_family(const struct addr *a)
{
	return a->u.sa.sa_family;
}

const void *
addr_ip(const struct addr *a, size_t *len)
{
	switch (a->u.sa.sa_family) {
	case AF_INET:
		*len = 4;
		return &a->u.sin.sin_addr;
	case AF_INET6:
		*len = 16;
		return &a->u.sin6.sin6_addr;
	default:
		*len = 0;
		return NULL;
	}
}

const char *
addr_fmt(const struct addr *a, char *out, size_t outlen)
{
	char		 ip[INET6_ADDRSTRLEN];
	const void	*raw;
	size_t		 len;
	int		 family = addr_family(a);

	if ((raw = addr_ip(a, &len)) == NULL ||
	    inet_ntop(family, raw, ip, sizeof(ip)) == NULL) {
		snprintf(out, outlen, "(family %d)", family);
		return out;
	}
	if (family == AF_INET6)
		snprintf(out, outlen, "[%s]:%u", ip, addr_port(a));
	else
		snprintf(out, outlen, "%s:%u", ip, addr_port(a));
	return out;
}

bool
addr_eq(const struct addr *a, const struct addr *b)
{
	const void	*ia, *ib;
	size_t		 la, lb;

	if (addr_family(a) != addr_family(b) || addr_port(a) != addr_port(b))
		return false;
	ia = addr_ip(a, &la);
	ib = addr_ip(b, &lb);
	if (ia == NULL || ib == NULL || memcmp(ia, ib, la) != 0)
		return false;
	return addr_family(a) != AF_INET6 ||
	    a->u.sin6.sin6_scope_id == b->u.sin6.sin6_scope_id;
}

/* ---- CIDR --------------------------------------------------------- */

int
cidr_parse(struct cidr *c, const char *s)
{
	char		 ip[INET6_ADDRSTRLEN];
	const char	*slash;
	unsigned long	 prefix;
	size_t		 iplen;

	if (s == NULL)
		return -1;
	slash = strchr(s, '/');
	iplen = slash ? (size_t)(slash - s) : strlen(s);
	if (iplen == 0 || iplen >= sizeof(ip))
		return -1;
	memcpy(ip, s, iplen);
	ip[iplen] = '\0';
	memset(c, 0, sizeof(*c));
	if (inet_pton(AF_INET, ip, c->bytes) == 1)
		c->family = AF_INET;
	else if (inet_pton(AF_INET6, ip, c->bytes) == 1)
		c->family = AF_INET6;
	else
		return -1;
	prefix = c->family == AF_INET ? 32 : 128;
	if (slash && addr_parse_uint(slash + 1, 3, prefix, &prefix) == -1)
		return -1;
	c->prefix = (uint8_t)prefix;
	return 0;
}

/* Host bits set in the prefix ("10.1.2.3/8") are ignored here. */
bool
cidr_match(const struct cidr *c, int family, const void *ip)
{
	const uint8_t	*p = ip;
	unsigned	 full = c->prefix / 8, bits = c->prefix % 8;
	uint8_t		 mask;

	if (family != c->family)
		return false;
	if (memcmp(c->bytes, p, full) != 0)
		return false;
	if (bits == 0)
		return true;
	mask = (uint8_t)(0xff << (8 - bits));
	return (c->bytes[full] & mask) == (p[full] & mask);
}

const char *
cidr_fmt(const struct cidr *c, char *out, size_t outlen)
{
	char	ip[INET6_ADDRSTRLEN];

	if ((c->family != AF_INET && c->family != AF_INET6) ||
	    inet_ntop(c->family, c->bytes, ip, sizeof(ip)) == NULL) {
		snprintf(out, outlen, "(family %d)", c->family);
		return out;
	}
	snprintf(out, outlen, "%s/%u", ip, c->prefix);
	return out;
}

void
addr_pack(struct addr_ip *p, const struct addr *a)
{
	memset(p, 0, sizeof(*p));
	if ((a->u.sa.sa_family == AF_INET || a->u.sa.sa_family == AF_INET6) &&
	    a->len <= sizeof(p->u)) {
		memcpy(&p->u, &a->u, a->len);
		p->len = a->len;
	}
}

/* Returns a, filled from p. */
const struct addr *
addr_unpack(const struct addr_ip *p, struct addr *a)
{
	memset(a, 0, sizeof(*a));
	memcpy(&a->u, &p->u, p->len);
	a->len = p->len;
	return a;
}

const char *
addr_ip_fmt(const struct addr_ip *p, char *out, size_t outlen)
{
	struct addr	 a;

	return addr_fmt(addr_unpack(p, &a), out, outlen);
}
