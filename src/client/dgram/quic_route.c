/*
 * QUIC conversations and the domain their first Initial named
 * (quic_route.h): a chained hash table over a fixed pool.
 */
#include "config.h"

#include "client/dgram/quic_route.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "wire/sniff.h"

#define QR_BUCKETS	256		/* power of two */
#define QR_NONE		UINT16_MAX

struct qr_entry {
	bool			 used;
	uint8_t			 family;
	uint16_t		 sport, dport;
	uint8_t			 src[16], dst[16];
	uint16_t		 next;		/* bucket chain */
	uint64_t		 last_ms;
	bool			 routed;	/* decided at the first datagram */
	char			*domain;	/* routing name, NULL: none */
	char			*late;		/* found after the decision */
	struct sniff_quic	*pending;	/* a hello still arriving */
};

struct quic_route {
	uint16_t	 bucket[QR_BUCKETS];
	struct qr_entry	 e[QUIC_ROUTE_MAX];
	size_t		 n;
};

struct quic_route *
quic_route_new(void)
{
	struct quic_route	*qr;
	size_t			 i;

	if ((qr = calloc(1, sizeof(*qr))) == NULL)
		return NULL;
	for (i = 0; i < QR_BUCKETS; i++)
		qr->bucket[i] = QR_NONE;
	return qr;
}

static void
qr_clear(struct qr_entry *x)
{
	free(x->domain);
	free(x->late);
	sniff_quic_free(x->pending);
	x->domain = x->late = NULL;
	x->pending = NULL;
	x->routed = false;
}

void
quic_route_free(struct quic_route *qr)
{
	size_t i;

	if (qr == NULL)
		return;
	for (i = 0; i < QUIC_ROUTE_MAX; i++)
		qr_clear(&qr->e[i]);
	free(qr);
}

static size_t
qr_alen(int family)
{
	return family == AF_INET ? 4 : 16;
}

static unsigned
qr_hash(const struct quic_conv *c)
{
	size_t		i, n = qr_alen(c->family);
	uint32_t	h = 2166136261u ^ c->sport ^ (uint32_t)c->dport << 16;

	for (i = 0; i < n; i++) {
		h = (h ^ c->src[i]) * 16777619u;
		h = (h ^ c->dst[i]) * 16777619u;
	}
	return h & (QR_BUCKETS - 1);
}

static bool
qr_match(const struct qr_entry *x, const struct quic_conv *c)
{
	size_t n = qr_alen(c->family);

	return x->used && x->family == c->family && x->sport == c->sport &&
	    x->dport == c->dport && memcmp(x->src, c->src, n) == 0 &&
	    memcmp(x->dst, c->dst, n) == 0;
}

/* Unlinks entry i from its bucket. */
static void
qr_unlink(struct quic_route *qr, uint16_t i)
{
	struct qr_entry	*x = &qr->e[i];
	struct quic_conv c = { x->family, x->src, x->dst, x->sport, x->dport };
	uint16_t	*p = &qr->bucket[qr_hash(&c)];

	while (*p != QR_NONE && *p != i)
		p = &qr->e[*p].next;
	if (*p == i)
		*p = x->next;
	qr_clear(x);
	x->used = false;
	qr->n--;
}

/* A slot for a new conversation: a free one, else the least recently
 * used one, emptied. */
static uint16_t
qr_slot(struct quic_route *qr)
{
	uint16_t	i, old = 0;

	for (i = 0; i < QUIC_ROUTE_MAX; i++) {
		if (!qr->e[i].used)
			return i;
		if (qr->e[i].last_ms < qr->e[old].last_ms)
			old = i;
	}
	qr_unlink(qr, old);
	return old;
}

static struct qr_entry *
qr_get(struct quic_route *qr, const struct quic_conv *c, uint64_t now_ms,
    uint64_t idle_ms)
{
	unsigned	 b = qr_hash(c);
	uint16_t	 i;
	struct qr_entry	*x;

	for (i = qr->bucket[b]; i != QR_NONE; i = qr->e[i].next) {
		x = &qr->e[i];
		if (!qr_match(x, c))
			continue;
		if (now_ms - x->last_ms > idle_ms)
			qr_clear(x);	/* idle too long: a new one */
		return x;
	}
	i = qr_slot(qr);
	x = &qr->e[i];
	memset(x, 0, sizeof(*x));
	x->used = true;
	x->family = (uint8_t)c->family;
	x->sport = c->sport;
	x->dport = c->dport;
	memcpy(x->src, c->src, qr_alen(c->family));
	memcpy(x->dst, c->dst, qr_alen(c->family));
	x->next = qr->bucket[b];
	qr->bucket[b] = i;
	qr->n++;
	return x;
}

const char *
quic_route_domain(struct quic_route *qr, const struct quic_conv *c,
    const uint8_t *data, size_t len, uint64_t now_ms, uint64_t idle_ms,
    const char **found)
{
	char		 name[SNIFF_NAME_MAX + 1];
	struct qr_entry	*x;
	enum sniff_res	 r;

	*found = NULL;
	x = qr_get(qr, c, now_ms, idle_ms);
	x->last_ms = now_ms;
	if (x->routed && x->pending == NULL)
		return x->domain;
	if (x->pending == NULL && (x->pending = sniff_quic_new()) == NULL) {
		x->routed = true;
		return NULL;
	}
	r = sniff_quic_feed(x->pending, data, len, name, sizeof(name));
	if (r == SNIFF_MORE && !x->routed) {
		x->routed = true;	/* by address: it cannot wait */
		return NULL;
	}
	if (r == SNIFF_MORE)
		return x->domain;
	sniff_quic_free(x->pending);
	x->pending = NULL;
	if (r == SNIFF_FOUND) {
		if (!x->routed) {
			x->domain = strdup(name);
			*found = x->domain;
		} else if ((x->late = strdup(name)) != NULL)
			*found = x->late;
	}
	x->routed = true;
	return x->domain;
}
