/*
 * Counters shared by both roles and read by the control socket and the
 * metrics endpoint: failures counted by reason, and a latency histogram.
 * Plain data, no I/O, no allocation: a counter update is a few compares.
 */
#ifndef TUNSPLIT_STATS_H
#define TUNSPLIT_STATS_H

#include <stddef.h>
#include <stdint.h>

#define STATS_REASONS_MAX	32

/*
 * Reasons are the static strings the flow and session code already log
 * ("server reset", "egress denied"): the table keys on them, so a reason
 * costs nothing to define.  Past STATS_REASONS_MAX distinct strings the
 * rest are counted under "other".
 */
struct stats_reasons {
	struct {
		const char	*reason;
		uint64_t	 n;
	}		 v[STATS_REASONS_MAX];
	size_t		 nv;
	uint64_t	 other;
};

/* Upper bounds of the buckets, microseconds; one more bucket is +Inf. */
#define STATS_HIST_BOUNDS	{ 1000, 2500, 5000, 10000, 25000, 50000, \
	100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000 }
#define STATS_HIST_NBOUNDS	13

struct stats_hist {
	uint64_t	 bucket[STATS_HIST_NBOUNDS + 1];	/* not cumulative */
	uint64_t	 count;
	uint64_t	 sum_us;
};

/*
 * Contact with the peer (the client's server): when an outer connection
 * last got through to it -- a completed handshake or a reply -- and when
 * one last failed to, with why (a static string).  Loop milliseconds;
 * has_ok / has_fail say whether it ever happened.
 */
struct stats_contact {
	uint64_t	 ok_ms, fail_ms;
	const char	*fail_reason;
	unsigned	 has_ok : 1, has_fail : 1;
};

void     stats_contact_ok(struct stats_contact *c, uint64_t now_ms);
void     stats_contact_fail(struct stats_contact *c, uint64_t now_ms,
    const char *reason);
/* Merge: the later contact and the later failure of a and b into a. */
void     stats_contact_merge(struct stats_contact *a,
    const struct stats_contact *b);

void     stats_reason_add(struct stats_reasons *r, const char *reason);
/* Adds b's counts into a (the server's workers, summed for the status). */
void     stats_reasons_merge(struct stats_reasons *a,
    const struct stats_reasons *b);
void     stats_hist_merge(struct stats_hist *a, const struct stats_hist *b);
uint64_t stats_reason_get(const struct stats_reasons *r, const char *reason);
uint64_t stats_reason_total(const struct stats_reasons *r);

void     stats_hist_add(struct stats_hist *h, uint64_t us);
/* Upper bound of bucket i in microseconds (UINT64_MAX for the last). */
uint64_t stats_hist_bound(size_t i);

/* Monotonic clock in microseconds, for latencies finer than the loop's
 * cached millisecond time. */
uint64_t stats_now_us(void);

#endif
