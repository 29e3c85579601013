/*
 * Fuzz target: the DNS query parser and answer builder (dns.h), which the
 * client runs on whatever an app (or a LAN host, on a router) sends to
 * port 53 when dns.mode is fake-ip.  The input is one UDP payload.
 *
 * Oracles besides ASan/UBSan:
 *  - a query is judged whole: no strict prefix of an accepted query is
 *    accepted (the counts fix its length);
 *  - the text name has at most 253 characters, and a plain one only
 *    lower-case letters, digits, '-', '_' and single dots between them;
 *  - round trip: every answer to an accepted query (an address when its
 *    type is A or AAAA, each rcode) parses back, once its QR bit is
 *    cleared, as a query with the same id, question and EDNS presence;
 *    an answer never needs more than DNS_ANSWER_MAX bytes, and one byte
 *    less than it needs is refused, never overrun;
 *  - the same bytes as an upstream's reply (the client's DNS cache reads
 *    those): a reply is judged whole like a query; aging it by 0
 *    changes no byte, aging it by a seconds leaves, when it still
 *    parses (a later name may point into a TTL), a reply whose least
 *    TTL is the old one less a (0 at least), with the same question
 *    and addresses.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/dns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "fuzz_dns: %s:%d: %s\n", __FILE__,	\
		    __LINE__, #cond);					\
		abort();						\
	}								\
} while (0)

static int
fz_parse_copy(const uint8_t *in, size_t len, struct dns_query *q)
{
	uint8_t *copy;
	int r;

	if ((copy = malloc(len > 0 ? len : 1)) == NULL)
		abort();
	memcpy(copy, in, len);
	r = dns_query_parse(copy, len, q);
	free(copy);
	return r;
}

static void
fz_check_name(const struct dns_query *q)
{
	size_t n = strlen(q->name), i;

	FZ_CHECK(n <= 253);
	FZ_CHECK(q->qname_len >= 1 && q->qname_len <= DNS_NAME_MAX);
	if (!q->plain)
		return;
	FZ_CHECK(n > 0 && q->name[0] != '.' && q->name[n - 1] != '.');
	for (i = 0; i < n; i++) {
		char c = q->name[i];

		FZ_CHECK((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || (c == '.' && q->name[i + 1] != '.'));
	}
}

static void
fz_answer(const struct dns_query *q, int rcode, bool with_addr)
{
	static const uint8_t addr[16] = { 198, 19, 0, 1 };
	uint8_t out[DNS_ANSWER_MAX + 8];
	struct dns_query back;
	size_t alen = q->qtype == DNS_TYPE_AAAA ? 16 : 4;
	const uint8_t *a = with_addr ? addr : NULL;
	ssize_t n;

	n = dns_answer(out, sizeof(out), q, rcode, a, alen, 1);
	if (rcode > 15 && !q->has_opt) {
		FZ_CHECK(n == -1);
		return;
	}
	FZ_CHECK(n > 0 && (size_t)n <= DNS_ANSWER_MAX);
	FZ_CHECK(dns_answer(out, (size_t)n - 1, q, rcode, a, alen, 1) == -1);
	FZ_CHECK((out[2] & 0x80) != 0);
	out[2] &= 0x7f;
	FZ_CHECK(fz_parse_copy(out, (size_t)n, &back) == 0);
	FZ_CHECK(back.id == q->id && back.qtype == q->qtype &&
	    back.qclass == q->qclass && back.qname_len == q->qname_len &&
	    memcmp(back.qname, q->qname, q->qname_len) == 0 &&
	    strcmp(back.name, q->name) == 0 && back.plain == q->plain &&
	    back.has_opt == q->has_opt);
	FZ_CHECK((out[3] & 0xf) == (rcode & 0xf));
}

static int
fz_reply_copy(const uint8_t *in, size_t len, struct dns_reply *r)
{
	uint8_t *copy;
	int rc;

	if ((copy = malloc(len > 0 ? len : 1)) == NULL)
		abort();
	memcpy(copy, in, len);
	rc = dns_reply_parse(copy, len, r);
	free(copy);
	return rc;
}

static void
fz_reply(const uint8_t *data, size_t size)
{
	struct dns_reply r, back;
	uint8_t *copy;
	uint32_t age = size > 0 ? data[size - 1] * 1000u : 7;
	size_t l;

	if (fz_reply_copy(data, size, &r) != 0)
		return;
	fz_check_name(&r.q);
	FZ_CHECK(r.naddrs <= DNS_REPLY_ADDRS && r.rcode <= 15);
	for (l = 0; l < size; l++)
		FZ_CHECK(fz_reply_copy(data, l, &back) == -1);
	if ((copy = malloc(size)) == NULL)
		abort();
	memcpy(copy, data, size);
	FZ_CHECK(dns_reply_age(data, copy, size, 0) == 0);
	FZ_CHECK(memcmp(copy, data, size) == 0);
	FZ_CHECK(dns_reply_age(data, copy, size, age) == 0);
	/* A later name may point into a TTL, and read otherwise now. */
	if (fz_reply_copy(copy, size, &back) != 0) {
		free(copy);
		return;
	}
	FZ_CHECK(back.has_ttl == r.has_ttl && back.naddrs == r.naddrs &&
	    back.rcode == r.rcode && back.ancount == r.ancount &&
	    strcmp(back.q.name, r.q.name) == 0 &&
	    memcmp(back.addrs, r.addrs, sizeof(r.addrs)) == 0);
	if (r.has_ttl)
		FZ_CHECK(back.min_ttl == (r.min_ttl > age ? r.min_ttl - age :
		    0));
	free(copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dns_query q, p;
	size_t l;

	if (size > 2048)
		return 0;
	fz_reply(data, size);
	if (fz_parse_copy(data, size, &q) != 0)
		return 0;
	fz_check_name(&q);
	for (l = 0; l < size; l++)
		FZ_CHECK(fz_parse_copy(data, l, &p) == -1);
	if (q.qtype == DNS_TYPE_A || q.qtype == DNS_TYPE_AAAA)
		fz_answer(&q, 0, true);
	fz_answer(&q, 0, false);
	fz_answer(&q, 3, false);
	fz_answer(&q, 5, false);
	fz_answer(&q, 16, false);
	return 0;
}
