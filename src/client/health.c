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

void
health_start(struct health *h, uint64_t now)
{
	if (h->state == HEALTH_UP || now < h->retry_ms)
		return;
	h->state = HEALTH_TRIAL;
	h->retry_ms = now + HEALTH_TRIAL_MS;
}

static void
health_down(struct health *h, uint64_t now, const char *why)
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
	snprintf(h->why, sizeof(h->why), "%s", why);
}

bool
health_fail(struct health *h, uint64_t now, const char *why)
{
	switch (h->state) {
	case HEALTH_UP:
		if (++h->fails < HEALTH_DOWN_AFTER)
			return false;
		health_down(h, now, why);
		return true;
	case HEALTH_TRIAL:
		health_down(h, now, why);
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
	h->why[0] = '\0';
	return was;
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
