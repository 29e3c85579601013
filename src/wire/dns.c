/*
 * DNS queries and the answers to them (see dns.h).
 */
#include "config.h"

#include "wire/dns.h"

#include <string.h>
#include <sys/socket.h>

#define DNS_PTR		0xc0
#define DNS_RR_FIXED	10	/* TYPE CLASS TTL RDLENGTH */

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint8_t *
put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return p + 2;
}

static uint8_t *
put32(uint8_t *p, uint32_t v)
{
	p = put16(p, v >> 16);
	return put16(p, v & 0xffff);
}

/*
 * The name at m[off..]: its uncompressed wire form into out (when not
 * NULL) and its length, or -1.  *next is where the record goes on: after
 * the first pointer, or after the root label.  Every pointer must point
 * below the one before it (the first: below the name's start) and past
 * the header, so a chain of them ends.
 */
static int
dns_name_read(const uint8_t *m, size_t len, size_t off, size_t *next,
    uint8_t *out)
{
	size_t	pos = off, limit = off, wlen = 0, to;
	bool	jumped = false;
	uint8_t	b;

	for (;;) {
		if (pos >= len)
			return -1;
		b = m[pos];
		if ((b & DNS_PTR) == DNS_PTR) {
			if (pos + 1 >= len)
				return -1;
			to = (size_t)(b & 0x3f) << 8 | m[pos + 1];
			if (to >= limit || to < DNS_HDR_LEN)
				return -1;
			if (!jumped)
				*next = pos + 2;
			jumped = true;
			pos = limit = to;
			continue;
		}
		if ((b & DNS_PTR) != 0)		/* 0x40, 0x80: not defined */
			return -1;
		if (pos + 1 + b > len || wlen + 1 + b > DNS_NAME_MAX)
			return -1;
		if (out != NULL)
			memcpy(out + wlen, m + pos, 1 + (size_t)b);
		wlen += 1 + (size_t)b;
		pos += 1 + (size_t)b;
		if (b == 0)
			break;
	}
	if (!jumped)
		*next = pos;
	return (int)wlen;
}

static bool
dns_plain_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	    c == '-' || c == '_';
}

/* Wire form to text, lower-cased; q->plain says whether it is exact. */
static void
dns_name_text(struct dns_query *q)
{
	const uint8_t	*w = q->qname;
	size_t		 i = 0, o = 0, n, k;
	uint8_t		 c;

	q->plain = true;
	while ((n = w[i]) != 0) {
		if (o > 0)
			q->name[o++] = '.';
		for (k = 1; k <= n; k++) {
			c = w[i + k];
			if (c >= 'A' && c <= 'Z')
				c = (uint8_t)(c - 'A' + 'a');
			if (!dns_plain_char(c)) {
				q->plain = false;
				c = '?';
			}
			q->name[o++] = (char)c;
		}
		i += 1 + n;
	}
	q->name[o] = '\0';
	if (o == 0)
		q->plain = false;	/* the root is no host */
}

/* One resource record at *pos, moved past it; its type, class, TTL and
 * whether its name is the root.  0 or -1. */
static int
dns_rr_at(const uint8_t *m, size_t len, size_t *pos, uint16_t *type,
    uint16_t *class, uint32_t *ttl, bool *root, size_t *ttl_at)
{
	size_t	next = 0, rdlen;
	int	n;

	if ((n = dns_name_read(m, len, *pos, &next, NULL)) < 0)
		return -1;
	*root = n == 1 && next == *pos + 1;
	if (len - next < DNS_RR_FIXED)
		return -1;
	*type = get16(m + next);
	*class = get16(m + next + 2);
	*ttl = (uint32_t)get16(m + next + 4) << 16 | get16(m + next + 6);
	*ttl_at = next + 4;
	rdlen = get16(m + next + 8);
	next += DNS_RR_FIXED;
	if (len - next < rdlen)
		return -1;
	*pos = next + rdlen;
	return 0;
}

static int
dns_rr_skip(const uint8_t *m, size_t len, size_t *pos, uint16_t *type,
    uint16_t *class, uint32_t *ttl, bool *root)
{
	size_t	at;

	return dns_rr_at(m, len, pos, type, class, ttl, root, &at);
}

int
dns_query_parse(const uint8_t *msg, size_t len, struct dns_query *q)
{
	size_t		 pos, next = 0;
	unsigned	 nrr, i;
	uint16_t	 type, class;
	uint32_t	 ttl;
	bool		 root;
	int		 n;

	memset(q, 0, sizeof(*q));
	if (msg == NULL || len < DNS_HDR_LEN)
		return -1;
	q->id = get16(msg);
	q->flags = get16(msg + 2);
	if ((q->flags & DNS_FLAG_QR) != 0 || get16(msg + 4) != 1)
		return -1;
	if ((n = dns_name_read(msg, len, DNS_HDR_LEN, &next, q->qname)) < 0 ||
	    len - next < 4)
		return -1;
	q->qname_len = (size_t)n;
	dns_name_text(q);
	q->qtype = get16(msg + next);
	q->qclass = get16(msg + next + 2);
	pos = next + 4;
	/* Answer and authority: skipped, and no OPT may be there. */
	nrr = (unsigned)get16(msg + 6) + get16(msg + 8);
	for (i = 0; i < nrr; i++)
		if (dns_rr_skip(msg, len, &pos, &type, &class, &ttl,
		    &root) == -1 || type == DNS_TYPE_OPT)
			return -1;
	nrr = get16(msg + 10);
	for (i = 0; i < nrr; i++) {
		if (dns_rr_skip(msg, len, &pos, &type, &class, &ttl,
		    &root) == -1)
			return -1;
		if (type != DNS_TYPE_OPT)
			continue;
		if (q->has_opt || !root)
			return -1;
		q->has_opt = true;
		q->opt_size = class;
		q->opt_version = (uint8_t)(ttl >> 16);
		q->opt_do = (ttl & 0x8000) != 0;
	}
	return pos == len ? 0 : -1;
}

ssize_t
dns_answer(uint8_t *out, size_t outlen, const struct dns_query *q,
    int rcode, const uint8_t *addr, size_t alen, uint32_t ttl)
{
	uint8_t		*p = out;
	size_t		 need;
	unsigned	 flags;

	if (rcode < 0 || rcode > 0xfff || (rcode > 0xf && !q->has_opt) ||
	    q->qname_len < 1 || q->qname_len > DNS_NAME_MAX)
		return -1;
	if (addr != NULL && !((alen == 4 && q->qtype == DNS_TYPE_A) ||
	    (alen == 16 && q->qtype == DNS_TYPE_AAAA)))
		return -1;
	need = DNS_HDR_LEN + q->qname_len + 4 +
	    (addr != NULL ? 2 + DNS_RR_FIXED + alen : 0) +
	    (q->has_opt ? 1 + DNS_RR_FIXED : 0);
	if (outlen < need)
		return -1;
	flags = DNS_FLAG_QR | DNS_FLAG_RA | (q->flags & 0x7800) |
	    (q->flags & DNS_FLAG_RD) | ((unsigned)rcode & 0xf);
	p = put16(p, q->id);
	p = put16(p, flags);
	p = put16(p, 1);
	p = put16(p, addr != NULL ? 1 : 0);
	p = put16(p, 0);
	p = put16(p, q->has_opt ? 1 : 0);
	memcpy(p, q->qname, q->qname_len);
	p += q->qname_len;
	p = put16(p, q->qtype);
	p = put16(p, q->qclass);
	if (addr != NULL) {
		p = put16(p, DNS_PTR << 8 | DNS_HDR_LEN);
		p = put16(p, q->qtype);
		p = put16(p, q->qclass);
		p = put32(p, ttl);
		p = put16(p, (unsigned)alen);
		memcpy(p, addr, alen);
		p += alen;
	}
	if (q->has_opt) {
		*p++ = 0;
		p = put16(p, DNS_TYPE_OPT);
		p = put16(p, DNS_UDP_PAYLOAD);
		p = put32(p, (uint32_t)(rcode >> 4) << 24);	/* version 0 */
		p = put16(p, 0);
	}
	return p - out;
}

/* A reply: its question, and every record after it, their least TTL
 * (OPT's is no TTL); with rw, each TTL lowered by age in rw (a copy of
 * msg: only msg is read, so a name that points into a TTL reads the
 * same while the TTLs change).  0, or -1 when malformed. */
static int
dns_reply_walk(const uint8_t *msg, size_t len, struct dns_reply *r,
    uint8_t *rw, uint32_t age)
{
	size_t		 pos, next = 0, at, rdlen;
	unsigned	 nrr, i;
	uint16_t	 type, class;
	uint32_t	 ttl;
	bool		 root;
	int		 n;

	memset(r, 0, sizeof(*r));
	if (msg == NULL || len < DNS_HDR_LEN)
		return -1;
	r->q.id = get16(msg);
	r->q.flags = get16(msg + 2);
	if ((r->q.flags & DNS_FLAG_QR) == 0 || get16(msg + 4) != 1)
		return -1;
	if ((n = dns_name_read(msg, len, DNS_HDR_LEN, &next, r->q.qname)) < 0 ||
	    len - next < 4)
		return -1;
	r->q.qname_len = (size_t)n;
	dns_name_text(&r->q);
	r->q.qtype = get16(msg + next);
	r->q.qclass = get16(msg + next + 2);
	r->rcode = r->q.flags & 0xf;
	r->ancount = get16(msg + 6);
	pos = next + 4;
	nrr = (unsigned)get16(msg + 6) + get16(msg + 8) + get16(msg + 10);
	for (i = 0; i < nrr; i++) {
		if (dns_rr_at(msg, len, &pos, &type, &class, &ttl, &root,
		    &at) == -1)
			return -1;
		if (type == DNS_TYPE_OPT)
			continue;
		/* The record's data is the last rdlen bytes before pos. */
		rdlen = (size_t)get16(msg + at + 4);
		if (i < r->ancount && class == DNS_CLASS_IN &&
		    r->naddrs < DNS_REPLY_ADDRS &&
		    ((type == DNS_TYPE_A && rdlen == 4) ||
		    (type == DNS_TYPE_AAAA && rdlen == 16))) {
			r->addrs[r->naddrs].family = rdlen == 4 ? AF_INET :
			    AF_INET6;
			memcpy(r->addrs[r->naddrs].ip, msg + pos - rdlen,
			    rdlen);
			r->naddrs++;
		}
		if (!r->has_ttl || ttl < r->min_ttl)
			r->min_ttl = ttl;
		r->has_ttl = true;
		if (rw != NULL)
			(void)put32(rw + at, ttl > age ? ttl - age : 0);
	}
	return pos == len ? 0 : -1;
}

int
dns_reply_parse(const uint8_t *msg, size_t len, struct dns_reply *r)
{
	return dns_reply_walk(msg, len, r, NULL, 0);
}

int
dns_reply_age(const uint8_t *in, uint8_t *out, size_t len, uint32_t age)
{
	struct dns_reply	r;

	return dns_reply_walk(in, len, &r, out, age);
}
