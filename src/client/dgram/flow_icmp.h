/*
 * Client ICMP echo: echo requests (ICMP type 8, ICMPv6 type 128) from the
 * TUN are forwarded to the server, which pings the real target (with
 * protocol direct the client pings it itself, assoc_sock.c); its reply
 * comes back framed and is written to the TUN as an echo reply from the
 * target, with the app's own identifier and sequence number.  The app thus
 * measures the true round trip through the tunnel, and gets no reply when
 * the target does not answer.  lwIP never sees ICMP (tsnetif routes it
 * here), so it never answers a ping itself.
 *
 * One association (kind 3) per (app address, echo identifier): one ping
 * process, whatever targets it pings.  Frame address: the target (client
 * to server) or the responder (server to client); frame port: the echo
 * sequence number; frame payload: the echo data after the 8-byte header.
 */
#ifndef TUNSPLIT_FLOW_ICMP_H
#define TUNSPLIT_FLOW_ICMP_H

#include <stdbool.h>

struct assoc_env;
struct pkt_ip;

/* Registers the ICMP kind's callbacks with the associations. */
void flow_icmp_init(struct assoc_env *e);
/* An ICMP/ICMPv6 message in ip (not a fragment).  Returns a PKT_* result:
 * PKT_OK forwarded (or dropped and counted by the associations; *blocked:
 * because its outbound is block, to be answered "prohibited"),
 * PKT_OTHER not an echo request, PKT_MALFORMED, PKT_BADSUM.  name: the
 * name ip's destination, a fake-IP address, stands for (the server pings
 * what it resolves to, and the replies come back from the fake address),
 * or NULL. */
int  flow_icmp_input(struct assoc_env *e, const struct pkt_ip *ip,
    const char *name, bool *blocked);

#endif
