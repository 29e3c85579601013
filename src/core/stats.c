/*
 * Counters for status and metrics.  See stats.h.
 */
#include "config.h"

#include "core/stats.h"

#include <string.h>
#include <time.h>

static const uint64_t stats_bounds[STATS_HIST_NBOUNDS] = STATS_HIST_BOUNDS;

void
stats_contact_ok(struct stats_contact *c, uint64_t now_ms)
{
	c->ok_ms = now_ms;
	c->has_ok = 1;
}

void
stats_contact_fail(struct stats_contact *c, uint64_t now_ms,
    const char *reason)
{
	c->fail_ms = now_ms;
	c->fail_reason = reason;
	c->has_fail = 1;
}

void
stats_contact_merge(struct stats_contact *a, const struct stats_contact *b)
{
	if (b->has_ok && (!a->has_ok || b->ok_ms > a->ok_ms))
		stats_contact_ok(a, b->ok_ms);
	if (b->has_fail && (!a->has_fail || b->fail_ms > a->fail_ms))
		stats_contact_fail(a, b->fail_ms, b->fail_reason);
}

void
stats_reason_add(struct stats_reasons *r, const char *reason)
{
	size_t	i;

	if (reason == NULL) {
		r->other++;
		return;
	}
	/* Pointer compare first: callers pass the same literal each time. */
	for (i = 0; i < r->nv; i++) {
		if (r->v[i].reason == reason ||
		    strcmp(r->v[i].reason, reason) == 0) {
			r->v[i].n++;
			return;
		}
	}
	if (r->nv == STATS_REASONS_MAX) {
		r->other++;
		return;
	}
	r->v[r->nv].reason = reason;
	r->v[r->nv].n = 1;
	r->nv++;
}

void
stats_reasons_merge(struct stats_reasons *a, const struct stats_reasons *b)
{
	size_t	i, j;

	a->other += b->other;
	for (i = 0; i < b->nv; i++) {
		for (j = 0; j < a->nv; j++)
			if (strcmp(a->v[j].reason, b->v[i].reason) == 0)
				break;
		if (j < a->nv)
			a->v[j].n += b->v[i].n;
		else if (a->nv == STATS_REASONS_MAX)
			a->other += b->v[i].n;
		else
			a->v[a->nv++] = b->v[i];
	}
}

void
stats_hist_merge(struct stats_hist *a, const struct stats_hist *b)
{
	size_t	i;

	for (i = 0; i < STATS_HIST_NBOUNDS + 1; i++)
		a->bucket[i] += b->bucket[i];
	a->count += b->count;
	a->sum_us += b->sum_us;
}

uint64_t
stats_reason_get(const struct stats_reasons *r, const char *reason)
{
	size_t	i;

	for (i = 0; i < r->nv; i++)
		if (strcmp(r->v[i].reason, reason) == 0)
			return r->v[i].n;
	return 0;
}

uint64_t
stats_reason_total(const struct stats_reasons *r)
{
	uint64_t	n = r->other;
	size_t		i;

	for (i = 0; i < r->nv; i++)
		n += r->v[i].n;
	return n;
}

void
stats_hist_add(struct stats_hist *h, uint64_t us)
{
	size_t	i;

	for (i = 0; i < STATS_HIST_NBOUNDS && us > stats_bounds[i]; i++)
		;
	h->bucket[i]++;
	h->count++;
	h->sum_us += us;
}

uint64_t
stats_hist_bound(size_t i)
{
	return i < STATS_HIST_NBOUNDS ? stats_bounds[i] : UINT64_MAX;
}

uint64_t
stats_now_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}
