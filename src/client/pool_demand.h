/*
 * How many warm connections the pool should hold: a pure function of the
 * recent flow arrivals and the handshake time, on a clock the caller
 * passes (the loop's, or a test's).
 *
 * The arrival rate is the larger of two estimates: a decaying count of
 * new flows (half-life POOL_DEMAND_HALF_MS), read as flows per second,
 * which remembers a burst for a few seconds; and the inverse of the
 * longer of the last two gaps between arrivals (or of the time since the
 * last one, if longer still), which sees a run of sequential flows from
 * its third flow on, before the count has built up, while two flows at
 * once after a long pause do not look like a burst.  While flows keep
 * coming, the pool holds what the next handshake time will consume with
 * room for one more round (Little's law, twice):
 *
 *	target = clamp(ceil(2 * rate * handshake), min, max)
 *
 * and once no flow has arrived for `idle` milliseconds (or none ever
 * has) the target is 0: an idle client opens nothing.  idle 0 keeps the
 * floor forever (the old fixed pool, which beacons).  The first flow
 * after idle (or the first ever) asks for min + 1 (when min > 0) until
 * the next flow arrives: before any rate is known, a second flow right
 * behind it (a page's next resource) then finds one ready, while the
 * floor's is still in its handshake and the first flow's own waits for
 * its offer.
 *
 * A standby member of a group (one whose group sends its flows to
 * another member now) holds the floor while its group is busy: flows of
 * the group elsewhere within `idle` keep `min` warm, so a failover finds
 * a connection ready; the active member's own flows size its pool.
 */
#ifndef TUNSPLIT_POOL_DEMAND_H
#define TUNSPLIT_POOL_DEMAND_H

#include <stdbool.h>
#include <stdint.h>

#define POOL_DEMAND_HALF_MS	1000	/* half-life of the arrival count */
#define POOL_DEMAND_HS_MIN_MS	25	/* a dial is never free */
#define POOL_DEMAND_HS_INIT_MS	100	/* before the first handshake */

struct pool_demand {
	uint64_t	 count;		/* arrivals, 1/1024ths, decayed to at_ms */
	uint64_t	 at_ms;
	uint64_t	 last_flow_ms;
	uint64_t	 gap_ms[2];	/* the last two gaps between arrivals */
	unsigned	 ngaps;		/* of them known, 0..2 */
	bool		 seen;		/* a flow has arrived */
	unsigned	 hs_ms;		/* handshake time, smoothed */
	uint64_t	 standby_ms;	/* the group's last flow elsewhere */
	bool		 standby;	/* one has been seen */
};

void	 pool_demand_init(struct pool_demand *);
/* A new flow asked for a connection at now. */
void	 pool_demand_flow(struct pool_demand *, uint64_t now_ms);
/* A flow of the pool's group went to another member at now. */
void	 pool_demand_standby(struct pool_demand *, uint64_t now_ms);
/* A pool handshake (dial to TLS done) took ms. */
void	 pool_demand_handshake(struct pool_demand *, unsigned ms);
/* Flows per second at now, in 1/1024ths. */
uint64_t pool_demand_rate(const struct pool_demand *, uint64_t now_ms);
unsigned pool_demand_target(const struct pool_demand *, uint64_t now_ms,
	    unsigned min, unsigned max, unsigned idle_ms);

#endif
