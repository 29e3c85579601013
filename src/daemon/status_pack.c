/*
 * A status snapshot as bytes, so that it can cross from one of the
 * client's worker processes to worker 0 (status.h).  status_merge.c adds
 * the unpacked snapshots up.
 *
 * One walk over every field serves three modes: measuring (how many
 * bytes), packing (into a buffer of exactly that size) and unpacking.
 * Each field is named once, so the two ends cannot disagree on the order
 * or the width of a field.  A field's bytes are its host-order value: both
 * ends are the same executable on the same machine (forked), and the
 * header carries the format version and sizeof(struct status) to catch
 * anything else.  Strings travel as bytes with a length, never as
 * pointers; a bool as one byte that must be 0 or 1.
 *
 * Unpacking trusts nothing: every read is bounded by what is left of the
 * buffer; an array's length must fit in what is left at the fewest bytes
 * its element can take (measured from a zeroed element), so a corrupt
 * length fails before anything is allocated for it; what the renderers
 * index by a count (the DNS upstreams' counters) must be as long as that
 * count; and the buffer must end where the walk ends.  Any failure
 * leaves *out zeroed and nothing allocated.  What is accepted is what
 * packing makes (no NUL inside a string, a bool 0 or 1), so packing an
 * unpacked snapshot gives back the same bytes.
 *
 * What unpacking makes is owned by one struct status_blob: an arena for
 * the strings (no larger than the buffer: a string of n bytes takes at
 * least n + 5 of it and n + 1 of the arena) and the arrays.
 */
#include "config.h"

#include "daemon/status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"

#define STATUS_PACK_MAGIC	0x54537331u	/* "TSs1" */
#define STATUS_PACK_VERSION	1u
#define STATUS_BLOB_ALLOCS	12		/* the arrays a snapshot has */

enum codec_mode { CODEC_MEASURE, CODEC_PACK, CODEC_UNPACK };

struct codec {
	enum codec_mode		 mode;
	bool			 failed;
	bool			 nomem;
	uint8_t			*out;	/* pack: cap bytes */
	size_t			 cap;
	const uint8_t		*in;	/* unpack: len bytes */
	size_t			 len;	/* measure, pack: written so far */
	size_t			 off;	/* unpack: read so far */
	struct status_blob	*blob;	/* unpack: owns what is made */
};

struct status_blob {
	char			*arena;		/* the strings */
	size_t			 arena_used, arena_size;
	void			*allocs[STATUS_BLOB_ALLOCS];	/* arrays */
	size_t			 nallocs;
};

/* One element of any array, for a copy to walk or a zeroed one to
 * measure. */
union codec_elem {
	struct status_rule		 rule;
	struct status_outbound		 ob;
	struct status_flow		 flow;
	struct conf_dns_upstream	 dns;
	uint64_t			 u64;
};

typedef void codec_elem_fn(struct codec *c, void *elem);

/* ---- fields ----------------------------------------------------------- */

static bool
codec_unpacking(const struct codec *c)
{
	return c->mode == CODEC_UNPACK;
}

/* n bytes from p: counted, or written. */
static void
codec_put(struct codec *c, const void *p, size_t n)
{
	if (c->mode == CODEC_PACK) {
		if (n > c->cap - c->len) {	/* the measure was wrong */
			c->failed = true;
			return;
		}
		memcpy(c->out + c->len, p, n);
	}
	c->len += n;
}

/* n bytes into p, or zeros once anything failed or the buffer is short. */
static void
codec_get(struct codec *c, void *p, size_t n)
{
	if (c->failed || n > c->len - c->off) {
		c->failed = true;
		memset(p, 0, n);
		return;
	}
	memcpy(p, c->in + c->off, n);
	c->off += n;
}

static void
codec_bytes(struct codec *c, void *p, size_t n)
{
	if (codec_unpacking(c))
		codec_get(c, p, n);
	else
		codec_put(c, p, n);
}

static void
codec_u64(struct codec *c, uint64_t *v)
{
	codec_bytes(c, v, sizeof(*v));
}

static void
codec_u32(struct codec *c, uint32_t *v)
{
	codec_bytes(c, v, sizeof(*v));
}

static void
codec_uint(struct codec *c, unsigned *v)
{
	codec_bytes(c, v, sizeof(*v));
}

static void
codec_int(struct codec *c, int *v)
{
	codec_bytes(c, v, sizeof(*v));
}

static void
codec_size(struct codec *c, size_t *v)
{
	codec_bytes(c, v, sizeof(*v));
}

static void
codec_bool(struct codec *c, bool *v)
{
	uint8_t	b = !codec_unpacking(c) && *v;

	codec_bytes(c, &b, 1);
	if (!codec_unpacking(c))
		return;
	if (b > 1)
		c->failed = true;
	*v = b == 1;
}

/* A string in a char array of size bytes (size > 0). */
static void
codec_chars(struct codec *c, char *s, size_t size)
{
	uint32_t	n = 0;

	if (!codec_unpacking(c))
		n = (uint32_t)strnlen(s, size - 1);
	codec_u32(c, &n);
	if (codec_unpacking(c) && n >= size) {
		c->failed = true;
		n = 0;
	}
	codec_bytes(c, s, n);
	if (!codec_unpacking(c))
		return;
	if (memchr(s, '\0', n) != NULL)	/* not what packing makes */
		c->failed = true;
	s[n] = '\0';
}

/* A string pointer, NULL or not; unpacked into the blob's arena. */
static void
codec_str(struct codec *c, const char **s)
{
	bool		 present = !codec_unpacking(c) && *s != NULL;
	uint32_t	 n = present ? (uint32_t)strlen(*s) : 0;
	struct status_blob *b = c->blob;
	char		*p;

	codec_bool(c, &present);
	if (!present) {
		if (codec_unpacking(c))
			*s = NULL;
		return;
	}
	codec_u32(c, &n);
	if (!codec_unpacking(c)) {
		codec_put(c, *s, n);
		return;
	}
	*s = NULL;
	if (c->failed)
		return;
	if (n >= b->arena_size - b->arena_used) {
		c->failed = true;
		return;
	}
	p = b->arena + b->arena_used;
	codec_get(c, p, n);
	if (memchr(p, '\0', n) != NULL)
		c->failed = true;
	p[n] = '\0';
	b->arena_used += n + 1;
	*s = p;
}

/* Unpacking: n zeroed elements owned by the blob, or NULL (failed). */
static void *
codec_calloc(struct codec *c, size_t n, size_t size)
{
	struct status_blob	*b = c->blob;
	void			*p;

	if (c->failed)
		return NULL;
	if (b->nallocs == STATUS_BLOB_ALLOCS) {	/* a field walked twice */
		c->failed = true;
		return NULL;
	}
	if ((p = calloc(n > 0 ? n : 1, size)) == NULL) {
		c->failed = c->nomem = true;
		return NULL;
	}
	b->allocs[b->nallocs++] = p;
	return p;
}

/*
 * An array: whether there is one (NULL or not), its length *n, then each
 * element walked by fn.  Packing reads v; unpacking makes the array in the
 * blob and returns it in *made (NULL: none).
 */
static void
codec_array(struct codec *c, const void *v, size_t *n, size_t size,
    codec_elem_fn *fn, void **made)
{
	union codec_elem	 one;
	struct codec		 m = { .mode = CODEC_MEASURE };
	bool			 present = !codec_unpacking(c) && v != NULL;
	uint8_t			*p;
	size_t			 i;

	*made = NULL;
	codec_bool(c, &present);
	if (!present) {
		*n = 0;
		return;
	}
	codec_size(c, n);
	if (!codec_unpacking(c)) {
		for (i = 0; i < *n; i++) {
			memcpy(&one, (const uint8_t *)v + i * size, size);
			fn(c, &one);
		}
		return;
	}
	memset(&one, 0, sizeof(one));
	fn(&m, &one);		/* the fewest bytes an element takes */
	if (c->failed || *n > (c->len - c->off) / (m.len > 0 ? m.len : 1)) {
		c->failed = true;
		*n = 0;
		return;
	}
	if ((p = codec_calloc(c, *n, size)) == NULL) {
		*n = 0;
		return;
	}
	for (i = 0; i < *n && !c->failed; i++)
		fn(c, p + i * size);
	*made = p;
}

/* ---- the counters' structs -------------------------------------------- */

static void
codec_hist(struct codec *c, struct stats_hist *h)
{
	size_t	i;

	for (i = 0; i <= STATS_HIST_NBOUNDS; i++)
		codec_u64(c, &h->bucket[i]);
	codec_u64(c, &h->count);
	codec_u64(c, &h->sum_us);
}

/* A stats_hist pointer: NULL, or one made in the blob. */
static void
codec_hist_ptr(struct codec *c, const struct stats_hist **h)
{
	struct stats_hist	 one, *made;
	bool			 present = !codec_unpacking(c) && *h != NULL;

	codec_bool(c, &present);
	if (!codec_unpacking(c)) {
		if (present) {
			one = **h;
			codec_hist(c, &one);
		}
		return;
	}
	*h = NULL;
	if (present && (made = codec_calloc(c, 1, sizeof(*made))) != NULL) {
		codec_hist(c, made);
		*h = made;
	}
}

/* A stats_reasons pointer: NULL, or one made in the blob. */
static void
codec_reasons_ptr(struct codec *c, const struct stats_reasons **r)
{
	struct stats_reasons	 one, *v = &one;
	bool			 present = !codec_unpacking(c) && *r != NULL;
	size_t			 i;

	codec_bool(c, &present);
	if (codec_unpacking(c)) {
		*r = NULL;
		if (!present || (v = codec_calloc(c, 1, sizeof(*v))) == NULL)
			return;
	} else if (present)
		one = **r;
	else
		return;
	codec_size(c, &v->nv);
	if (v->nv > STATS_REASONS_MAX) {
		c->failed = true;
		v->nv = 0;
	}
	for (i = 0; i < v->nv; i++) {
		codec_str(c, &v->v[i].reason);
		codec_u64(c, &v->v[i].n);
		if (codec_unpacking(c) && v->v[i].reason == NULL)
			c->failed = true;	/* the renderers print it */
	}
	codec_u64(c, &v->other);
	if (codec_unpacking(c))
		*r = v;
}

static void
codec_contact(struct codec *c, struct stats_contact *ct)
{
	bool	ok = ct->has_ok, fail = ct->has_fail;

	codec_u64(c, &ct->ok_ms);
	codec_u64(c, &ct->fail_ms);
	codec_str(c, &ct->fail_reason);
	codec_bool(c, &ok);
	codec_bool(c, &fail);
	ct->has_ok = ok;
	ct->has_fail = fail;
}

static void
codec_pool(struct codec *c, struct pool_stats *p)
{
	codec_u64(c, &p->opened);
	codec_u64(c, &p->taken);
	codec_u64(c, &p->expired);
	codec_u64(c, &p->failed);
	codec_u64(c, &p->returned);
	codec_u64(c, &p->reused);
	codec_uint(c, &p->ready);
	codec_uint(c, &p->connecting);
	codec_uint(c, &p->target);
	codec_hist(c, &p->handshake);
	codec_contact(c, &p->contact);
}

static void
codec_tun(struct codec *c, struct tsnetif_stats *t)
{
	codec_u64(c, &t->rx_packets);
	codec_u64(c, &t->rx_bytes);
	codec_u64(c, &t->tx_packets);
	codec_u64(c, &t->tx_bytes);
	codec_u64(c, &t->rx_malformed);
	codec_u64(c, &t->rx_unsupported);
	codec_u64(c, &t->tx_errors);
	codec_u64(c, &t->syn_refused);
	codec_u64(c, &t->listeners);
	codec_u64(c, &t->tw_reused);
	codec_u64(c, &t->offload);
	codec_u64(c, &t->rx_gso);
	codec_u64(c, &t->tx_gso);
	codec_u64(c, &t->rx_vnet_bad);
}

static void
codec_dialer(struct codec *c, struct dialer_stats *d)
{
	codec_uint(c, &d->threads);
	codec_uint(c, &d->active);
	codec_u64(c, &d->ready);
	codec_u64(c, &d->resumed);
	codec_u64(c, &d->failed);
	codec_u64(c, &d->cancelled);
	codec_u64(c, &d->declined);
}

static void
codec_udp(struct codec *c, struct assoc_stats *u)
{
	codec_u64(c, &u->active);
	codec_u64(c, &u->created);
	codec_u64(c, &u->expired);
	codec_u64(c, &u->evicted);
	codec_u64(c, &u->failed);
	codec_u64(c, &u->internal);
	codec_u64(c, &u->dgrams_up);
	codec_u64(c, &u->dgrams_down);
	codec_u64(c, &u->bytes_up);
	codec_u64(c, &u->bytes_down);
	codec_u64(c, &u->drop_queue);
	codec_u64(c, &u->drop_hold);
	codec_u64(c, &u->drop_down);
	codec_u64(c, &u->drop_send);
	codec_u64(c, &u->drop_block);
	codec_u64(c, &u->drop_proto);
	codec_u64(c, &u->drop_memory);
	codec_u64(c, &u->tun_errors);
}

static void
codec_fakeip(struct codec *c, struct fakeip_stats *f)
{
	codec_u64(c, &f->answers);
	codec_u64(c, &f->issued);
	codec_u64(c, &f->hits);
	codec_u64(c, &f->misses);
	codec_u64(c, &f->evictions);
	codec_u64(c, &f->saves);
	codec_u64(c, &f->save_errors);
	codec_size(c, &f->entries);
	codec_size(c, &f->capacity);
}

static void
codec_dns_cache(struct codec *c, struct dnsfwd_stats *d)
{
	codec_u64(c, &d->hits);
	codec_u64(c, &d->misses);
	codec_u64(c, &d->stored);
	codec_u64(c, &d->evicted);
	codec_u64(c, &d->expired);
	codec_u64(c, &d->entries);
}

static void
codec_resolver(struct codec *c, struct resolve_stats *r)
{
	codec_u64(c, &r->lookups);
	codec_u64(c, &r->cache_hits);
	codec_u64(c, &r->ok);
	codec_u64(c, &r->notfound);
	codec_u64(c, &r->failed);
	codec_u64(c, &r->timeouts);
	codec_u64(c, &r->busy);
	codec_u64(c, &r->badname);
	codec_u64(c, &r->cancelled);
	codec_u64(c, &r->late);
	codec_uint(c, &r->waiting);
	codec_uint(c, &r->running);
	codec_uint(c, &r->threads);
	codec_uint(c, &r->cached);
}

/* ---- the arrays' elements --------------------------------------------- */

static void
codec_rule(struct codec *c, void *elem)
{
	struct status_rule	*r = elem;

	codec_int(c, &r->index);
	codec_chars(c, r->match, sizeof(r->match));
	codec_chars(c, r->outbound, sizeof(r->outbound));
	codec_u64(c, &r->hits);
}

static void
codec_outbound(struct codec *c, void *elem)
{
	struct status_outbound	*o = elem;

	codec_chars(c, o->name, sizeof(o->name));
	codec_str(c, &o->protocol);
	codec_chars(c, o->server, sizeof(o->server));
	codec_bool(c, &o->final);
	codec_u64(c, &o->opened);
	codec_u64(c, &o->failed);
	codec_u64(c, &o->active);
	codec_u64(c, &o->bytes_up);
	codec_u64(c, &o->bytes_down);
	codec_hist(c, &o->handshake);
	codec_bool(c, &o->has_pool);
	codec_uint(c, &o->pool_size);
	codec_pool(c, &o->pool);
	codec_bool(c, &o->has_gate);
	codec_uint(c, &o->dialling);
	codec_uint(c, &o->dial_waiting);
	codec_str(c, &o->state);
	codec_u64(c, &o->down_ms);
	codec_u64(c, &o->downs);
	codec_chars(c, o->why, sizeof(o->why));
	codec_u32(c, &o->fb_us);
	codec_u32(c, &o->fb_base_us);
	codec_u32(c, &o->rtx_pm);
	codec_u32(c, &o->rtx_base_pm);
	codec_bool(c, &o->degraded);
	codec_str(c, &o->group);
	codec_chars(c, o->members, sizeof(o->members));
	codec_chars(c, o->active_member, sizeof(o->active_member));
	codec_bool(c, &o->balance);
}

static void
codec_flow(struct codec *c, void *elem)
{
	struct status_flow	*f = elem;

	codec_u64(c, &f->id);
	codec_chars(c, f->dst, sizeof(f->dst));
	codec_chars(c, f->peer, sizeof(f->peer));
	codec_chars(c, f->user, sizeof(f->user));
	codec_chars(c, f->domain, sizeof(f->domain));
	codec_chars(c, f->rule, sizeof(f->rule));
	codec_chars(c, f->outbound, sizeof(f->outbound));
	codec_str(c, &f->state);
	codec_u64(c, &f->age_ms);
	codec_u64(c, &f->up);
	codec_u64(c, &f->down);
	codec_bool(c, &f->has_tcpi);
	codec_u32(c, &f->rtt_us);
	codec_u32(c, &f->rttvar_us);
	codec_u32(c, &f->retrans);
	codec_u32(c, &f->cwnd);
}

/* What the renderers read of a DNS upstream: its name, address and
 * protocol (the rest of the configuration stays behind). */
static void
codec_dns_up(struct codec *c, void *elem)
{
	struct conf_dns_upstream	*u = elem;
	uint32_t			 alen = u->addr.len;

	codec_chars(c, u->name, sizeof(u->name));
	codec_bytes(c, &u->addr.u, sizeof(u->addr.u));
	codec_u32(c, &alen);
	if (codec_unpacking(c) && alen > sizeof(u->addr.u))
		c->failed = true;
	u->addr.len = alen;
	codec_int(c, &u->protocol);
}

static void
codec_u64_elem(struct codec *c, void *elem)
{
	codec_u64(c, elem);
}

/* ---- the snapshot ----------------------------------------------------- */

static void
codec_head(struct codec *c, struct status *st)
{
	codec_str(c, &st->role);
	codec_str(c, &st->version);
	codec_bytes(c, &st->pid, sizeof(st->pid));
	codec_u64(c, &st->uptime_ms);
	codec_bool(c, &st->draining);
	codec_u64(c, &st->generation);
	codec_u64(c, &st->active);
	codec_u64(c, &st->total);
	codec_u64(c, &st->refused);
	codec_u64(c, &st->failed);
	codec_u64(c, &st->internal);
	codec_u64(c, &st->unused);
	codec_u64(c, &st->waited);
	codec_uint(c, &st->max);
	codec_u64(c, &st->bytes_up);
	codec_u64(c, &st->bytes_down);
	codec_reasons_ptr(c, &st->failures);
	codec_hist_ptr(c, &st->handshake);
}

static void
codec_client(struct codec *c, struct status *st)
{
	void	*made;
	size_t	 nq, nf;

	codec_chars(c, st->server, sizeof(st->server));
	codec_bool(c, &st->contact_kept);
	codec_bool(c, &st->has_contact);
	codec_bool(c, &st->has_contact_fail);
	codec_u64(c, &st->contact_age_ms);
	codec_u64(c, &st->contact_unix_ms);
	codec_u64(c, &st->contact_fail_age_ms);
	codec_u64(c, &st->contact_fail_unix_ms);
	codec_str(c, &st->contact_fail_reason);
	codec_bool(c, &st->has_tun);
	codec_tun(c, &st->tun);
	codec_bool(c, &st->has_pool);
	codec_uint(c, &st->pool_size);
	codec_u64(c, &st->pooled);
	codec_pool(c, &st->pool);
	codec_bool(c, &st->has_dialer);
	codec_dialer(c, &st->dialer);
	codec_bool(c, &st->has_udp);
	codec_udp(c, &st->udp);
	codec_bool(c, &st->has_fakeip);
	codec_fakeip(c, &st->fakeip);
	codec_bool(c, &st->has_dns);
	codec_dns_cache(c, &st->dns_cache);

	/* The DNS upstreams and their two counters, ndns_up of each. */
	codec_array(c, st->dns_up, &st->ndns_up, sizeof(*st->dns_up),
	    codec_dns_up, &made);
	if (codec_unpacking(c))
		st->dns_up = made;
	nq = nf = st->ndns_up;
	codec_array(c, st->dns_up_queries, &nq, sizeof(uint64_t),
	    codec_u64_elem, &made);
	if (codec_unpacking(c))
		st->dns_up_queries = made;
	codec_array(c, st->dns_up_failed, &nf, sizeof(uint64_t),
	    codec_u64_elem, &made);
	if (codec_unpacking(c))
		st->dns_up_failed = made;
	/* As long as the upstreams, whatever their number: packing writes
	 * ndns_up counters (an array not there has none). */
	if (codec_unpacking(c) && (nq != st->ndns_up || nf != st->ndns_up))
		c->failed = true;
}

static void
codec_server(struct codec *c, struct status *st)
{
	codec_size(c, &st->users);
	codec_reasons_ptr(c, &st->rejects);
	codec_bool(c, &st->has_cover);
	codec_chars(c, st->cover, sizeof(st->cover));
	codec_u64(c, &st->cover_relayed);
	codec_u64(c, &st->cover_failed);
	codec_u64(c, &st->reuse_offered);
	codec_u64(c, &st->reused);
	codec_u64(c, &st->reuse_errors);
	codec_bool(c, &st->has_sources);
	codec_size(c, &st->sources);
	codec_uint(c, &st->udp_sessions);
	codec_uint(c, &st->udp_max);
	codec_uint(c, &st->preauth);
	codec_uint(c, &st->preauth_max);
	codec_uint(c, &st->cover_sessions);
	codec_size(c, &st->cover_mem_used);
	codec_size(c, &st->cover_mem_peak);
	codec_size(c, &st->cover_mem_max);
	codec_u64(c, &st->cover_mem_denied);
	codec_bool(c, &st->has_resolver);
	codec_resolver(c, &st->resolver);
}

static void
codec_limits(struct codec *c, struct status *st)
{
	size_t	i;

	codec_bool(c, &st->has_limits);
	for (i = 0; i < LIMIT_NKINDS; i++)
		codec_u64(c, &st->limit_refused[i]);
	codec_size(c, &st->mem_used);
	codec_size(c, &st->mem_peak);
	codec_size(c, &st->mem_max);
	codec_u64(c, &st->mem_denied);
	codec_uint(c, &st->workers);
	if (st->workers > STATUS_WORKERS_MAX) {
		c->failed = true;
		st->workers = 0;
	}
	for (i = 0; i < st->workers; i++) {
		codec_u64(c, &st->worker_total[i]);
		codec_u64(c, &st->worker_active[i]);
	}
}

static void
codec_lists(struct codec *c, struct status *st)
{
	void	*made;
	size_t	 i;

	codec_array(c, st->rules, &st->nrules, sizeof(*st->rules),
	    codec_rule, &made);
	if (codec_unpacking(c))
		st->rules = made;
	codec_array(c, st->outbounds, &st->noutbounds, sizeof(*st->outbounds),
	    codec_outbound, &made);
	if (codec_unpacking(c))
		st->outbounds = made;
	codec_array(c, st->flows, &st->nflows, sizeof(*st->flows),
	    codec_flow, &made);
	if (!codec_unpacking(c))
		return;
	st->flows = made;
	/* What the renderers print without a check. */
	for (i = 0; i < st->noutbounds && !c->failed; i++)
		if (st->outbounds[i].protocol == NULL)
			c->failed = true;
	for (i = 0; i < st->nflows && !c->failed; i++)
		if (st->flows[i].state == NULL)
			c->failed = true;
}

static void
codec_status(struct codec *c, struct status *st)
{
	uint32_t	magic = STATUS_PACK_MAGIC, version = STATUS_PACK_VERSION;
	uint32_t	size = (uint32_t)sizeof(*st);

	codec_u32(c, &magic);
	codec_u32(c, &version);
	codec_u32(c, &size);
	if (magic != STATUS_PACK_MAGIC || version != STATUS_PACK_VERSION ||
	    size != sizeof(*st)) {
		c->failed = true;
		return;
	}
	codec_head(c, st);
	codec_client(c, st);
	codec_server(c, st);
	codec_limits(c, st);
	codec_lists(c, st);
	if (codec_unpacking(c) && (st->role == NULL || st->version == NULL))
		c->failed = true;
}

/* ---- the API ---------------------------------------------------------- */

int
status_pack(const struct status *st, uint8_t **buf, size_t *len)
{
	struct status	 copy = *st;	/* walked, never written */
	struct codec	 c = { .mode = CODEC_MEASURE };

	*buf = NULL;
	*len = 0;
	codec_status(&c, &copy);
	if (c.failed) {		/* more workers or reasons than can be */
		errno = EINVAL;
		return -1;
	}
	c.mode = CODEC_PACK;
	c.cap = c.len;
	c.len = 0;
	if ((c.out = malloc(c.cap)) == NULL)
		return -1;
	codec_status(&c, &copy);
	if (c.failed || c.len != c.cap) {
		free(c.out);
		errno = EINVAL;
		return -1;
	}
	*buf = c.out;
	*len = c.len;
	return 0;
}

int
status_unpack(const uint8_t *buf, size_t len, struct status *out,
    struct status_blob **blob)
{
	struct codec	 c = { .mode = CODEC_UNPACK, .in = buf, .len = len };

	memset(out, 0, sizeof(*out));
	*blob = NULL;
	if ((c.blob = calloc(1, sizeof(*c.blob))) == NULL)
		return -1;
	c.blob->arena_size = len > 0 ? len : 1;
	if ((c.blob->arena = malloc(c.blob->arena_size)) == NULL) {
		status_blob_free(c.blob);
		return -1;
	}
	codec_status(&c, out);
	if (c.failed || c.off != len) {
		status_blob_free(c.blob);
		memset(out, 0, sizeof(*out));
		errno = c.nomem ? ENOMEM : EINVAL;
		return -1;
	}
	*blob = c.blob;
	return 0;
}

void
status_blob_free(struct status_blob *blob)
{
	size_t	i;

	if (blob == NULL)
		return;
	for (i = 0; i < blob->nallocs; i++)
		free(blob->allocs[i]);
	free(blob->arena);
	free(blob);
}
