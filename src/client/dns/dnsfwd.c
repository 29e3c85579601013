/*
 * Upstream choice and the answer cache (see dnsfwd.h).
 */
#include "config.h"

#include "client/dns/dnsfwd.h"

#include <sys/queue.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "wire/dns.h"

/* ---- upstreams ------------------------------------------------------------ */

static bool
dnsfwd_under(const char *name, const char *dom)
{
	size_t	n = strlen(name), d = strlen(dom);

	if (d == 0)		/* ".": every name */
		return true;
	if (n < d || strcmp(name + n - d, dom) != 0)
		return false;
	return n == d || name[n - d - 1] == '.';
}

int
dnsfwd_pick(const struct conf *c, const char *name)
{
	const struct conf_dns_upstream	*up;
	size_t				 i, j;

	for (i = 0; i < c->client.ndns_upstreams; i++) {
		up = &c->client.dns_upstreams[i];
		for (j = 0; j < up->ndomains; j++)
			if (dnsfwd_under(name, up->domains[j]))
				return (int)i;
	}
	return -1;
}

/* ---- the cache ------------------------------------------------------------ */

struct dnsfwd_entry {
	TAILQ_ENTRY(dnsfwd_entry) lru;		/* head: the latest used */
	struct dnsfwd_entry	*hnext;
	uint32_t		 hash;
	char			 name[DNS_TEXT_MAX];
	uint16_t		 type, class;
	uint64_t		 stored_ms, expires_ms;
	size_t			 len;
	uint8_t			 msg[];
};

TAILQ_HEAD(dnsfwd_lru, dnsfwd_entry);

struct dnsfwd_cache {
	unsigned		 size;
	uint32_t		 mask;		/* buckets - 1 */
	struct dnsfwd_entry	**bucket;
	struct dnsfwd_lru	 lru;
	struct dnsfwd_stats	 st;
};

static uint32_t
dnsfwd_hash(const char *name, uint16_t type, uint16_t class)
{
	uint32_t	h = 2166136261u;	/* FNV-1a */

	for (; *name != '\0'; name++)
		h = (h ^ (uint8_t)*name) * 16777619u;
	h = (h ^ type) * 16777619u;
	return (h ^ class) * 16777619u;
}

struct dnsfwd_cache *
dnsfwd_cache_new(unsigned size)
{
	struct dnsfwd_cache	*k;
	uint32_t		 n = 16;

	if (size == 0 || (k = calloc(1, sizeof(*k))) == NULL)
		return NULL;
	while (n < size && n < (1u << 30))
		n <<= 1;
	if ((k->bucket = calloc(n, sizeof(*k->bucket))) == NULL) {
		free(k);
		return NULL;
	}
	k->size = size;
	k->mask = n - 1;
	TAILQ_INIT(&k->lru);
	return k;
}

static void
dnsfwd_remove(struct dnsfwd_cache *k, struct dnsfwd_entry *e)
{
	struct dnsfwd_entry	**pp = &k->bucket[e->hash & k->mask];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	TAILQ_REMOVE(&k->lru, e, lru);
	k->st.entries--;
	free(e);
}

void
dnsfwd_cache_flush(struct dnsfwd_cache *k)
{
	if (k == NULL)
		return;
	while (!TAILQ_EMPTY(&k->lru))
		dnsfwd_remove(k, TAILQ_FIRST(&k->lru));
}

void
dnsfwd_cache_free(struct dnsfwd_cache *k)
{
	if (k == NULL)
		return;
	dnsfwd_cache_flush(k);
	free(k->bucket);
	free(k);
}

static struct dnsfwd_entry *
dnsfwd_find(struct dnsfwd_cache *k, const char *name, uint16_t type,
    uint16_t class, uint32_t h)
{
	struct dnsfwd_entry	*e;

	for (e = k->bucket[h & k->mask]; e != NULL; e = e->hnext)
		if (e->hash == h && e->type == type && e->class == class &&
		    strcmp(e->name, name) == 0)
			return e;
	return NULL;
}

size_t
dnsfwd_cache_get(struct dnsfwd_cache *k, const struct dns_query *q,
    uint64_t now_ms, uint8_t *out, size_t outlen)
{
	struct dnsfwd_entry	*e;
	uint32_t		 h;

	if (k == NULL)
		return 0;
	h = dnsfwd_hash(q->name, q->qtype, q->qclass);
	if (!q->plain ||
	    (e = dnsfwd_find(k, q->name, q->qtype, q->qclass, h)) == NULL)
		goto miss;
	if (now_ms >= e->expires_ms) {
		k->st.expired++;
		dnsfwd_remove(k, e);
		goto miss;
	}
	if (e->len > outlen)
		goto miss;
	memcpy(out, e->msg, e->len);
	out[0] = (uint8_t)(q->id >> 8);
	out[1] = (uint8_t)q->id;
	/* The question as the app wrote it (0x20 letter case): the same
	 * name, so the same length, uncompressed right after the header. */
	if (DNS_HDR_LEN + q->qname_len <= e->len)
		memcpy(out + DNS_HDR_LEN, q->qname, q->qname_len);
	if (dns_reply_age(e->msg, out, e->len,
	    (uint32_t)((now_ms - e->stored_ms) / 1000)) == -1)
		goto miss;
	TAILQ_REMOVE(&k->lru, e, lru);
	TAILQ_INSERT_HEAD(&k->lru, e, lru);
	k->st.hits++;
	return e->len;
miss:
	k->st.misses++;
	return 0;
}

void
dnsfwd_cache_put(struct dnsfwd_cache *k, const uint8_t *msg, size_t len,
    uint64_t now_ms)
{
	struct dns_reply	 r;
	struct dnsfwd_entry	*e;
	uint32_t		 ttl, h;

	if (k == NULL || len > DNSFWD_MSG_MAX ||
	    dns_reply_parse(msg, len, &r) == -1 || !r.q.plain ||
	    (r.q.flags & DNS_FLAG_TC) != 0 || DNS_OPCODE(r.q.flags) != 0)
		return;
	if (r.rcode == DNS_NOERROR && r.ancount > 0)
		ttl = r.min_ttl < DNSFWD_TTL_MAX ? r.min_ttl : DNSFWD_TTL_MAX;
	else if (r.rcode == DNS_NOERROR || r.rcode == DNS_NXDOMAIN)
		ttl = r.has_ttl && r.min_ttl < DNSFWD_NEG_TTL ? r.min_ttl :
		    DNSFWD_NEG_TTL;
	else
		return;
	if (ttl == 0)
		return;
	h = dnsfwd_hash(r.q.name, r.q.qtype, r.q.qclass);
	if ((e = dnsfwd_find(k, r.q.name, r.q.qtype, r.q.qclass, h)) != NULL)
		dnsfwd_remove(k, e);
	if (k->st.entries >= k->size) {
		k->st.evicted++;
		dnsfwd_remove(k, TAILQ_LAST(&k->lru, dnsfwd_lru));
	}
	if ((e = malloc(sizeof(*e) + len)) == NULL)
		return;
	memset(e, 0, sizeof(*e));
	e->hash = h;
	memcpy(e->name, r.q.name, sizeof(e->name));
	e->type = r.q.qtype;
	e->class = r.q.qclass;
	e->stored_ms = now_ms;
	e->expires_ms = now_ms + (uint64_t)ttl * 1000;
	e->len = len;
	memcpy(e->msg, msg, len);
	e->hnext = k->bucket[h & k->mask];
	k->bucket[h & k->mask] = e;
	TAILQ_INSERT_HEAD(&k->lru, e, lru);
	k->st.entries++;
	k->st.stored++;
}

const struct dnsfwd_stats *
dnsfwd_cache_stats(const struct dnsfwd_cache *k)
{
	static const struct dnsfwd_stats none;

	return k != NULL ? &k->st : &none;
}

/* ---- learnt names ---------------------------------------------------------- */

struct dnsfwd_name {
	int32_t		 next;		/* in its bucket, -1: end */
	int		 family;	/* 0: free */
	uint8_t		 ip[16];
	char		 name[DNS_TEXT_MAX];
};

struct dnsfwd_names {
	unsigned		 size, oldest;
	uint32_t		 mask;
	int32_t			*bucket;
	struct dnsfwd_name	*v;
};

static struct dnsfwd_names *dnsfwd_names_cur;	/* the loop thread's */
/* Workers (dnsfwd.h): worker 0's news, the others' look again. */
static void (*dnsfwd_on_learn)(const uint8_t *msg, size_t len);
static bool (*dnsfwd_on_miss)(void);

static uint32_t
dnsfwd_ip_hash(int family, const uint8_t *ip)
{
	uint32_t	h = 2166136261u;
	size_t		i, n = family == AF_INET ? 4 : 16;

	for (i = 0; i < n; i++)
		h = (h ^ ip[i]) * 16777619u;
	return h;
}

struct dnsfwd_names *
dnsfwd_names_new(unsigned size)
{
	struct dnsfwd_names	*t;
	uint32_t		 n = 16, i;

	if (size == 0 || (t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	while (n < size)
		n <<= 1;
	if ((t->bucket = malloc(n * sizeof(*t->bucket))) == NULL ||
	    (t->v = calloc(size, sizeof(*t->v))) == NULL) {
		free(t->bucket);
		free(t);
		return NULL;
	}
	for (i = 0; i < n; i++)
		t->bucket[i] = -1;
	t->size = size;
	t->mask = n - 1;
	return t;
}

void
dnsfwd_names_free(struct dnsfwd_names *t)
{
	if (t == NULL)
		return;
	if (dnsfwd_names_cur == t)
		dnsfwd_names_cur = NULL;
	free(t->bucket);
	free(t->v);
	free(t);
}

static int32_t *
dnsfwd_names_slot(const struct dnsfwd_names *t, int family, const uint8_t *ip)
{
	int32_t	*p = &t->bucket[dnsfwd_ip_hash(family, ip) & t->mask];

	while (*p >= 0 && !(t->v[*p].family == family &&
	    memcmp(t->v[*p].ip, ip, family == AF_INET ? 4 : 16) == 0))
		p = &t->v[*p].next;
	return p;
}

static void
dnsfwd_names_put(struct dnsfwd_names *t, int family, const uint8_t *ip,
    const char *name)
{
	struct dnsfwd_name	*e;
	int32_t			*p, i;

	p = dnsfwd_names_slot(t, family, ip);
	if (*p >= 0) {		/* known: unlinked, learnt anew below */
		i = *p;
		*p = t->v[i].next;
		t->v[i].family = 0;
	}
	i = (int32_t)(t->oldest++ % t->size);
	e = &t->v[i];
	if (e->family != 0) {	/* the oldest goes */
		p = dnsfwd_names_slot(t, e->family, e->ip);
		*p = e->next;
	}
	memset(e, 0, sizeof(*e));
	e->family = family;
	memcpy(e->ip, ip, family == AF_INET ? 4 : 16);
	snprintf(e->name, sizeof(e->name), "%s", name);
	p = &t->bucket[dnsfwd_ip_hash(family, ip) & t->mask];
	e->next = *p;
	*p = i;
}

void
dnsfwd_names_learn(struct dnsfwd_names *t, const uint8_t *msg, size_t len)
{
	struct dns_reply	r;
	unsigned		i;

	if (t == NULL || dns_reply_parse(msg, len, &r) == -1 || !r.q.plain ||
	    r.rcode != DNS_NOERROR)
		return;
	for (i = 0; i < r.naddrs; i++)
		dnsfwd_names_put(t, r.addrs[i].family, r.addrs[i].ip,
		    r.q.name);
	if (r.naddrs > 0 && dnsfwd_on_learn != NULL)
		dnsfwd_on_learn(msg, len);
}

void
dnsfwd_names_hooks(void (*on_learn)(const uint8_t *msg, size_t len),
    bool (*on_miss)(void))
{
	dnsfwd_on_learn = on_learn;
	dnsfwd_on_miss = on_miss;
}

const char *
dnsfwd_names_find(const struct dnsfwd_names *t, int family,
    const uint8_t *ip)
{
	int32_t	i;

	if (family != AF_INET && family != AF_INET6)
		return NULL;
	i = t != NULL ? *dnsfwd_names_slot(t, family, ip) : -1;
	/* News from worker 0 taken in (perhaps the first, making the
	 * table): look again. */
	if (i < 0 && dnsfwd_on_miss != NULL && dnsfwd_on_miss()) {
		if (t == NULL)
			t = dnsfwd_names_cur;
		i = t != NULL ? *dnsfwd_names_slot(t, family, ip) : -1;
	}
	return i >= 0 ? t->v[i].name : NULL;
}

void
dnsfwd_names_use(struct dnsfwd_names *t)
{
	dnsfwd_names_cur = t;
}

const struct dnsfwd_names *
dnsfwd_names_used(void)
{
	return dnsfwd_names_cur;
}
