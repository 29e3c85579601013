/*
 * DNS over TCP answered by the client: with client.dns set, a TCP flow
 * to port 53 (an app's query over TCP, or its retry after a truncated
 * UDP answer) is not relayed to the resolver but served here, so that
 * each query goes where a datagram query to port 53 goes -- fake-IP,
 * the cache, the upstream its name's domains choose through that
 * upstream's outbound (flow_udp_dns_ask) -- and never another way.
 *
 * Queries are read behind their 2-byte length (RFC 7766), at most
 * FLOW_DNS_INFLIGHT of a flow being answered or with an answer the app
 * has not taken yet (more wait in lwIP's window), answers written as
 * they come, in any order.  A length below a
 * DNS header or above DNSSTREAM_MSG_MAX resets that flow; a failed query
 * gets SERVFAIL.  The flow ends after the app's FIN once every answer is
 * out, or after FLOW_DNS_IDLE_MS with no query; at most FLOW_DNS_FLOWS
 * such flows at once (more are reset).  A flow to a fake address is not
 * one of these.
 */
#ifndef TUNSPLIT_FLOW_DNS_H
#define TUNSPLIT_FLOW_DNS_H

#include <stdbool.h>

#include "lwip/err.h"

#define FLOW_DNS_INFLIGHT	16
#define FLOW_DNS_IDLE_MS	10000
#define FLOW_DNS_FLOWS		256

struct addr;
struct flow_env;
struct tcp_pcb;

/* Whether a flow to dst is served here. */
bool  flow_dns_wanted(const struct flow_env *env, const struct addr *dst);
/* tcp_accept for such a flow: ERR_OK, or ERR_ABRT (pcb aborted). */
err_t flow_dns_accept(struct flow_env *env, struct tcp_pcb *pcb);
/* Resets every served flow (shutdown); queries still pending end when
 * flow_udp frees its upstreams. */
void  flow_dns_close_all(void);

#endif
