/*
 * Outbound groups (client.outbounds entries with type:): which member a
 * new flow, UDP or ICMP association takes.  client_route() answers with
 * an outbound that may be a group; group_pick() resolves it, at the
 * flow's start, to a member that is not a group, and the flow keeps that
 * member for its whole life: only new flows move when health changes.
 *
 *   failover  the first member, in the order given, that is up (health.h)
 *   select    the member chosen at run time (tunsplit select GROUP
 *             MEMBER), else the first; taken only while it is up
 *   balance   by a hash of the destination (its domain when known, else
 *             its address), over the members that are up, so one site
 *             sticks to one member; a member going down moves only its
 *             own share.  Members weigh their weight: (1..100) each;
 *             strategy flow spreads each new flow instead.
 *   fastest   the member of lowest recent cost (first-byte time, see
 *             health.h), with hysteresis: another takes over only when
 *             cheaper by GROUP_FASTEST_MARGIN_PCT and the current choice
 *             is at least GROUP_FASTEST_HOLD_MS old.  A member whose cost
 *             is unknown or GROUP_FASTEST_EXPLORE_MS old gets one new
 *             flow to measure it (a real flow: no probe is ever sent).
 *
 * A member degraded (slow, health.h) is taken only when none is up.
 *
 * Members may be groups (check rejects cycles).  Fail closed: when no
 * member is up the answer is the group itself, whose protocol is block:
 * the flow is refused (RST, ICMP prohibited), never sent elsewhere.
 */
#ifndef TUNSPLIT_GROUP_H
#define TUNSPLIT_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/health.h"

#define GROUP_FASTEST_MARGIN_PCT	25
#define GROUP_FASTEST_HOLD_MS		5000
#define GROUP_FASTEST_EXPLORE_MS	30000

struct outbound;
struct outbounds;
struct rule_query;

bool outbound_is_group(const struct outbound *ob);
/* Whether ob is a member of some group of its generation: only then do
 * its new flows go elsewhere while it is down, and is its health news
 * for the other workers; a lone outbound's new flows still try it. */
bool group_is_member(const struct outbound *ob);
/* A new flow to q on ob at now: ob itself, or its member as above.
 * skip: a member not to take (the one a flow just failed on), or NULL. */
struct outbound *group_pick(struct outbound *ob, const struct rule_query *q,
    uint64_t now, const struct outbound *skip);
/* The same for a new flow that starts on the answer (a TCP one: q's
 * network): fastest may send it to measure another member, strategy
 * flow counts it, and the other members' pools stand by
 * (group_standby).  group_pick alone changes none of that (a look, a
 * UDP datagram). */
struct outbound *group_pick_flow(struct outbound *ob,
    const struct rule_query *q, uint64_t now);
/* A new flow of group g took picked: g's other leaves are on standby,
 * their warm pools hold their floor (pool_demand.h), a pool per member
 * following the active one(s).  Nothing for a g that is no group. */
void group_standby(struct outbound *g, const struct outbound *picked);
/* ob, or for a group its first member's leaf, health aside: what the
 * group stands for where one outbound must be named (the final one's
 * transport, its server). */
struct outbound *group_leaf(struct outbound *ob);
/* The member of select group ob that is chosen (never NULL). */
struct outbound *group_selected(const struct outbound *ob);
/* tunsplit select: 0, or -1 with why in err. */
int group_select(const struct outbounds *obs, const char *group,
    const char *member, char *err, size_t errlen);
/*
 * The select groups' choices, kept across a restart in path (the
 * control socket's path with ".select" appended: group_state_path), one
 * "GROUP MEMBER" line each.  _load applies the lines that still name a
 * select group and one of its members (others are logged and skipped);
 * _save writes every select group's choice (atomically).  0, or -1
 * (logged); a missing file loads as empty.
 */
int group_state_load(const struct outbounds *obs, const char *path);
int group_state_save(const struct outbounds *obs, const char *path);
/* path for control socket sock into buf; NULL when there is none. */
const char *group_state_path(const char *sock, char *buf, size_t len);

/*
 * Health shared by the client's worker processes (workers.h).  Every
 * piece of evidence recorded on a group's member (outbound_fail() and
 * the rest, a trial flow let through, fastest's measuring flow) is told
 * to the hook as news; another worker's news is applied to this
 * worker's outbound of the member's name (health_apply), unless that
 * one's server is not the one the news is about (id: its protocol,
 * server, port and credentials, hashed): a reload reaches the workers
 * one by one.  So every worker judges each member from the flows of
 * all, and they agree on down, degraded, up and fastest's costs.
 */
struct group_news {
	struct health_event	 ev;
	uint32_t		 id;
	char			 name[33];	/* CONF_OB_NAME_MAX + 1 */
};

/* tell: NULL (one worker) tells no one.  take: called before a new TCP
 * flow's pick in a group (group_pick_flow), to take in the news other
 * workers have sent so far, so that a flow the app opens after another
 * one's failure is judged with it; or NULL. */
void group_news_hook(void (*tell)(void *arg, const struct group_news *n),
    void (*take)(void *arg), void *arg);
/* Evidence about leaf ob, already applied to its own health: told. */
void group_tell(const struct outbound *ob, enum health_ev kind, uint32_t a,
    uint32_t b, const char *why);
/* News from worker from (len bytes at buf, untrusted): applied to obs's
 * member of that name, a change logged.  0, or -1 (not applied). */
int  group_news_take(const struct outbounds *obs, const void *buf,
    size_t len, unsigned from);

/* Monotonic milliseconds: the clock health is judged by. */
uint64_t group_now(void);

#endif
