/*
 * Outbound groups: a new flow's member (group.h).
 */
#include "config.h"

#include "client/group.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client/outbound.h"
#include "conf/conf.h"
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

/* A member's leaf that may take a flow now, or NULL. */
static struct outbound *
group_try(struct outbound *m, const struct rule_query *q, uint64_t now,
    const struct outbound *skip)
{
	struct outbound *r;

	if (m == skip)
		return NULL;
	if (outbound_is_group(m)) {
		r = group_pick(m, q, now, skip);
		return r == m ? NULL : r;
	}
	return health_usable(&m->stats->health, now) ? m : NULL;
}

/* FNV-1a over the destination and the member's name: highest wins. */
static uint64_t
group_hash(const struct rule_query *q, const char *name)
{
	uint64_t h = 1469598103934665603ULL;
	const uint8_t *p;
	size_t i, n;

	if (q != NULL && q->domain != NULL) {
		p = (const uint8_t *)q->domain;
		n = strlen(q->domain);
	} else if (q != NULL) {
		p = q->dst;
		n = q->family == 0 ? 0 : sizeof(q->dst);
	} else {
		p = NULL;
		n = 0;
	}
	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	for (; *name != '\0'; name++)
		h = (h ^ (uint8_t)*name) * 1099511628211ULL;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 32);
}

struct outbound *
group_pick(struct outbound *ob, const struct rule_query *q, uint64_t now,
    const struct outbound *skip)
{
	struct outbound *r, *best = NULL;
	uint64_t h, besth = 0;
	size_t i;

	if (!outbound_is_group(ob))
		return ob;
	switch (ob->co->group) {
	case CONF_GROUP_SELECT:
		if ((r = group_try(group_selected(ob), q, now, skip)) != NULL)
			return r;
		break;
	case CONF_GROUP_BALANCE:
		for (i = 0; i < ob->nmembers; i++) {
			if ((r = group_try(ob->members[i], q, now, skip)) ==
			    NULL)
				continue;
			h = group_hash(q, outbound_name(ob->members[i]));
			if (best == NULL || h > besth) {
				best = r;
				besth = h;
			}
		}
		if (best != NULL)
			return best;
		break;
	default:	/* failover */
		for (i = 0; i < ob->nmembers; i++)
			if ((r = group_try(ob->members[i], q, now, skip)) !=
			    NULL)
				return r;
		break;
	}
	return ob;	/* none up: the group refuses (fail closed) */
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
