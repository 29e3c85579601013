/*
 * The decision point (route.h): the rules of the outbounds' generation,
 * first match wins, else client.final.
 */
#include "config.h"

#include "client/route.h"

#include <stdio.h>

#include "client/outbound.h"
#include "conf/conf.h"
#include "rules/rules.h"

struct outbound *
client_route(const struct outbounds *obs, const struct rule_query *q,
    struct rule_hit *why)
{
	const struct conf *c = obs->conf;
	int i;

	i = rules_decide(c->client.rules, q, (int)c->client.final, why);
	if (i < 0 || (size_t)i >= obs->n) {	/* cannot be: bound at load */
		i = (int)c->client.final;
		why->outbound = i;
		why->rule = -1;
	}
	return obs->v[i];
}

const char *
client_route_why(const struct rule_hit *why, char *buf, unsigned long len)
{
	if (why->rule < 0)
		snprintf(buf, len, "final");
	else
		snprintf(buf, len, "rule %d", why->rule + 1);
	return buf;
}
