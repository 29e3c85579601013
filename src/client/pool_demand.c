/*
 * The warm pool's size from the flow arrival rate (see pool_demand.h).
 * Integer arithmetic only: no libm, and the same answer on every box.
 */
#include "config.h"

#include "client/pool_demand.h"

#define ONE	1024u		/* fixed point */
#define LN2	710u		/* ln 2 in 1/1024ths */

/* count * 2^(-dt / half-life): whole halvings by shift, the fraction
 * x in [0, 1) by the series of e^(-x ln 2) to x^4 (within 0.2 %, so that
 * many small steps compose as one), in Q16 by Horner's rule. */
static uint64_t
decay(uint64_t count, uint64_t dt_ms)
{
	uint64_t halvings = dt_ms / POOL_DEMAND_HALF_MS;
	uint64_t x = (dt_ms % POOL_DEMAND_HALF_MS) * 65536 /
	    POOL_DEMAND_HALF_MS;
	uint64_t f;

	if (halvings >= 64)
		return 0;
	count >>= halvings;
	f = 3638 - (x * 630 >> 16);		/* ln2^3/6, ln2^4/24 */
	f = 15743 - (x * f >> 16);		/* ln2^2/2 */
	f = 45426 - (x * f >> 16);		/* ln2 */
	f = 65536 - (x * f >> 16);
	return count * f >> 16;
}

void
pool_demand_init(struct pool_demand *d)
{
	d->count = 0;
	d->at_ms = 0;
	d->last_flow_ms = 0;
	d->gap_ms[0] = d->gap_ms[1] = 0;
	d->ngaps = 0;
	d->seen = false;
	d->hs_ms = POOL_DEMAND_HS_INIT_MS;
	d->standby_ms = 0;
	d->standby = false;
}

void
pool_demand_standby(struct pool_demand *d, uint64_t now_ms)
{
	d->standby_ms = now_ms;
	d->standby = true;
}

void
pool_demand_flow(struct pool_demand *d, uint64_t now_ms)
{
	if (now_ms > d->at_ms) {
		d->count = decay(d->count, now_ms - d->at_ms);
		d->at_ms = now_ms;
	}
	if (d->count < (UINT64_C(1) << 40))
		d->count += ONE;
	if (d->seen && now_ms >= d->last_flow_ms) {
		d->gap_ms[1] = d->gap_ms[0];
		d->gap_ms[0] = now_ms - d->last_flow_ms;
		if (d->ngaps < 2)
			d->ngaps++;
	}
	d->last_flow_ms = now_ms;
	d->seen = true;
}

void
pool_demand_handshake(struct pool_demand *d, unsigned ms)
{
	/* An EWMA of 1/8: one slow handshake does not double the pool. */
	d->hs_ms = (unsigned)(((uint64_t)d->hs_ms * 7 + ms) / 8);
}

uint64_t
pool_demand_rate(const struct pool_demand *d, uint64_t now_ms)
{
	uint64_t c = now_ms > d->at_ms ? decay(d->count, now_ms - d->at_ms) :
	    d->count;
	uint64_t rate, gap, since;

	/* A decaying count with half-life H holds the arrivals of the last
	 * H / ln 2: rate = count * ln 2 / H. */
	rate = c * LN2 * 1000 / ONE / POOL_DEMAND_HALF_MS;
	if (d->ngaps == 2) {
		since = now_ms > d->last_flow_ms ? now_ms - d->last_flow_ms : 0;
		gap = d->gap_ms[0] > d->gap_ms[1] ? d->gap_ms[0] : d->gap_ms[1];
		if (since > gap)
			gap = since;
		if (gap < 1)
			gap = 1;
		if (ONE * 1000 / gap > rate)
			rate = ONE * 1000 / gap;
	}
	return rate;
}

unsigned
pool_demand_target(const struct pool_demand *d, uint64_t now_ms,
    unsigned min, unsigned max, unsigned idle_ms)
{
	uint64_t rate, hs, need;

	if (min > max)
		min = max;
	if (idle_ms != 0 && (!d->seen || now_ms - d->last_flow_ms >= idle_ms))
		return d->standby && now_ms - d->standby_ms < idle_ms ? min : 0;
	rate = pool_demand_rate(d, now_ms);
	hs = d->hs_ms < POOL_DEMAND_HS_MIN_MS ? POOL_DEMAND_HS_MIN_MS :
	    d->hs_ms;
	/* ceil(2 * rate * hs), rate in 1/1024 per second, hs in ms. */
	need = (2 * rate * hs + ONE * 1000 - 1) / (ONE * 1000);
	if (need < min)
		need = min;
	/* The first flow after idle (or ever), until the next one: one
	 * more than a floor.  A second flow a round trip behind would
	 * otherwise find the floor's connection still in its handshake and
	 * the first one's own still waiting for its offer, and dial (3 RTT
	 * to its first byte). */
	if (min > 0 && need <= min && (d->ngaps == 0 ||
	    (idle_ms != 0 && d->gap_ms[0] >= idle_ms)))
		need = min + 1;
	if (need > max)
		need = max;
	return (unsigned)need;
}
