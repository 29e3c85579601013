/* Socket addresses, "host:port" strings and CIDR prefixes. */
#ifndef TUNSPLIT_ADDR_H
#define TUNSPLIT_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

struct addr {
	union {
		struct sockaddr		sa;
		struct sockaddr_in	sin;
		struct sockaddr_in6	sin6;
		struct sockaddr_storage	ss;
	} u;
	socklen_t len;
};

/* An IPv4 or IPv6 address with its port, as kept per flow: 32 bytes
 * where struct addr takes 136 (its sockaddr_storage).  addr_pack
 * stores a (len 0 for any other family), addr_unpack gives it back. */
struct addr_ip {
	union {
		struct sockaddr		sa;
		struct sockaddr_in	sin;
		struct sockaddr_in6	sin6;
	} u;
	socklen_t len;
};

struct cidr {
	int	 family;	/* AF_INET or AF_INET6 */
	uint8_t	 bytes[16];
	uint8_t	 prefix;
};

#define ADDR_STRLEN	(INET6_ADDRSTRLEN + 8)

/* "1.2.3.4:80", "[::1]:443"; numeric only.  0 or -1. */
int  addr_parse(struct addr *a, const char *s);
/* Numeric address without port; port set separately. */
int  addr_from_ip(struct addr *a, const char *ip, uint16_t port);
void addr_from_raw(struct addr *a, int family, const void *ip, uint16_t port);
uint16_t addr_port(const struct addr *a);
int  addr_family(const struct addr *a);
const void *addr_ip(const struct addr *a, size_t *len);	/* 4 or 16 bytes */
/* "1.2.3.4:80" / "[::1]:443" into out (ADDR_STRLEN). */
const char *addr_fmt(const struct addr *a, char *out, size_t outlen);
bool addr_eq(const struct addr *a, const struct addr *b);
void addr_pack(struct addr_ip *p, const struct addr *a);
const struct addr *addr_unpack(const struct addr_ip *p, struct addr *a);
/* addr_fmt of p. */
const char *addr_ip_fmt(const struct addr_ip *p, char *out, size_t outlen);

/* "10.0.0.0/8", "fd00::/8", or a bare address (full length).  0 or -1. */
int  cidr_parse(struct cidr *c, const char *s);
bool cidr_match(const struct cidr *c, int family, const void *ip);
const char *cidr_fmt(const struct cidr *c, char *out, size_t outlen);

#endif
