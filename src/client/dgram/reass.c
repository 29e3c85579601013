/*
 * Fragment reassembly (see reass.h).  Each datagram in progress keeps a
 * 64 KiB buffer and a bitmap of the 8-byte units received; a unit received
 * twice is an overlap and poisons the datagram: it stays in the table,
 * without its buffer, until its timeout so that its remaining fragments
 * are dropped instead of starting a new datagram.
 */
#include "config.h"

#include "client/dgram/reass.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "wire/pkt.h"

#define REASS_BUF	65536
#define REASS_UNITS	(REASS_BUF / 8)

struct reass_ent {
	bool		 used;
	bool		 dead;		/* poisoned: drop its fragments */
	bool		 has_total;	/* the last fragment arrived */
	bool		 has_first;	/* the fragment at offset 0 arrived */
	int		 family;
	uint8_t		 src[16], dst[16];
	uint32_t	 id;
	uint8_t		 proto;
	uint64_t	 start_ms;
	size_t		 total;
	size_t		 max_end;
	size_t		 units;
	uint8_t		*buf;
	uint8_t		 map[REASS_UNITS / 8];
};

struct reass {
	struct reass_ent	 ents[REASS_MAX];
	uint8_t			*done;	/* last completed buffer */
	struct reass_stats	 st;
};

struct reass *
reass_new(void)
{
	return calloc(1, sizeof(struct reass));
}

static void
reass_clear(struct reass_ent *e)
{
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

void
reass_free(struct reass *r)
{
	size_t	i;

	if (r == NULL)
		return;
	for (i = 0; i < REASS_MAX; i++)
		reass_clear(&r->ents[i]);
	free(r->done);
	free(r);
}

size_t
reass_expire(struct reass *r, uint64_t now_ms)
{
	struct reass_ent	*e;
	size_t			 i, left = 0;

	for (i = 0; i < REASS_MAX; i++) {
		e = &r->ents[i];
		if (!e->used)
			continue;
		if (now_ms - e->start_ms < REASS_TIMEOUT_MS) {
			left++;
			continue;
		}
		if (!e->dead)
			r->st.timeouts++;
		reass_clear(e);
	}
	return left;
}

static bool
reass_match(const struct reass_ent *e, const struct pkt_ip *ip)
{
	size_t	alen = ip->family == AF_INET ? 4 : 16;

	/* IPv4 keys on the protocol as well (RFC 791); IPv6 does not. */
	return e->used && e->family == ip->family && e->id == ip->frag_id &&
	    (ip->family == AF_INET6 || e->proto == ip->proto) &&
	    memcmp(e->src, ip->src, alen) == 0 &&
	    memcmp(e->dst, ip->dst, alen) == 0;
}

static struct reass_ent *
reass_find(struct reass *r, const struct pkt_ip *ip, uint64_t now_ms)
{
	struct reass_ent	*e, *free_ent = NULL, *oldest = NULL;
	size_t			 i;

	for (i = 0; i < REASS_MAX; i++) {
		e = &r->ents[i];
		if (reass_match(e, ip))
			return e;
		if (!e->used) {
			if (free_ent == NULL)
				free_ent = e;
		} else if (oldest == NULL || e->start_ms < oldest->start_ms)
			oldest = e;
	}
	if ((e = free_ent) == NULL) {
		if (!oldest->dead)
			r->st.evicted++;
		reass_clear(oldest);
		e = oldest;
	}
	if ((e->buf = malloc(REASS_BUF)) == NULL) {
		r->st.evicted++;
		return NULL;
	}
	e->used = true;
	e->family = ip->family;
	memcpy(e->src, ip->src, sizeof(e->src));
	memcpy(e->dst, ip->dst, sizeof(e->dst));
	e->id = ip->frag_id;
	e->proto = ip->proto;
	e->start_ms = now_ms;
	return e;
}

static int
reass_poison(struct reass *r, struct reass_ent *e)
{
	r->st.invalid++;
	free(e->buf);
	e->buf = NULL;
	e->dead = true;
	return -1;
}

/* Marks units [first, last); false on an overlap. */
static bool
reass_mark(struct reass_ent *e, size_t first, size_t last)
{
	size_t	u;

	for (u = first; u < last; u++)
		if (e->map[u / 8] & (1u << (u % 8)))
			return false;
	for (u = first; u < last; u++)
		e->map[u / 8] |= (uint8_t)(1u << (u % 8));
	e->units += last - first;
	return true;
}

int
reass_add(struct reass *r, struct pkt_ip *ip, uint64_t now_ms)
{
	struct reass_ent	*e;
	size_t			 off = ip->frag_off, n = ip->l4_len, end;

	free(r->done);
	r->done = NULL;
	reass_expire(r, now_ms);
	if ((e = reass_find(r, ip, now_ms)) == NULL)
		return -1;
	if (e->dead)
		return -1;
	end = off + n;
	if (end >= REASS_BUF || (ip->frag_more && (n == 0 || n % 8 != 0)))
		return reass_poison(r, e);
	if (!ip->frag_more) {
		if ((e->has_total && e->total != end) || e->max_end > end)
			return reass_poison(r, e);
		e->total = end;
		e->has_total = true;
	} else if (e->has_total && end > e->total)
		return reass_poison(r, e);
	if (!reass_mark(e, off / 8, (end + 7) / 8))
		return reass_poison(r, e);
	if (end > e->max_end)
		e->max_end = end;
	if (off == 0) {
		e->has_first = true;
		e->proto = ip->proto;	/* IPv6: the first fragment's says */
	}
	memcpy(e->buf + off, ip->l4, n);
	r->st.fragments++;
	if (!e->has_total || !e->has_first || e->units != (e->total + 7) / 8)
		return 0;
	r->st.completed++;
	r->done = e->buf;
	e->buf = NULL;
	ip->proto = e->proto;
	ip->l4 = r->done;
	ip->l4_len = e->total;
	ip->frag = false;
	ip->frag_more = false;
	ip->frag_off = 0;
	reass_clear(e);
	return 1;
}

const struct reass_stats *
reass_stats(const struct reass *r)
{
	return &r->st;
}
