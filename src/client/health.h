/*
 * A member's health, judged by the traffic it carries (no probes: a
 * client that probes its servers on a schedule is easy to tell from one
 * that does not, and a probe to a fixed URL is itself a leak).
 *
 *   up      flows take it.  HEALTH_DOWN_AFTER consecutive failures of
 *           flows before the server answered (connect refused or timed
 *           out, TLS handshake failed, closed before the connect status)
 *           take it down; any answer resets the count.
 *   down    no new flow takes it until its backoff has passed (1 s, then
 *           doubled per failed trial up to 60 s); then one flow is let
 *           through:
 *   trial   that flow's outcome decides: an answer brings the member up,
 *           a failure takes it down again with the backoff doubled.  A
 *           trial that reports nothing in HEALTH_TRIAL_MS lets another
 *           one through.
 *
 * Pure: the time is the caller's (unit tests run it on a fake clock).
 */
#ifndef TUNSPLIT_HEALTH_H
#define TUNSPLIT_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#define HEALTH_DOWN_AFTER	3
#define HEALTH_BACKOFF_MIN_MS	1000
#define HEALTH_BACKOFF_MAX_MS	60000
#define HEALTH_TRIAL_MS		15000
#define HEALTH_SLOW_SAMPLES	8	/* before the baseline is trusted */
#define HEALTH_SLOW_FACTOR	4
#define HEALTH_SLOW_MIN_MS	100
#define HEALTH_RTX_MIN_SEGS	100
#define HEALTH_RTX_MIN_PM	50	/* 5 % */

/* A recent average and a baseline of one measure (health_sample). */
struct health_avg {
	uint32_t	 recent, base;	/* microseconds, or per mille */
	uint32_t	 n;		/* samples so far (stops at 2^31) */
	uint64_t	 at_ms;		/* the last one */
};

enum health_state {
	HEALTH_UP = 0,
	HEALTH_DOWN,
	HEALTH_TRIAL,
};

struct health {
	enum health_state	 state;
	unsigned		 fails;		/* consecutive, before an answer */
	uint64_t		 since_ms;	/* down (or trial) since; up: 0 */
	uint64_t		 retry_ms;	/* down, trial: next flow let in */
	unsigned		 backoff_ms;
	uint64_t		 downs;		/* times it went down */
	bool			 soft;		/* down for being slow: degraded */
	char			 why[64];	/* the failure that took it down */
	struct health_avg	 first_byte;	/* request to answer, us */
	struct health_avg	 rtx;		/* retransmits, per mille */
};

/* Whether a new flow may take it at now. */
bool health_usable(const struct health *h, uint64_t now);
/* A new flow starts on it: a down one due for a retry goes to trial
 * (then true). */
bool health_start(struct health *h, uint64_t now);
/* Evidence from a flow; true when the state changed (to log). */
bool health_fail(struct health *h, uint64_t now, const char *why);
bool health_ok(struct health *h, uint64_t now);
/* An answer saying we are refused: down at once. */
bool health_refused(struct health *h, uint64_t now, const char *why);
/* An answer that took fb_us from the request (0: not measured): up, or
 * degraded when slow (above); true when the state changed. */
bool health_answer(struct health *h, uint64_t now, uint32_t fb_us);
/* A flow's outer connection sent segs segments, rtx of them again. */
bool health_retrans(struct health *h, uint64_t now, uint32_t segs,
    uint32_t rtx);
/*
 * One piece of evidence as another of the client's worker processes
 * recorded it on its copy of the member (group.h tells, workers.h
 * carries): applied to this copy with health_apply, so that every
 * worker judges from the flows of all.
 */
enum health_ev {
	HEALTH_EV_TRIAL = 1,	/* its trial flow started: no other now */
	HEALTH_EV_FAIL,		/* why */
	HEALTH_EV_ANSWER,	/* a: the first-byte time, us (0: none) */
	HEALTH_EV_REFUSED,	/* why */
	HEALTH_EV_RETRANS,	/* a segments sent, b of them again */
	HEALTH_EV_EXPLORE,	/* fastest sent a flow to measure it */
};

struct health_event {
	uint8_t		 kind;		/* enum health_ev */
	uint32_t	 a, b;
	char		 why[64];	/* NUL-terminated */
};

/* As health_fail() and the rest would for the same event; TRIAL takes
 * a down member to trial (its backoff over or not) and EXPLORE marks
 * its first-byte time measured now.  downs counts only the downs of
 * this worker's own evidence, so that the workers' sum (status) counts
 * each once.  True when the state changed. */
bool health_apply(struct health *h, uint64_t now,
    const struct health_event *ev);
/* Whether a group may take it when none of its members is usable. */
bool health_degraded(const struct health *h);
/* "up", "down", "trial", "degraded" */
const char *health_name(const struct health *h);
const char *health_state_name(enum health_state s);

#endif
