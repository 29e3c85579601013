/*
 * The decision point (route.h): the rules of the outbounds' generation,
 * first match wins, else client.final.
 */
#include "config.h"

#include "client/route.h"

#include <stdio.h>

#include "client/dns/dnsfwd.h"
#include "client/group.h"
#include "client/outbound.h"
#include "conf/conf.h"
#include "rules/rules.h"

static struct outbound *client_route_pick(const struct outbounds *obs,
    const struct rule_query *q, struct rule_hit *why, bool flow);

struct outbound *
client_route(const struct outbounds *obs, const struct rule_query *q,
    struct rule_hit *why)
{
	struct outbound *ob = client_route_pick(obs, q, why, true);

	client_route_count(obs, why);
	return ob;
}

void
client_route_count(const struct outbounds *obs, const struct rule_hit *why)
{
	rules_hit_add(obs->conf->client.rules, why);
}

struct outbound *
client_route_peek(const struct outbounds *obs, const struct rule_query *q,
    struct rule_hit *why)
{
	return client_route_pick(obs, q, why, false);
}

/* flow: a new flow starts on the answer (group_pick_flow). */
static struct outbound *
client_route_pick(const struct outbounds *obs, const struct rule_query *q,
    struct rule_hit *why, bool flow)
{
	const struct conf *c = obs->conf;
	struct rule_query named;
	const char *name;
	int i;

	/* No domain recovered: the name real DNS answered the address
	 * under, if any (dnsfwd.h). */
	if (q->domain == NULL && q->family != 0 &&
	    rules_use_domains(c->client.rules) &&
	    (name = dnsfwd_names_find(dnsfwd_names_used(), q->family,
	    q->dst)) != NULL) {
		named = *q;
		named.domain = name;
		q = &named;
	}
	i = rules_match(c->client.rules, q, (int)c->client.final, why);
	if (i < 0 || (size_t)i >= obs->n) {	/* cannot be: bound at load */
		i = (int)c->client.final;
		why->outbound = i;
		why->rule = -1;
	}
	/* A group: the member a new flow takes now (group.h). */
	return flow ? group_pick_flow(obs->v[i], q, group_now()) :
	    group_pick(obs->v[i], q, group_now(), NULL);
}

const char *
client_route_why(const struct outbound *ob, int rule, char *buf,
    unsigned long len)
{
	char	desc[96];

	if (rule < 0 || ob == NULL)
		snprintf(buf, len, "final");
	else
		snprintf(buf, len, "rule %d (%s)", rule, rules_describe(
		    ob->conf->client.rules, rule, desc, sizeof(desc)));
	return buf;
}
