/*
 * Outbound groups: a new flow's member (group.h).
 */
#include "config.h"

#include "client/group.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "client/outbound.h"
#include "client/pool.h"
#include "conf/conf.h"
#include "core/log.h"
#include "rules/rules.h"

bool
outbound_is_group(const struct outbound *ob)
{
	return ob->co->group != CONF_GROUP_NONE;
}

uint64_t
group_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct outbound *
group_leaf(struct outbound *ob)
{
	while (outbound_is_group(ob) && ob->nmembers > 0)
		ob = ob->co->group == CONF_GROUP_SELECT ? group_selected(ob) :
		    ob->members[0];
	return ob;
}

struct outbound *
group_selected(const struct outbound *ob)
{
	size_t i;

	for (i = 0; i < ob->nmembers; i++)
		if (strcmp(ob->stats->selected, outbound_name(ob->members[i]))
		    == 0)
			return ob->members[i];
	return ob->members[0];
}

/* How a pick is asked for: skip, soft (group_try) and commit: a new
 * TCP flow starts on the answer (group_pick_flow). */
struct group_ask {
	const struct rule_query	*q;
	uint64_t		 now;
	const struct outbound	*skip;
	bool			 soft;
	bool			 commit;
};

static struct outbound *group_pick_pass(struct outbound *ob,
    const struct group_ask *a);
static void group_news_poll(void);

/* A member's leaf that may take a flow now, or NULL.  soft: a degraded
 * one too (the second pass, when no member is up). */
static struct outbound *
group_try(struct outbound *m, const struct group_ask *a)
{
	const struct health *h;

	if (m == a->skip)
		return NULL;
	if (outbound_is_group(m))
		return group_pick_pass(m, a);
	h = &m->stats->health;
	return health_usable(h, a->now) || (a->soft && health_degraded(h)) ?
	    m : NULL;
}

/* FNV-1a over key, the member's name and k, finished by a mixer. */
static uint64_t
group_hash(const uint8_t *key, size_t n, const char *name, unsigned k)
{
	uint64_t h = 1469598103934665603ULL;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ key[i]) * 1099511628211ULL;
	for (; *name != '\0'; name++)
		h = (h ^ (uint8_t)*name) * 1099511628211ULL;
	h = (h ^ k) * 1099511628211ULL;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 32);
}

/* A member's weight in a balance group (at least 1). */
#define GROUP_WEIGHT(ob, i)	\
	((ob)->co->weights[i] > 0 ? (uint64_t)(ob)->co->weights[i] : 1)

/*
 * balance by destination: rendezvous hashing, a member of weight w
 * standing as w entries (its highest hash of the key counts): each member
 * takes its weight's share of keys, and a member going down moves only
 * its own.  The key is the destination (its domain when known, else its
 * address).
 *
 * strategy flow: weighted round robin over the members usable now, by a
 * count of the group's new TCP flows (a UDP association's datagrams must
 * all take one member: the destination), so that any W flows in a row (W
 * the sum of their weights) split exactly by weight.  Hashing the count
 * split them only on average: 8 parallel flows over two members went
 * 5:3 or 6:2 as often as 4:4, and the busier member set the time of all.
 */
static struct outbound *
group_balance(struct outbound *ob, const struct group_ask *a)
{
	const struct rule_query *q = a->q;
	struct outbound *r, *best = NULL;
	struct outbound *up[CONF_MAX_OUTBOUNDS];
	const uint8_t *key = NULL;
	uint64_t h, besth = 0, seq, total = 0;
	size_t i, n = 0;
	unsigned k;

	if (ob->co->per_flow && (q == NULL || q->network == RULES_NET_TCP)) {
		seq = a->commit ? ob->stats->flows++ : ob->stats->flows;
		for (i = 0; i < ob->nmembers; i++)
			if ((up[i] = group_try(ob->members[i], a)) != NULL)
				total += GROUP_WEIGHT(ob, i);
		if (total == 0)
			return NULL;
		seq %= total;
		for (i = 0; i < ob->nmembers; i++) {
			if (up[i] == NULL)
				continue;
			if (seq < GROUP_WEIGHT(ob, i))
				return up[i];
			seq -= GROUP_WEIGHT(ob, i);
		}
		return NULL;	/* not reached */
	}
	if (q != NULL && q->domain != NULL) {
		key = (const uint8_t *)q->domain;
		n = strlen(q->domain);
	} else if (q != NULL && q->family != 0) {
		key = q->dst;
		n = sizeof(q->dst);
	}
	for (i = 0; i < ob->nmembers; i++) {
		if ((r = group_try(ob->members[i], a)) == NULL)
			continue;
		for (k = 0; k < ob->co->weights[i] || k == 0; k++) {
			h = group_hash(key, n, outbound_name(ob->members[i]), k);
			if (best == NULL || h > besth) {
				best = r;
				besth = h;
			}
		}
	}
	return best;
}

/* A leaf's recent cost for fastest: its first-byte time (health.h), or
 * UINT32_MAX while unknown. */
static uint32_t
group_cost(const struct outbound *r)
{
	const struct health_avg *a = &r->stats->health.first_byte;

	return a->n == 0 ? UINT32_MAX : a->recent;
}

/* Whether fastest should measure leaf r again (one flow). */
static bool
group_stale(const struct outbound *r, uint64_t now)
{
	const struct health_avg *a = &r->stats->health.first_byte;

	return (a->n == 0 && a->at_ms == 0) ||
	    now - a->at_ms >= GROUP_FASTEST_EXPLORE_MS;
}

/*
 * fastest: the member chosen (stats->selected) keeps new flows until
 * another has been cheaper by GROUP_FASTEST_MARGIN_PCT and the choice is
 * GROUP_FASTEST_HOLD_MS old.  The others' costs are what their own flows
 * measured: a member with none for GROUP_FASTEST_EXPLORE_MS (or ever)
 * gets one new flow, the choice unchanged, to measure it again.
 */
static struct outbound *
group_fastest(struct outbound *ob, const struct group_ask *a)
{
	struct outbound_stats *st = ob->stats;
	struct outbound *r, *rcur = NULL, *rbest = NULL, *rold = NULL;
	uint64_t now = a->now;
	size_t i, cur = 0, best = 0;
	uint32_t c, ccur = 0, cbest = 0;

	for (i = 0; i < ob->nmembers; i++) {
		if ((r = group_try(ob->members[i], a)) == NULL)
			continue;
		c = group_cost(r);
		if (strcmp(st->selected, outbound_name(ob->members[i])) == 0) {
			rcur = r;
			cur = i;
			ccur = c;
		} else if (rold == NULL && group_stale(r, now))
			rold = r;
		if (rbest == NULL || c < cbest) {
			rbest = r;
			best = i;
			cbest = c;
		}
	}
	if (rbest == NULL)
		return NULL;
	if (rcur != NULL && (rbest == rcur || cbest == UINT32_MAX ||
	    now - st->chosen_ms < GROUP_FASTEST_HOLD_MS ||
	    (uint64_t)cbest * 100 >= (uint64_t)ccur *
	    (100 - GROUP_FASTEST_MARGIN_PCT))) {
		if (a->commit && rold != NULL && rold != rcur) {
			/* one flow per period */
			rold->stats->health.first_byte.at_ms = now;
			group_tell(rold, HEALTH_EV_EXPLORE, 0, 0, NULL);
			return rold;
		}
		return rcur;
	}
	if (rcur != NULL)
		log_info("group %s: fastest is now %s (first byte %u ms, "
		    "against %u ms on %s)", outbound_name(ob),
		    outbound_name(ob->members[best]), cbest / 1000,
		    ccur / 1000, outbound_name(ob->members[cur]));
	else
		log_info("group %s: fastest is now %s", outbound_name(ob),
		    outbound_name(ob->members[best]));
	snprintf(st->selected, sizeof(st->selected), "%s",
	    outbound_name(ob->members[best]));
	st->chosen_ms = now;
	return rbest;
}

static struct outbound *
group_pick_pass(struct outbound *ob, const struct group_ask *a)
{
	struct outbound *r;
	size_t i;

	switch (ob->co->group) {
	case CONF_GROUP_SELECT:
		return group_try(group_selected(ob), a);
	case CONF_GROUP_BALANCE:
		return group_balance(ob, a);
	case CONF_GROUP_FASTEST:
		return group_fastest(ob, a);
	default:	/* failover */
		for (i = 0; i < ob->nmembers; i++)
			if ((r = group_try(ob->members[i], a)) != NULL)
				return r;
		return NULL;
	}
}

static struct outbound *
group_pick_ask(struct outbound *ob, struct group_ask *a)
{
	struct outbound *r;

	if (!outbound_is_group(ob))
		return ob;
	/* Members up first; then a degraded one (slow beats none). */
	a->soft = false;
	if ((r = group_pick_pass(ob, a)) != NULL)
		return r;
	a->soft = true;
	if ((r = group_pick_pass(ob, a)) != NULL)
		return r;
	return ob;	/* none up: the group refuses (fail closed) */
}

struct outbound *
group_pick(struct outbound *ob, const struct rule_query *q, uint64_t now,
    const struct outbound *skip)
{
	struct group_ask a = { q, now, skip, false, false };

	return group_pick_ask(ob, &a);
}

struct outbound *
group_pick_flow(struct outbound *ob, const struct rule_query *q,
    uint64_t now)
{
	struct group_ask a = { q, now, NULL, false,
	    q != NULL && q->network == RULES_NET_TCP };
	struct outbound *r;

	if (a.commit && outbound_is_group(ob))
		group_news_poll();
	r = group_pick_ask(ob, &a);

	if (a.commit)
		group_standby(ob, r);
	return r;
}

void
group_standby(struct outbound *g, const struct outbound *picked)
{
	struct outbound *m;
	size_t i;

	for (i = 0; outbound_is_group(g) && i < g->nmembers; i++) {
		m = g->members[i];
		if (outbound_is_group(m))
			group_standby(m, picked);
		else if (m != picked)
			pool_standby(m->pool);
	}
}

int
group_select(const struct outbounds *obs, const char *group,
    const char *member, char *err, size_t errlen)
{
	struct outbound *g = NULL;
	size_t i;

	for (i = 0; i < obs->n; i++)
		if (strcmp(outbound_name(obs->v[i]), group) == 0)
			g = obs->v[i];
	if (g == NULL || g->co->group != CONF_GROUP_SELECT) {
		snprintf(err, errlen, "%s: no group of that name with type: "
		    "select", group);
		return -1;
	}
	for (i = 0; i < g->nmembers; i++)
		if (strcmp(outbound_name(g->members[i]), member) == 0)
			break;
	if (i == g->nmembers) {
		snprintf(err, errlen, "%s: not a member of %s", member, group);
		return -1;
	}
	snprintf(g->stats->selected, sizeof(g->stats->selected), "%s",
	    member);
	return 0;
}

/* ---- health shared by the workers --------------------------------------- */

_Static_assert(sizeof(((struct group_news *)0)->name) == CONF_OB_NAME_MAX + 1,
    "a member's name");

static void	(*group_news_fn)(void *, const struct group_news *);
static void	(*group_news_take_fn)(void *);
static void	*group_news_arg;

void
group_news_hook(void (*tell)(void *arg, const struct group_news *n),
    void (*take)(void *arg), void *arg)
{
	group_news_fn = tell;
	group_news_take_fn = take;
	group_news_arg = arg;
}

static void
group_news_poll(void)
{
	if (group_news_take_fn != NULL)
		group_news_take_fn(group_news_arg);
}

/* FNV-1a of n bytes at p into h. */
static uint32_t
group_fnv(uint32_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

/* What ob's health is about: its server, and who we are to it. */
static uint32_t
group_news_id(const struct outbound *ob)
{
	const struct conf_outbound *co = ob->co;
	uint32_t h = 2166136261u, proto = (uint32_t)co->protocol;
	const char *host = co->server_host != NULL ? co->server_host : "";

	h = group_fnv(h, &proto, sizeof(proto));
	h = group_fnv(h, host, strlen(host) + 1);
	h = group_fnv(h, &co->server_port, sizeof(co->server_port));
	h = group_fnv(h, co->key, sizeof(co->key));
	h = group_fnv(h, co->trojan_hex, strlen(co->trojan_hex));
	return group_fnv(h, co->username, strlen(co->username));
}

bool
group_is_member(const struct outbound *ob)
{
	const struct conf *c = ob->conf;
	size_t i, j;

	for (i = 0; i < c->client.noutbounds; i++)
		for (j = 0; j < c->client.outbounds[i].nmembers; j++)
			if (c->client.outbounds[i].members[j] == ob->index)
				return true;
	return false;
}

void
group_tell(const struct outbound *ob, enum health_ev kind, uint32_t a,
    uint32_t b, const char *why)
{
	struct group_news n;

	if (group_news_fn == NULL || (kind == HEALTH_EV_RETRANS &&
	    a < HEALTH_RTX_MIN_SEGS) || !group_is_member(ob))
		return;
	memset(&n, 0, sizeof(n));
	n.ev.kind = (uint8_t)kind;
	n.ev.a = a;
	n.ev.b = b;
	if (why != NULL)
		snprintf(n.ev.why, sizeof(n.ev.why), "%s", why);
	n.id = group_news_id(ob);
	snprintf(n.name, sizeof(n.name), "%s", outbound_name(ob));
	group_news_fn(group_news_arg, &n);
}

int
group_news_take(const struct outbounds *obs, const void *buf, size_t len,
    unsigned from)
{
	struct group_news n;
	struct outbound *ob = NULL;
	struct health *h;
	uint64_t now = group_now(), since;
	bool was_up;
	size_t i;

	if (len != sizeof(n))
		return -1;
	memcpy(&n, buf, sizeof(n));
	n.name[sizeof(n.name) - 1] = '\0';
	n.ev.why[sizeof(n.ev.why) - 1] = '\0';
	for (i = 0; i < obs->n && ob == NULL; i++)
		if (strcmp(outbound_name(obs->v[i]), n.name) == 0)
			ob = obs->v[i];
	if (ob == NULL || outbound_is_group(ob) || group_news_id(ob) != n.id)
		return -1;	/* not here, or not the same server (reload) */
	h = &ob->stats->health;
	since = h->since_ms;
	was_up = h->state == HEALTH_UP;
	if (!health_apply(h, now, &n.ev))
		return 0;
	if (h->state == HEALTH_UP)
		log_info("outbound %s: up again after %llu ms down, by worker "
		    "%u's flow", n.name, (unsigned long long)(now - since),
		    from);
	else
		log_info("outbound %s: %s%s (%s), by worker %u's flows; the "
		    "next try in %u ms", n.name, was_up ? "" : "still ",
		    health_name(h), h->why, from, h->backoff_ms);
	return 0;
}

/* ---- the choices across a restart ---------------------------------------- */

const char *
group_state_path(const char *sock, char *buf, size_t len)
{
	if (sock == NULL || sock[0] == '\0' ||
	    (size_t)snprintf(buf, len, "%s.select", sock) >= len)
		return NULL;
	return buf;
}

int
group_state_load(const struct outbounds *obs, const char *path)
{
	char line[128], g[64], m[64], err[160];
	unsigned n = 0;
	FILE *fp;

	if ((fp = fopen(path, "r")) == NULL) {
		if (errno == ENOENT)
			return 0;
		log_warn("select: %s", path);
		return -1;
	}
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (sscanf(line, "%63s %63s", g, m) != 2)
			continue;
		if (group_select(obs, g, m, err, sizeof(err)) == -1)
			log_info("select: %s: %s (skipped)", path, err);
		else
			n++;
	}
	fclose(fp);
	if (n > 0)
		log_info("select: %u choice%s kept from %s", n, n == 1 ? "" :
		    "s", path);
	return 0;
}

int
group_state_save(const struct outbounds *obs, const char *path)
{
	char tmp[4096];
	FILE *fp;
	size_t i;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -1;
	if ((fp = fopen(tmp, "w")) == NULL) {
		log_warn("select: %s", tmp);
		return -1;
	}
	for (i = 0; i < obs->n; i++)
		if (obs->v[i]->co->group == CONF_GROUP_SELECT)
			fprintf(fp, "%s %s\n", outbound_name(obs->v[i]),
			    outbound_name(group_selected(obs->v[i])));
	if (fclose(fp) != 0 || rename(tmp, path) == -1) {
		log_warn("select: %s", path);
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}
