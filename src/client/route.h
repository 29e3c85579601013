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
 * else client.final; why says which (why->rule -1: final, why->outbound
 * the outbound or group it names).  A group is resolved to the member a
 * new flow takes now (client/group.h): the answer is never a group but
 * when none of its members is up, and the group then refuses (block).
 */
#ifndef TUNSPLIT_ROUTE_H
#define TUNSPLIT_ROUTE_H

struct outbound;
struct outbounds;
struct rule_hit;
struct rule_query;

/* The outbound for q, from obs (never NULL: final at worst); why set,
 * and the rule's hit counted.  The caller takes its own reference to
 * keep it. */
struct outbound *client_route(const struct outbounds *obs,
    const struct rule_query *q, struct rule_hit *why);
/* The same without counting: for a lookup that may be repeated (each
 * datagram, a SYN before its flow), which counts what it starts with
 * client_route_count. */
struct outbound *client_route_peek(const struct outbounds *obs,
    const struct rule_query *q, struct rule_hit *why);
void client_route_count(const struct outbounds *obs,
    const struct rule_hit *why);
/* "final", or "rule N (what it matches)" as in status and route-test
 * (N from 0, as in client.rules[N]) into buf; ob is the outbound the
 * rule chose, whose generation holds the rule. */
const char *client_route_why(const struct outbound *ob, int rule, char *buf,
    unsigned long len);

#endif
