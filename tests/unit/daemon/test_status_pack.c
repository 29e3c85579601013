/*
 * Status snapshots across processes (daemon/status_pack.c,
 * daemon/status_merge.c): the wire form round trip, field by field;
 * truncated and corrupt buffers; and the adding of workers' snapshots,
 * each kind of field by its rule.
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "core/stats.h"
#include "daemon/status.h"

/* ---- a snapshot with every field set (random bytes) ------------------- */

static uint64_t	t_seed = 0x9e3779b97f4a7c15ull;

static uint64_t
rnd(void)
{
	t_seed ^= t_seed << 13;
	t_seed ^= t_seed >> 7;
	t_seed ^= t_seed << 17;
	return t_seed;
}

static void
rnd_bytes(void *p, size_t n)
{
	uint8_t	*b = p;
	size_t	 i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)rnd();
}

static bool
rnd_bool(void)
{
	return rnd() & 1;
}

/* A printable string of random length in a char array; the rest zero,
 * as after status_unpack. */
static void
rnd_chars(char *s, size_t size)
{
	size_t	n = rnd() % size, i;

	memset(s, 0, size);
	for (i = 0; i < n; i++)
		s[i] = (char)('!' + rnd() % 90);
}

/* Strings for the pointer fields: the same text at another address
 * must come back. */
static char	t_strs[64][40];
static size_t	t_nstrs;

static const char *
rnd_str(void)
{
	char	*s = t_strs[t_nstrs++ % 64];

	rnd_chars(s, sizeof(t_strs[0]));
	return s;
}

/* The storage a random snapshot points to. */
struct full {
	struct status		 st;
	struct stats_reasons	 failures, rejects;
	struct stats_hist	 handshake;
	struct conf_dns_upstream dns[3];
	uint64_t		 dns_q[3], dns_f[3];
	struct status_rule	 rules[4];
	struct status_outbound	 obs[3];
	struct status_flow	 flows[5];
};

static void
rnd_reasons(struct stats_reasons *r, size_t nv)
{
	size_t	i;

	rnd_bytes(r, sizeof(*r));
	r->nv = nv;
	for (i = 0; i < STATS_REASONS_MAX; i++) {
		if (i < nv)
			r->v[i].reason = rnd_str();
		else
			memset(&r->v[i], 0, sizeof(r->v[i]));
	}
}

static void
rnd_contact(struct stats_contact *c)
{
	c->fail_reason = rnd_bool() ? rnd_str() : NULL;
	c->has_ok = rnd_bool();
	c->has_fail = rnd_bool();
}

static void
rnd_outbound(struct status_outbound *o)
{
	rnd_bytes(o, sizeof(*o));
	rnd_chars(o->name, sizeof(o->name));
	o->protocol = rnd_str();
	rnd_chars(o->server, sizeof(o->server));
	o->final = rnd_bool();
	o->has_pool = rnd_bool();
	rnd_contact(&o->pool.contact);
	o->has_gate = rnd_bool();
	o->state = rnd_bool() ? rnd_str() : NULL;
	rnd_chars(o->why, sizeof(o->why));
	o->degraded = rnd_bool();
	o->group = rnd_str();
	rnd_chars(o->members, sizeof(o->members));
	rnd_chars(o->active_member, sizeof(o->active_member));
	o->balance = rnd_bool();
}

static void
rnd_flow(struct status_flow *f)
{
	rnd_bytes(f, sizeof(*f));
	rnd_chars(f->dst, sizeof(f->dst));
	rnd_chars(f->peer, sizeof(f->peer));
	rnd_chars(f->user, sizeof(f->user));
	rnd_chars(f->domain, sizeof(f->domain));
	rnd_chars(f->rule, sizeof(f->rule));
	rnd_chars(f->outbound, sizeof(f->outbound));
	f->state = rnd_str();
	f->has_tcpi = rnd_bool();
}

static void
rnd_dns_up(struct conf_dns_upstream *u)
{
	memset(u, 0, sizeof(*u));	/* only these three travel */
	rnd_chars(u->name, sizeof(u->name));
	rnd_bytes(&u->addr.u, sizeof(u->addr.u));
	u->addr.len = (socklen_t)(rnd() % (sizeof(u->addr.u) + 1));
	u->protocol = (int)rnd();
}

/* Every byte of st random, then what must hold a valid value fixed. */
static void
full_make(struct full *f)
{
	struct status	*st = &f->st;
	size_t		 i;

	rnd_bytes(st, sizeof(*st));
	st->role = "client";
	st->version = rnd_str();
	st->draining = rnd_bool();
	rnd_reasons(&f->failures, 5);
	st->failures = &f->failures;
	rnd_bytes(&f->handshake, sizeof(f->handshake));
	st->handshake = &f->handshake;
	rnd_chars(st->server, sizeof(st->server));
	st->contact_kept = rnd_bool();
	st->has_contact = rnd_bool();
	st->has_contact_fail = rnd_bool();
	st->contact_fail_reason = rnd_str();
	st->has_tun = rnd_bool();
	st->has_pool = rnd_bool();
	rnd_contact(&st->pool.contact);
	st->has_dialer = rnd_bool();
	st->has_udp = rnd_bool();
	st->has_fakeip = rnd_bool();
	st->has_dns = rnd_bool();
	for (i = 0; i < 3; i++)
		rnd_dns_up(&f->dns[i]);
	rnd_bytes(f->dns_q, sizeof(f->dns_q));
	rnd_bytes(f->dns_f, sizeof(f->dns_f));
	st->dns_up = f->dns;
	st->ndns_up = 3;
	st->dns_up_queries = f->dns_q;
	st->dns_up_failed = f->dns_f;
	rnd_reasons(&f->rejects, STATS_REASONS_MAX);
	st->rejects = &f->rejects;
	st->has_cover = rnd_bool();
	rnd_chars(st->cover, sizeof(st->cover));
	st->has_limits = rnd_bool();
	st->workers = 1 + rnd() % STATUS_WORKERS_MAX;
	for (i = st->workers; i < STATUS_WORKERS_MAX; i++)
		st->worker_total[i] = st->worker_active[i] = 0;
	st->has_sources = rnd_bool();
	st->has_resolver = rnd_bool();
	rnd_bytes(f->rules, sizeof(f->rules));
	for (i = 0; i < 4; i++) {
		rnd_chars(f->rules[i].match, sizeof(f->rules[i].match));
		rnd_chars(f->rules[i].outbound, sizeof(f->rules[i].outbound));
	}
	st->rules = f->rules;
	st->nrules = 4;
	for (i = 0; i < 3; i++)
		rnd_outbound(&f->obs[i]);
	st->outbounds = f->obs;
	st->noutbounds = 3;
	for (i = 0; i < 5; i++)
		rnd_flow(&f->flows[i]);
	st->flows = f->flows;
	st->nflows = 5;
}

/* ---- field-by-field equality ------------------------------------------ */

/*
 * Two objects are equal when their bytes are, once the pointers (compared
 * by what they point to first) are NULL in copies and the padding is
 * cleared: so a field the wire form forgot -- random in one, zero in the
 * other -- fails, with no list of fields to keep up to date here.  The
 * copies are taken by the callers, typed, for __builtin_clear_padding.
 */
static void
same_addr(struct addr a, struct addr b)
{
	__builtin_clear_padding(&a);
	__builtin_clear_padding(&b);
	assert_memory_equal(&a, &b, sizeof(a));
}

static void
same_rule(struct status_rule a, struct status_rule b)
{
	__builtin_clear_padding(&a);
	__builtin_clear_padding(&b);
	assert_memory_equal(&a, &b, sizeof(a));
}

static void
same_str(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

static void
same_reasons(const struct stats_reasons *a, const struct stats_reasons *b)
{
	struct stats_reasons	ca, cb;
	size_t			i;

	if (a == NULL || b == NULL) {
		assert_ptr_equal(a, b);
		return;
	}
	ca = *a;
	cb = *b;
	for (i = 0; i < STATS_REASONS_MAX; i++) {
		if (i < a->nv)
			same_str(a->v[i].reason, b->v[i].reason);
		ca.v[i].reason = cb.v[i].reason = NULL;
	}
	__builtin_clear_padding(&ca);
	__builtin_clear_padding(&cb);
	assert_memory_equal(&ca, &cb, sizeof(ca));
}

static void
same_outbound(const struct status_outbound *a,
    const struct status_outbound *b)
{
	struct status_outbound	ca = *a, cb = *b;

	same_str(a->protocol, b->protocol);
	same_str(a->state, b->state);
	same_str(a->group, b->group);
	same_str(a->pool.contact.fail_reason, b->pool.contact.fail_reason);
	ca.protocol = cb.protocol = NULL;
	ca.state = cb.state = NULL;
	ca.group = cb.group = NULL;
	ca.pool.contact.fail_reason = cb.pool.contact.fail_reason = NULL;
	__builtin_clear_padding(&ca);
	__builtin_clear_padding(&cb);
	assert_memory_equal(&ca, &cb, sizeof(ca));
}

static void
same_flow(const struct status_flow *a, const struct status_flow *b)
{
	struct status_flow	ca = *a, cb = *b;

	same_str(a->state, b->state);
	ca.state = cb.state = NULL;
	__builtin_clear_padding(&ca);
	__builtin_clear_padding(&cb);
	assert_memory_equal(&ca, &cb, sizeof(ca));
}

static void
same_status(const struct status *a, const struct status *b)
{
	struct status	ca = *a, cb = *b;
	size_t		i;

	same_str(a->role, b->role);
	same_str(a->version, b->version);
	same_str(a->contact_fail_reason, b->contact_fail_reason);
	same_str(a->pool.contact.fail_reason, b->pool.contact.fail_reason);
	same_reasons(a->failures, b->failures);
	same_reasons(a->rejects, b->rejects);
	assert_true((a->handshake == NULL) == (b->handshake == NULL));
	if (a->handshake != NULL)	/* all uint64_t: no padding */
		assert_memory_equal(a->handshake, b->handshake,
		    sizeof(*a->handshake));
	assert_int_equal(a->ndns_up, b->ndns_up);
	for (i = 0; i < a->ndns_up; i++) {
		assert_string_equal(a->dns_up[i].name, b->dns_up[i].name);
		same_addr(a->dns_up[i].addr, b->dns_up[i].addr);
		assert_int_equal(a->dns_up[i].protocol, b->dns_up[i].protocol);
		assert_int_equal(a->dns_up_queries[i], b->dns_up_queries[i]);
		assert_int_equal(a->dns_up_failed[i], b->dns_up_failed[i]);
	}
	assert_int_equal(a->nrules, b->nrules);
	for (i = 0; i < a->nrules; i++)
		same_rule(a->rules[i], b->rules[i]);
	assert_int_equal(a->noutbounds, b->noutbounds);
	for (i = 0; i < a->noutbounds; i++)
		same_outbound(&a->outbounds[i], &b->outbounds[i]);
	assert_true((a->flows == NULL) == (b->flows == NULL));
	assert_int_equal(a->nflows, b->nflows);
	for (i = 0; i < a->nflows; i++)
		same_flow(&a->flows[i], &b->flows[i]);
	ca.role = cb.role = NULL;
	ca.version = cb.version = NULL;
	ca.contact_fail_reason = cb.contact_fail_reason = NULL;
	ca.pool.contact.fail_reason = cb.pool.contact.fail_reason = NULL;
	ca.failures = cb.failures = NULL;
	ca.rejects = cb.rejects = NULL;
	ca.handshake = cb.handshake = NULL;
	ca.dns_up = cb.dns_up = NULL;
	ca.dns_up_queries = cb.dns_up_queries = NULL;
	ca.dns_up_failed = cb.dns_up_failed = NULL;
	ca.rules = cb.rules = NULL;
	ca.outbounds = cb.outbounds = NULL;
	ca.flows = cb.flows = NULL;
	__builtin_clear_padding(&ca);
	__builtin_clear_padding(&cb);
	assert_memory_equal(&ca, &cb, sizeof(ca));
}

/* ---- helpers ---------------------------------------------------------- */

/* All three renderings of st into one string (free it). */
static char *
render_all(const struct status *st)
{
	char	*buf = NULL;
	size_t	 len = 0;
	FILE	*fp;

	assert_non_null(fp = open_memstream(&buf, &len));
	status_write_text(st, fp);
	status_write_json(st, fp);
	status_write_prometheus(st, fp);
	assert_int_equal(fclose(fp), 0);
	return buf;
}

/* buf[0..len) in a block of exactly len bytes, so ASan sees a read past
 * its end. */
static int
unpack_exact(const uint8_t *buf, size_t len, struct status *out,
    struct status_blob **blob)
{
	uint8_t	*copy = malloc(len > 0 ? len : 1);
	int	 rc;

	assert_non_null(copy);
	memcpy(copy, buf, len);
	rc = status_unpack(copy, len, out, blob);
	free(copy);
	return rc;
}

static void
assert_unpack_fails(const uint8_t *buf, size_t len)
{
	struct status		 out;
	struct status_blob	*blob = (void *)&out;	/* not NULL */
	static const struct status zero;

	assert_int_equal(unpack_exact(buf, len, &out, &blob), -1);
	assert_null(blob);
	assert_memory_equal(&out, &zero, sizeof(out));
}

/* ---- the wire form ---------------------------------------------------- */

static void
test_round_trip(void **state)
{
	struct full		*f = calloc(1, sizeof(*f));
	struct status		 out;
	struct status_blob	*blob;
	uint8_t			*buf, *again;
	size_t			 len, len2;
	int			 round;

	(void)state;
	assert_non_null(f);
	for (round = 0; round < 20; round++) {
		full_make(f);
		assert_int_equal(status_pack(&f->st, &buf, &len), 0);
		assert_int_equal(unpack_exact(buf, len, &out, &blob), 0);
		same_status(&f->st, &out);
		/* Packing what came out gives the same bytes. */
		assert_int_equal(status_pack(&out, &again, &len2), 0);
		assert_int_equal(len2, len);
		assert_memory_equal(again, buf, len);
		free(again);
		free(buf);
		status_blob_free(blob);
	}
	free(f);
}

/* NULL stays NULL: no flow list asked is not an empty one. */
static void
test_round_trip_empty(void **state)
{
	struct status		 st, out;
	struct status_flow	 none[1];
	struct status_blob	*blob;
	uint8_t			*buf;
	size_t			 len;

	(void)state;
	memset(&st, 0, sizeof(st));
	st.role = "server";
	st.version = "1";
	assert_int_equal(status_pack(&st, &buf, &len), 0);
	assert_int_equal(unpack_exact(buf, len, &out, &blob), 0);
	same_status(&st, &out);
	assert_null(out.failures);
	assert_null(out.handshake);
	assert_null(out.flows);
	assert_null(out.dns_up_queries);
	free(buf);
	status_blob_free(blob);

	st.flows = none;	/* asked; no flow lives */
	assert_int_equal(status_pack(&st, &buf, &len), 0);
	assert_int_equal(unpack_exact(buf, len, &out, &blob), 0);
	assert_non_null(out.flows);
	assert_int_equal(out.nflows, 0);
	free(buf);
	status_blob_free(blob);

	/* What the renderers would print from NULL is refused. */
	st.role = NULL;
	assert_int_equal(status_pack(&st, &buf, &len), 0);
	assert_unpack_fails(buf, len);
	free(buf);
}

/* Every shorter prefix fails cleanly; so does a byte more. */
static void
test_truncated(void **state)
{
	struct full	*f = calloc(1, sizeof(*f));
	uint8_t		*buf, *longer;
	size_t		 len, i;

	(void)state;
	assert_non_null(f);
	full_make(f);
	assert_int_equal(status_pack(&f->st, &buf, &len), 0);
	for (i = 0; i < len; i++)
		assert_unpack_fails(buf, i);
	assert_non_null(longer = calloc(1, len + 1));
	memcpy(longer, buf, len);
	assert_unpack_fails(longer, len + 1);
	free(longer);
	free(buf);
	free(f);
}

/* The offset of the 4-byte length before the string s in buf. */
static size_t
find_len_of(const uint8_t *buf, size_t len, const char *s)
{
	const uint8_t	*p = memmem(buf, len, s, strlen(s));
	uint32_t	 n;

	assert_non_null(p);
	assert_true(p - buf >= 4);
	memcpy(&n, p - 4, sizeof(n));
	assert_int_equal(n, strlen(s));
	return (size_t)(p - buf) - 4;
}

static void
put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void
put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void
test_corrupt_lengths(void **state)
{
	struct status		 st;
	struct status_rule	 rules[2];
	struct status_flow	 flows[1];
	uint8_t			*buf;
	size_t			 len, at, count;
	uint64_t		 bad[] = { 0, 1, 3, 1u << 20, 1ull << 40,
				    UINT64_MAX / 2, UINT64_MAX };
	size_t			 i;

	(void)state;
	memset(&st, 0, sizeof(st));
	memset(rules, 0, sizeof(rules));
	memset(flows, 0, sizeof(flows));
	st.role = "client";
	st.version = "1";
	snprintf(rules[0].match, sizeof(rules[0].match), "RULEZERO");
	snprintf(rules[1].match, sizeof(rules[1].match), "RULEONE");
	st.rules = rules;
	st.nrules = 2;
	snprintf(flows[0].domain, sizeof(flows[0].domain), "DOMAIN.EXAMPLE");
	flows[0].state = "relay";
	st.flows = flows;
	st.nflows = 1;
	assert_int_equal(status_pack(&st, &buf, &len), 0);

	/* A string's length: past the end, past its array, one off. */
	at = find_len_of(buf, len, "DOMAIN.EXAMPLE");
	put_u32(buf + at, UINT32_MAX);
	assert_unpack_fails(buf, len);
	put_u32(buf + at, sizeof(flows[0].domain));
	assert_unpack_fails(buf, len);
	put_u32(buf + at, 13);
	assert_unpack_fails(buf, len);
	put_u32(buf + at, 14);
	/* A NUL inside a string: not what packing makes. */
	buf[at + 4 + 6] = '\0';
	assert_unpack_fails(buf, len);
	buf[at + 4 + 6] = '.';
	/* The rules' count: 8 bytes before the first rule (its index and
	 * the length of its match). */
	at = find_len_of(buf, len, "RULEZERO") - sizeof(int) -
	    sizeof(uint64_t);
	memcpy(&count, buf + at, sizeof(count));
	assert_int_equal(count, 2);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put_u64(buf + at, bad[i]);
		assert_unpack_fails(buf, len);
	}
	put_u64(buf + at, 2);
	/* The header: magic, version, size. */
	for (i = 0; i < 12; i++) {
		buf[i] ^= 0x40;
		assert_unpack_fails(buf, len);
		buf[i] ^= 0x40;
	}
	free(buf);
}

/* Any byte changed: unpacking fails, or gives a snapshot that packs
 * back to the same bytes and renders (one in 16 of those is rendered:
 * most are counters, and rendering them all takes seconds under
 * ASan). */
static void
test_corrupt_any_byte(void **state)
{
	struct full		*f = calloc(1, sizeof(*f));
	struct status		 out;
	struct status_blob	*blob;
	uint8_t			*buf, *again;
	uint8_t			 flips[] = { 0x01, 0xff };
	size_t			 len, len2, i, j, ok = 0, failed = 0;

	(void)state;
	assert_non_null(f);
	full_make(f);
	assert_int_equal(status_pack(&f->st, &buf, &len), 0);
	for (i = 0; i < len; i++) {
		for (j = 0; j < sizeof(flips); j++) {
			buf[i] ^= flips[j];
			if (unpack_exact(buf, len, &out, &blob) == 0) {
				assert_int_equal(status_pack(&out, &again,
				    &len2), 0);
				assert_int_equal(len2, len);
				assert_memory_equal(again, buf, len);
				free(again);
				if (ok++ % 16 == 0)
					free(render_all(&out));
				status_blob_free(blob);
			} else
				failed++;
			buf[i] ^= flips[j];
		}
	}
	/* Most bytes are counters (any value is one); lengths, flags and
	 * the header are not. */
	assert_true(ok > 0);
	assert_true(failed > 0);
	free(buf);
	free(f);
}

/* ---- merging ---------------------------------------------------------- */

/* A client worker's snapshot, its numbers scaled by k. */
struct snap {
	struct status		 st;
	struct stats_reasons	 failures;
	struct stats_hist	 handshake;
	struct status_rule	 rules[2];
	struct status_outbound	 obs[2];
	struct status_flow	 flows[3];
	struct conf_dns_upstream dns[2];
	uint64_t		 dns_q[2], dns_f[2];
};

static void
snap_make(struct snap *s, uint64_t k, size_t nflows)
{
	struct status	*st = &s->st;
	size_t		 i;

	memset(s, 0, sizeof(*s));
	st->role = "client";
	st->version = "9.9.9";
	st->pid = (long)(1000 + k);
	st->generation = 7;
	snprintf(st->server, sizeof(st->server), "192.0.2.%u:443",
	    (unsigned)k);
	st->active = 3 * k;
	st->total = 100 * k;
	st->refused = k;
	st->failed = 10 * k;
	st->max = 500;			/* max_flows / N */
	st->bytes_up = 1000 * k;
	st->bytes_down = 2000 * k;
	for (i = 0; i < k; i++)
		stats_reason_add(&s->failures, "server reset");
	stats_reason_add(&s->failures, k == 1 ? "connect timeout" :
	    "tls failed");
	st->failures = &s->failures;
	stats_hist_add(&s->handshake, 500 * k);	/* k 1, 2: bucket 0 */
	stats_hist_add(&s->handshake, 20000000);	/* +Inf */
	st->handshake = &s->handshake;

	st->contact_kept = true;
	st->has_contact = true;
	st->contact_age_ms = k == 1 ? 500 : 200;
	st->contact_unix_ms = k == 1 ? 10000 : 10300;
	st->has_contact_fail = true;
	st->contact_fail_age_ms = k == 1 ? 50 : 900;
	st->contact_fail_unix_ms = k == 1 ? 10450 : 9600;
	st->contact_fail_reason = k == 1 ? "connect refused" : "tls failed";

	st->has_tun = true;
	st->tun.rx_packets = 10 * k;
	st->tun.listeners = k;
	st->tun.offload = k == 2;
	st->has_pool = true;
	st->pool_size = 4;
	st->pooled = 5 * k;
	st->pool.opened = 6 * k;
	st->pool.ready = (unsigned)k;
	st->pool.contact.fail_reason = NULL;
	if (k == 2)
		stats_contact_fail(&st->pool.contact, 777, "pool died");
	st->has_dialer = true;
	st->dialer.threads = 2;
	st->dialer.ready = 9 * k;
	st->has_udp = true;
	st->udp.active = k;
	st->udp.created = 20 * k;

	st->has_fakeip = k == 1;	/* worker 0 issues */
	st->fakeip.issued = 40 * k;
	st->fakeip.hits = 7 * k;
	st->fakeip.misses = k;
	st->fakeip.entries = 33;
	st->fakeip.capacity = 1024;
	st->has_dns = true;
	st->dns_cache.hits = 3 * k;
	for (i = 0; i < 2; i++) {
		snprintf(s->dns[i].name, sizeof(s->dns[i].name), "up%zu", i);
		s->dns_q[i] = (i + 1) * 10 * k;
		s->dns_f[i] = k;
	}
	st->dns_up = s->dns;
	st->ndns_up = 2;
	st->dns_up_queries = s->dns_q;
	st->dns_up_failed = s->dns_f;

	st->has_limits = true;
	st->limit_refused[0] = 2 * k;
	st->mem_used = 4096 * k;
	st->mem_peak = 8192 * k;
	st->mem_max = 1 << 20;		/* the budget / N */
	st->mem_denied = k;

	for (i = 0; i < 2; i++) {
		s->rules[i].index = i == 0 ? 0 : -1;
		snprintf(s->rules[i].match, sizeof(s->rules[i].match),
		    i == 0 ? "dst 10.0.0.0/8" : "final");
		snprintf(s->rules[i].outbound, sizeof(s->rules[i].outbound),
		    "ob%zu", i);
		s->rules[i].hits = (i + 1) * k;
	}
	st->rules = s->rules;
	st->nrules = 2;
	for (i = 0; i < 2; i++) {
		snprintf(s->obs[i].name, sizeof(s->obs[i].name), "ob%zu", i);
		s->obs[i].protocol = "tunsplit";
		s->obs[i].state = k == 1 ? "up" : "down";
		s->obs[i].opened = 11 * k;
		s->obs[i].active = k;
		s->obs[i].downs = k - 1;
		s->obs[i].has_pool = true;
		s->obs[i].pool_size = 2;
		s->obs[i].pool.ready = (unsigned)k;
	}
	st->outbounds = s->obs;
	st->noutbounds = 2;
	for (i = 0; i < nflows; i++) {
		s->flows[i].id = 100 * k + i;
		s->flows[i].state = "relay";
		s->flows[i].up = k;
	}
	st->flows = s->flows;
	st->nflows = nflows;
}

/* add as it arrives: packed by its worker, unpacked by worker 0. */
static void
through_wire(const struct status *add, struct status *out,
    struct status_blob **blob)
{
	uint8_t	*buf;
	size_t	 len;

	assert_int_equal(status_pack(add, &buf, &len), 0);
	assert_int_equal(unpack_exact(buf, len, out, blob), 0);
	free(buf);
}

static void
test_merge(void **state)
{
	struct snap		*w0 = calloc(1, sizeof(*w0));
	struct snap		*w1 = calloc(1, sizeof(*w1));
	struct stats_reasons	 live;
	struct status		 add;
	struct status_blob	*blob;
	struct status_merge_mem	 mem;
	char			*out;

	(void)state;
	assert_non_null(w0);
	assert_non_null(w1);
	snap_make(w0, 1, 2);
	snap_make(w1, 2, 3);
	live = w0->failures;
	memset(&mem, 0, sizeof(mem));
	through_wire(&w1->st, &add, &blob);
	assert_int_equal(status_merge(&w0->st, &add, &mem), 0);
	/* add's strings are mem's now: its blob may go at once. */
	status_blob_free(blob);

	/* Identity: worker 0's. */
	assert_string_equal(w0->st.role, "client");
	assert_int_equal(w0->st.pid, 1001);
	assert_int_equal(w0->st.generation, 7);
	assert_string_equal(w0->st.server, "192.0.2.1:443");
	/* Counters: summed. */
	assert_int_equal(w0->st.total, 300);
	assert_int_equal(w0->st.refused, 3);
	assert_int_equal(w0->st.failed, 30);
	assert_int_equal(w0->st.bytes_up, 3000);
	assert_int_equal(w0->st.bytes_down, 6000);
	assert_int_equal(stats_reason_get(w0->st.failures, "server reset"), 3);
	assert_int_equal(stats_reason_get(w0->st.failures, "connect timeout"),
	    1);
	assert_int_equal(stats_reason_get(w0->st.failures, "tls failed"), 1);
	assert_int_equal(w0->st.handshake->bucket[0], 2);
	assert_int_equal(w0->st.handshake->bucket[STATS_HIST_NBOUNDS], 2);
	assert_int_equal(w0->st.handshake->count, 4);
	assert_int_equal(w0->st.handshake->sum_us, 1500 + 40000000);
	assert_int_equal(w0->st.tun.rx_packets, 30);
	assert_int_equal(w0->st.pooled, 15);
	assert_int_equal(w0->st.pool.opened, 18);
	assert_int_equal(w0->st.dialer.ready, 27);
	assert_int_equal(w0->st.udp.created, 60);
	assert_int_equal(w0->st.dns_cache.hits, 9);
	assert_int_equal(w0->st.dns_up_queries[0], 30);
	assert_int_equal(w0->st.dns_up_queries[1], 60);
	assert_int_equal(w0->st.dns_up_failed[1], 3);
	assert_int_equal(w0->st.limit_refused[0], 6);
	assert_int_equal(w0->st.mem_denied, 3);
	assert_int_equal(w0->st.rules[0].hits, 3);
	assert_int_equal(w0->st.rules[1].hits, 6);
	assert_int_equal(w0->st.outbounds[1].opened, 33);
	assert_int_equal(w0->st.outbounds[1].downs, 1);
	/* Gauges of live things: summed. */
	assert_int_equal(w0->st.active, 9);
	assert_int_equal(w0->st.tun.listeners, 3);
	assert_int_equal(w0->st.pool.ready, 3);
	assert_int_equal(w0->st.udp.active, 3);
	assert_int_equal(w0->st.mem_used, 3 * 4096);
	assert_int_equal(w0->st.outbounds[0].active, 3);
	assert_int_equal(w0->st.outbounds[0].pool.ready, 3);
	/* The peak: summed, an upper bound. */
	assert_int_equal(w0->st.mem_peak, 3 * 8192);
	/* Per-process shares: summed to the whole. */
	assert_int_equal(w0->st.max, 1000);
	assert_int_equal(w0->st.mem_max, 2 << 20);
	assert_int_equal(w0->st.pool_size, 8);
	assert_int_equal(w0->st.dialer.threads, 4);
	assert_int_equal(w0->st.outbounds[0].pool_size, 4);
	/* A flag: the larger. */
	assert_int_equal(w0->st.tun.offload, 1);
	/* The replicated fake-IP table: worker 0's; lookups summed. */
	assert_true(w0->st.has_fakeip);
	assert_int_equal(w0->st.fakeip.issued, 40);
	assert_int_equal(w0->st.fakeip.entries, 33);
	assert_int_equal(w0->st.fakeip.capacity, 1024);
	assert_int_equal(w0->st.fakeip.hits, 21);
	assert_int_equal(w0->st.fakeip.misses, 3);
	/* Ages: the newest, with its own time and reason. */
	assert_int_equal(w0->st.contact_age_ms, 200);
	assert_int_equal(w0->st.contact_unix_ms, 10300);
	assert_int_equal(w0->st.contact_fail_age_ms, 50);
	assert_int_equal(w0->st.contact_fail_unix_ms, 10450);
	assert_string_equal(w0->st.contact_fail_reason, "connect refused");
	assert_true(w0->st.pool.contact.has_fail);
	assert_int_equal(w0->st.pool.contact.fail_ms, 777);
	assert_string_equal(w0->st.pool.contact.fail_reason, "pool died");
	/* Health: worker 0's. */
	assert_string_equal(w0->st.outbounds[0].state, "up");
	/* The flow lists, joined. */
	assert_int_equal(w0->st.nflows, 5);
	assert_int_equal(w0->st.flows[1].id, 101);
	assert_int_equal(w0->st.flows[2].id, 200);
	assert_int_equal(w0->st.flows[4].id, 202);
	assert_string_equal(w0->st.flows[4].state, "relay");
	/* Each worker's flows. */
	assert_int_equal(w0->st.workers, 2);
	assert_int_equal(w0->st.worker_total[0], 100);
	assert_int_equal(w0->st.worker_active[0], 3);
	assert_int_equal(w0->st.worker_total[1], 200);
	assert_int_equal(w0->st.worker_active[1], 6);
	/* Worker 0's own counters were copied, never written. */
	assert_memory_equal(&live, &w0->failures, sizeof(live));
	assert_int_equal(w0->handshake.count, 2);
	assert_int_equal(w0->rules[0].hits, 1);
	assert_int_equal(w0->obs[1].opened, 11);
	assert_int_equal(w0->dns_q[0], 10);
	assert_int_equal(w0->flows[0].id, 100);

	/* It renders, with add's strings, after add is gone. */
	out = render_all(&w0->st);
	assert_non_null(strstr(out, "tls failed 1"));
	assert_non_null(strstr(out, "workers: 2; flows per worker: 100 (3 "
	    "live) 200 (6 live)"));
	assert_non_null(strstr(out, "\"workers\":[{\"flows\":100,\"active\":3},"
	    "{\"flows\":200,\"active\":6}]"));
	assert_non_null(strstr(out,
	    "tunsplit_worker_flows_total{worker=\"1\"} 200\n"));
	assert_non_null(strstr(out, "tunsplit_worker_flows{worker=\"0\"} 3\n"));
	free(out);
	status_merge_mem_free(&mem);
	free(w0);
	free(w1);
}

/* Three workers in order; lists that disagree are not summed. */
static void
test_merge_three(void **state)
{
	struct snap		*w[3];
	struct status		 add;
	struct status_blob	*blob;
	struct status_merge_mem	 mem;
	size_t			 i;

	(void)state;
	for (i = 0; i < 3; i++) {
		assert_non_null(w[i] = calloc(1, sizeof(*w[i])));
		snap_make(w[i], i + 1, 3);
	}
	/* Worker 2 on another generation: other rules, other outbounds,
	 * other DNS upstreams. */
	snprintf(w[2]->rules[0].match, sizeof(w[2]->rules[0].match),
	    "dst 10.1.0.0/16");
	snprintf(w[2]->obs[1].name, sizeof(w[2]->obs[1].name), "other");
	snprintf(w[2]->dns[1].name, sizeof(w[2]->dns[1].name), "other");
	memset(&mem, 0, sizeof(mem));
	mem.flows_max = 7;
	for (i = 1; i < 3; i++) {
		through_wire(&w[i]->st, &add, &blob);
		assert_int_equal(status_merge(&w[0]->st, &add, &mem), 0);
		status_blob_free(blob);
	}
	assert_int_equal(w[0]->st.workers, 3);
	assert_int_equal(w[0]->st.worker_total[2], 300);
	assert_int_equal(w[0]->st.worker_active[2], 9);
	assert_int_equal(w[0]->st.total, 600);
	/* Summed over workers 0 and 1 only. */
	assert_int_equal(w[0]->st.rules[1].hits, 6);
	assert_int_equal(w[0]->st.outbounds[0].opened, 33);
	assert_int_equal(w[0]->st.dns_up_queries[0], 30);
	/* Capped at flows_max: worker 2's last two are left out. */
	assert_int_equal(w[0]->st.nflows, 7);
	assert_int_equal(w[0]->st.flows[6].id, 300);
	/* The fail reason worker 2 had is older than worker 0's. */
	assert_string_equal(w[0]->st.contact_fail_reason, "connect refused");
	status_merge_mem_free(&mem);
	status_merge_mem_free(NULL);
	for (i = 0; i < 3; i++)
		free(w[i]);
}

/* into with nothing of its own yet; a worker that did not answer, as an
 * empty snapshot, keeps the others' places in the breakdown. */
static void
test_merge_into_empty(void **state)
{
	struct snap		*w = calloc(1, sizeof(*w));
	struct status		 into, none;
	struct status_merge_mem	 mem;
	char			*out;

	(void)state;
	assert_non_null(w);
	snap_make(w, 2, 3);
	memset(&into, 0, sizeof(into));
	into.role = "client";
	into.version = "9.9.9";
	memset(&none, 0, sizeof(none));
	none.role = "client";
	none.version = "9.9.9";
	memset(&mem, 0, sizeof(mem));
	assert_int_equal(status_merge(&into, &none, &mem), 0);
	assert_int_equal(status_merge(&into, &w->st, &mem), 0);
	assert_ptr_equal(into.failures, &mem.failures);
	assert_int_equal(stats_reason_get(into.failures, "server reset"), 2);
	assert_ptr_equal(into.handshake, &mem.handshake);
	assert_int_equal(into.handshake->count, 2);
	/* No flow list asked: none made. */
	assert_null(into.flows);
	assert_int_equal(into.nflows, 0);
	/* No rules or outbounds of its own: nothing to add them to. */
	assert_int_equal(into.nrules, 0);
	assert_int_equal(into.noutbounds, 0);
	assert_int_equal(into.workers, 3);
	assert_int_equal(into.worker_total[1], 0);
	assert_int_equal(into.worker_total[2], 200);
	assert_int_equal(into.total, 200);
	assert_true(into.has_contact);
	assert_int_equal(into.contact_age_ms, 200);
	assert_string_equal(into.contact_fail_reason, "tls failed");
	out = render_all(&into);
	assert_non_null(strstr(out, "flows per worker: 0 (0 live) 0 (0 live) "
	    "200 (6 live)"));
	free(out);
	status_merge_mem_free(&mem);
	free(w);
}

/* One client worker shows no breakdown; the server's loops always do. */
static void
test_workers_render(void **state)
{
	struct snap	*s = calloc(1, sizeof(*s));
	char		*out;

	(void)state;
	assert_non_null(s);
	snap_make(s, 1, 0);
	s->st.workers = 1;
	s->st.worker_total[0] = 100;
	out = render_all(&s->st);
	assert_null(strstr(out, "workers"));
	assert_null(strstr(out, "tunsplit_worker_"));
	free(out);
	s->st.role = "server";
	out = render_all(&s->st);
	assert_non_null(strstr(out, "workers: 1; sessions per worker: 100"));
	assert_non_null(strstr(out, "\"workers\":[{\"sessions\":100,"));
	assert_non_null(strstr(out,
	    "tunsplit_worker_sessions_total{worker=\"0\"} 100\n"));
	free(out);
	free(s);
}

/*
 * fuzz_status's seeds (tests/fuzz/corpus/status/seed_*) are real
 * workers' snapshots, made on x86_64: every one must still unpack, or
 * the fuzzer starts from nothing but refusals.  When struct status
 * changes, remake them with tests/fuzz/status_seeds.sh.
 */
static void
test_fuzz_seeds(void **state)
{
#if defined(__x86_64__)
	struct status		 out;
	struct status_blob	*blob;
	struct dirent		*d;
	const char		*src = getenv("TS_SRCDIR");
	char			 dir[4096], path[4096 + 2 + 256];
	uint8_t			*buf;
	size_t			 len, off, n, seeds = 0;
	uint32_t		 rl;
	long			 sz;
	DIR			*dp;
	FILE			*fp;

	(void)state;
	if (src == NULL)
		skip();
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/status", src);
	assert_non_null(dp = opendir(dir));
	while ((d = readdir(dp)) != NULL) {
		if (strncmp(d->d_name, "seed_", 5) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		assert_non_null(fp = fopen(path, "rb"));
		assert_int_equal(fseek(fp, 0, SEEK_END), 0);
		assert_true((sz = ftell(fp)) > 0);
		rewind(fp);
		assert_non_null(buf = malloc((size_t)sz));
		assert_int_equal(fread(buf, 1, (size_t)sz, fp), (size_t)sz);
		fclose(fp);
		len = (size_t)sz;
		/* The settings byte, then [u32 length][snapshot]s. */
		for (off = 1, n = 0; off + sizeof(rl) <= len; n++) {
			memcpy(&rl, buf + off, sizeof(rl));
			off += sizeof(rl);
			assert_true(rl <= len - off);
			if (unpack_exact(buf + off, rl, &out, &blob) != 0)
				fail_msg("%s: snapshot %zu does not unpack: "
				    "remake the seeds (status_seeds.sh)", path,
				    n);
			status_blob_free(blob);
			off += rl;
		}
		assert_int_equal(off, len);
		assert_true(n > 0);
		free(buf);
		seeds++;
	}
	closedir(dp);
	assert_true(seeds > 0);
#else
	(void)state;
	skip();		/* host-order bytes made on x86_64 */
#endif
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_round_trip_empty),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_corrupt_lengths),
		cmocka_unit_test(test_corrupt_any_byte),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_merge_three),
		cmocka_unit_test(test_merge_into_empty),
		cmocka_unit_test(test_workers_render),
		cmocka_unit_test(test_fuzz_seeds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
