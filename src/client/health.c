/*
 * A member's health from its flows' outcomes (health.h).
 */
#include "config.h"

#include "client/health.h"

#include <stdio.h>

bool
health_usable(const struct health *h, uint64_t now)
{
	return h->state == HEALTH_UP || now >= h->retry_ms;
}

bool
health_start(struct health *h, uint64_t now)
{
	if (h->state == HEALTH_UP || now < h->retry_ms)
		return false;
	h->state = HEALTH_TRIAL;
	h->retry_ms = now + HEALTH_TRIAL_MS;
	return true;
}

static void
health_down(struct health *h, uint64_t now, const char *why, bool soft)
{
	unsigned b = h->backoff_ms;

	b = b == 0 ? HEALTH_BACKOFF_MIN_MS : b * 2;
	if (b > HEALTH_BACKOFF_MAX_MS)
		b = HEALTH_BACKOFF_MAX_MS;
	h->backoff_ms = b;
	h->retry_ms = now + b;
	if (h->state == HEALTH_UP) {
		h->since_ms = now;
		h->downs++;
	}
	h->state = HEALTH_DOWN;
	h->soft = soft;
	snprintf(h->why, sizeof(h->why), "%s", why);
}

bool
health_fail(struct health *h, uint64_t now, const char *why)
{
	switch (h->state) {
	case HEALTH_UP:
		if (++h->fails < HEALTH_DOWN_AFTER)
			return false;
		health_down(h, now, why, false);
		return true;
	case HEALTH_TRIAL:
		health_down(h, now, why, false);
		return true;
	case HEALTH_DOWN:	/* a flow from before: nothing new */
		break;
	}
	return false;
}

bool
health_ok(struct health *h, uint64_t now)
{
	bool was = h->state != HEALTH_UP;

	(void)now;
	h->state = HEALTH_UP;
	h->fails = 0;
	h->since_ms = h->retry_ms = 0;
	h->backoff_ms = 0;
	h->soft = false;
	h->why[0] = '\0';
	return was;
}

bool
health_refused(struct health *h, uint64_t now, const char *why)
{
	if (h->state == HEALTH_DOWN && !health_usable(h, now))
		return false;
	h->fails = HEALTH_DOWN_AFTER;
	health_down(h, now, why, false);
	return true;
}

/* v against a baseline: far above it (HEALTH_SLOW_FACTOR times, and min
 * above it too). */
static bool
health_far_above(uint32_t v, uint32_t base, uint32_t min)
{
	return (uint64_t)v > (uint64_t)base * HEALTH_SLOW_FACTOR &&
	    v > (uint64_t)base + min;
}

/*
 * A sample: the recent average always takes it; the baseline only when
 * it is not far above it, so that a sudden slowness stands out from the
 * past it is judged by (a lasting one is adopted by the trials, below).
 * Whether the member is now slow: recent far above baseline.
 */
static bool
health_sample(struct health_avg *a, uint64_t now, uint32_t v, uint32_t min)
{
	if (a->n == 0)
		a->recent = a->base = v;
	a->recent = (uint32_t)(((uint64_t)a->recent * 3 + v) / 4);
	if (!health_far_above(v, a->base, min))
		a->base = (uint32_t)(((uint64_t)a->base * 31 + v) / 32);
	if (a->n < (1u << 31))
		a->n++;
	a->at_ms = now;
	return a->n > HEALTH_SLOW_SAMPLES &&
	    health_far_above(a->recent, a->base, min);
}

bool
health_answer(struct health *h, uint64_t now, uint32_t fb_us)
{
	struct health_avg *a = &h->first_byte;
	const uint32_t min = HEALTH_SLOW_MIN_MS * 1000;
	char why[sizeof(h->why)];

	if (fb_us == 0)
		return health_ok(h, now);
	if (h->state == HEALTH_UP) {
		if (!health_sample(a, now, fb_us, min))
			return health_ok(h, now);
		snprintf(why, sizeof(why), "slow: first byte %u ms, its "
		    "baseline %u ms", a->recent / 1000, a->base / 1000);
		health_down(h, now, why, true);
		return true;
	}
	/* Down or on trial: this one answer decides.  A slow one moves the
	 * baseline 1/8 of the way: a lasting change becomes the new normal
	 * after some trials (minutes, with the backoff). */
	a->at_ms = now;
	if (a->n > 0 && health_far_above(fb_us, a->base, min)) {
		a->base += (fb_us - a->base) / 8;
		if (h->state != HEALTH_TRIAL)
			return false;
		snprintf(why, sizeof(why), "slow: first byte %u ms, its "
		    "baseline %u ms", fb_us / 1000, a->base / 1000);
		health_down(h, now, why, true);
		return true;
	}
	a->recent = fb_us;
	return health_ok(h, now);
}

bool
health_retrans(struct health *h, uint64_t now, uint32_t segs, uint32_t rtx)
{
	struct health_avg *a = &h->rtx;
	char why[sizeof(h->why)];
	uint32_t pm;

	if (segs < HEALTH_RTX_MIN_SEGS)
		return false;
	pm = (uint32_t)((uint64_t)(rtx > segs ? segs : rtx) * 1000 / segs);
	if (!health_sample(a, now, pm, HEALTH_RTX_MIN_PM) ||
	    h->state != HEALTH_UP)
		return false;
	snprintf(why, sizeof(why), "retransmits %u.%u %%, its baseline "
	    "%u.%u %%", a->recent / 10, a->recent % 10, a->base / 10,
	    a->base % 10);
	health_down(h, now, why, true);
	return true;
}

static bool
health_apply_ev(struct health *h, uint64_t now, const struct health_event *ev)
{
	switch (ev->kind) {
	case HEALTH_EV_TRIAL:
		if (h->state == HEALTH_DOWN) {
			h->state = HEALTH_TRIAL;
			h->retry_ms = now + HEALTH_TRIAL_MS;
		}
		return false;
	case HEALTH_EV_FAIL:
		return health_fail(h, now, ev->why);
	case HEALTH_EV_ANSWER:
		return health_answer(h, now, ev->a);
	case HEALTH_EV_REFUSED:
		return health_refused(h, now, ev->why);
	case HEALTH_EV_RETRANS:
		return health_retrans(h, now, ev->a, ev->b);
	case HEALTH_EV_EXPLORE:
		h->first_byte.at_ms = now;
		return false;
	}
	return false;
}

bool
health_apply(struct health *h, uint64_t now, const struct health_event *ev)
{
	uint64_t downs = h->downs;
	bool r;

	r = health_apply_ev(h, now, ev);
	h->downs = downs;	/* counted where the evidence was */
	return r;
}

bool
health_degraded(const struct health *h)
{
	return h->state != HEALTH_UP && h->soft;
}

const char *
health_name(const struct health *h)
{
	return health_degraded(h) && h->state == HEALTH_DOWN ? "degraded" :
	    health_state_name(h->state);
}

const char *
health_state_name(enum health_state s)
{
	switch (s) {
	case HEALTH_UP:
		return "up";
	case HEALTH_DOWN:
		return "down";
	case HEALTH_TRIAL:
		return "trial";
	}
	return "?";
}
