/*
 * The decision point: the one place that says which outbound a new TCP
 * flow, UDP association or ICMP echo association takes.  Everything that
 * starts one asks client_route() and keeps the answer (and why) for its
 * whole life.
 *
 * The query is what is known when the way out must be chosen
 * (rules/rules.h: struct rule_query, made with rules_query_flow): the
 * network (tcp, udp, icmp), the destination address and port, the app's
 * own address (the LAN client of a router) and, when one was recovered,
 * the domain.  The answer is the generation's first rule that matches,
 * else client.final; why says which (why->rule -1: final).
 */
#ifndef TUNSPLIT_ROUTE_H
#define TUNSPLIT_ROUTE_H

struct outbound;
struct outbounds;
struct rule_hit;
struct rule_query;

/* The outbound for q, from obs (never NULL: final at worst); why set.
 * The caller takes its own reference to keep it. */
struct outbound *client_route(const struct outbounds *obs,
    const struct rule_query *q, struct rule_hit *why);
/* "final", or "rule N" (1-based, as in the file) into buf. */
const char *client_route_why(const struct rule_hit *why, char *buf,
    unsigned long len);

#endif
