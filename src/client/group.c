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
