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
	uint8_t			*held[QUIC_ROUTE_HOLD];	/* until routed */
	size_t			 held_len[QUIC_ROUTE_HOLD];
	size_t			 nheld;
	uint64_t		 hold_until;
};

struct quic_route {
	uint16_t	 bucket[QR_BUCKETS];
	struct qr_entry	 e[QUIC_ROUTE_MAX];
	size_t		 n;
	size_t		 nholding;	/* entries with datagrams held */
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
qr_drop_held(struct quic_route *qr, struct qr_entry *x)
{
	size_t i;

	if (x->nheld > 0)
		qr->nholding--;
	for (i = 0; i < x->nheld; i++)
		free(x->held[i]);
	x->nheld = 0;
}

static void
qr_clear(struct quic_route *qr, struct qr_entry *x)
{
	qr_drop_held(qr, x);
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
		qr_clear(qr, &qr->e[i]);
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
	qr_clear(qr, x);
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
			qr_clear(qr, x);	/* idle too long: a new one */
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

static void
qr_conv(const struct qr_entry *x, struct quic_conv *c)
{
	c->family = x->family;
	c->src = x->src;
	c->dst = x->dst;
	c->sport = x->sport;
	c->dport = x->dport;
}

/* The held datagrams go, in order, routed as the conversation is. */
static void
qr_release(struct quic_route *qr, struct qr_entry *x, quic_route_send_fn send,
    void *arg)
{
	struct quic_conv	c;
	size_t			i;

	qr_conv(x, &c);
	for (i = 0; i < x->nheld; i++)
		send(arg, &c, x->held[i], x->held_len[i], x->domain);
	qr_drop_held(qr, x);
}

/* Keeps a copy of data; false when it cannot (too many, too long). */
static bool
qr_hold(struct quic_route *qr, struct qr_entry *x, const uint8_t *data,
    size_t len, uint64_t until)
{
	uint8_t *copy;

	if (x->nheld == QUIC_ROUTE_HOLD || len > QUIC_ROUTE_HOLD_LEN ||
	    (copy = malloc(len > 0 ? len : 1)) == NULL)
		return false;
	memcpy(copy, data, len);
	if (x->nheld == 0) {
		qr->nholding++;
		x->hold_until = until;
	}
	x->held[x->nheld] = copy;
	x->held_len[x->nheld++] = len;
	return true;
}

int
quic_route_datagram(struct quic_route *qr, const struct quic_conv *c,
    const uint8_t *data, size_t len, uint64_t now_ms, uint64_t idle_ms,
    uint64_t hold_ms, const char **domain, const char **found,
    quic_route_send_fn send, void *arg)
{
	char		 name[SNIFF_NAME_MAX + 1];
	struct qr_entry	*x;
	enum sniff_res	 r;

	*found = *domain = NULL;
	x = qr_get(qr, c, now_ms, idle_ms);
	x->last_ms = now_ms;
	if (x->routed && x->pending == NULL) {
		*domain = x->domain;
		return 0;
	}
	if (x->pending == NULL && (x->pending = sniff_quic_new()) == NULL) {
		x->routed = true;
		qr_release(qr, x, send, arg);
		return 0;
	}
	r = sniff_quic_feed(x->pending, data, len, name, sizeof(name));
	if (r == SNIFF_MORE && !x->routed) {
		if (qr_hold(qr, x, data, len, now_ms + hold_ms))
			return 1;		/* the hello is not whole */
		x->routed = true;		/* cannot wait: by address */
		qr_release(qr, x, send, arg);
		return 0;
	}
	if (r == SNIFF_MORE) {
		*domain = x->domain;
		return 0;
	}
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
	qr_release(qr, x, send, arg);
	*domain = x->domain;
	return 0;
}

uint64_t
quic_route_expire(struct quic_route *qr, uint64_t now_ms,
    quic_route_send_fn send, void *arg)
{
	struct qr_entry	*x;
	uint64_t	 next = 0;
	size_t		 i;

	for (i = 0; i < QUIC_ROUTE_MAX && qr->nholding > 0; i++) {
		x = &qr->e[i];
		if (!x->used || x->nheld == 0)
			continue;
		if (now_ms >= x->hold_until) {
			x->routed = true;	/* by address; the name, late */
			qr_release(qr, x, send, arg);
		} else if (next == 0 || x->hold_until < next)
			next = x->hold_until;
	}
	return next;
}
