/*
 * DNS messages (RFC 1035, EDNS from RFC 6891), only what a stub resolver's
 * query and the answer to it need: a pure codec, no I/O, for hostile
 * input.
 *
 *   header    ID(2) FLAGS(2) QDCOUNT ANCOUNT NSCOUNT ARCOUNT (2 each)
 *   question  QNAME QTYPE(2) QCLASS(2)
 *   RR        NAME TYPE(2) CLASS(2) TTL(4) RDLENGTH(2) RDATA
 *   OPT       an RR in the additional section: NAME root, TYPE 41,
 *             CLASS = the sender's UDP payload size, TTL = extended RCODE,
 *             VERSION, DO flag and zero bits
 *
 * dns_query_parse reads a query with exactly one question and walks every
 * record after it, bounds-checked: names may use compression, but each
 * pointer must point before the one that led to it (so no loop can be
 * built), a name is at most 255 bytes, a label at most 63; counts are
 * judged against the bytes that are there, never trusted to size
 * anything.  dns_answer builds the reply to a parsed query: the question
 * echoed, one A or AAAA record (or none), and an OPT record when the query
 * had one.
 */
#ifndef TUNSPLIT_DNS_H
#define TUNSPLIT_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DNS_HDR_LEN		12
#define DNS_NAME_MAX		255	/* wire form, with the root label */
#define DNS_TEXT_MAX		254	/* dotted, no final dot, NUL */
#define DNS_UDP_PAYLOAD		1232	/* what our OPT offers */
#define DNS_ANSWER_MAX		(DNS_HDR_LEN + DNS_NAME_MAX + 4 + \
				 2 + 10 + 16 + 11)

#define DNS_TYPE_A		1
#define DNS_TYPE_AAAA		28
#define DNS_TYPE_OPT		41
#define DNS_CLASS_IN		1

#define DNS_FLAG_QR		0x8000
#define DNS_FLAG_AA		0x0400
#define DNS_FLAG_TC		0x0200
#define DNS_FLAG_RD		0x0100
#define DNS_FLAG_RA		0x0080
#define DNS_OPCODE(flags)	(((flags) >> 11) & 0xf)

enum dns_rcode {
	DNS_NOERROR = 0, DNS_FORMERR = 1, DNS_SERVFAIL = 2, DNS_NXDOMAIN = 3,
	DNS_NOTIMP = 4, DNS_REFUSED = 5,
	DNS_BADVERS = 16,	/* extended: needs the query's OPT */
};

struct dns_query {
	uint16_t	 id;
	uint16_t	 flags;		/* as sent */
	uint16_t	 qtype, qclass;
	/* The question's name: wire form without compression, and text:
	 * labels lower-cased and joined by dots, "" for the root.  plain:
	 * every label non-empty and of letters, digits, '-' and '_' only,
	 * so that the text names the same labels (no dot or NUL inside). */
	uint8_t		 qname[DNS_NAME_MAX];
	size_t		 qname_len;
	char		 name[DNS_TEXT_MAX];
	bool		 plain;
	/* EDNS: the query's OPT record, if it had one. */
	bool		 has_opt;
	uint16_t	 opt_size;	/* its UDP payload size */
	uint8_t		 opt_version;
	bool		 opt_do;
};

/* 0 for a query (QR clear) with one question; -1 for anything else or
 * anything malformed: truncated, bad names, counts the bytes cannot hold,
 * bytes left over, two OPT records or one not in the additional section
 * or not named root. */
int dns_query_parse(const uint8_t *msg, size_t len, struct dns_query *q);

/*
 * The reply to q: flags QR, RA, the query's opcode and RD; rcode (for
 * DNS_BADVERS only with the query's OPT); the question echoed; when addr
 * is not NULL one answer of the question's name, type and class with ttl
 * and alen (4 or 16) bytes of addr; our OPT when the query had one.
 * Returns the length, or -1 when out is too small (DNS_ANSWER_MAX always
 * is enough) or the arguments do not fit together.
 */
ssize_t dns_answer(uint8_t *out, size_t outlen, const struct dns_query *q,
    int rcode, const uint8_t *addr, size_t alen, uint32_t ttl);

/*
 * An upstream's reply (QR set, one question), walked the same way: its
 * question in q (q.has_opt and the opt_ fields are not read), rcode (the
 * header's 4 bits), ANCOUNT, and the least TTL of every record but OPT.
 */
#define DNS_REPLY_ADDRS		16

struct dns_reply {
	struct dns_query q;
	unsigned	 rcode;
	unsigned	 ancount;
	bool		 has_ttl;	/* any record but OPT */
	uint32_t	 min_ttl;
	/* The first DNS_REPLY_ADDRS addresses of class IN A and AAAA
	 * records of the answer section (whatever their owner: a CNAME's
	 * target's too), each 4 or 16 bytes. */
	unsigned	 naddrs;
	struct {
		int		 family;	/* AF_INET or AF_INET6 */
		uint8_t		 ip[16];
	}		 addrs[DNS_REPLY_ADDRS];
};

int dns_reply_parse(const uint8_t *msg, size_t len, struct dns_reply *r);
/* out, a copy of in's len bytes: each record's TTL but OPT's lowered by
 * age (0 at least), in is only read.  0, or -1 when malformed. */
int dns_reply_age(const uint8_t *in, uint8_t *out, size_t len,
    uint32_t age);

#endif
