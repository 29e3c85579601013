/*
 * The SOCKS5 negotiation of one client TCP flow (protocol: socks5): on the
 * flow's own plain connection to the proxy, the greeting, the method
 * choice, RFC 1929 username/password when the proxy asks for it, and the
 * CONNECT request for the flow's destination.  The proxy's reply is the
 * connect status.
 *
 * Strictly one message at a time, and replies are read exactly (never a
 * byte past them), so whatever the target sends right behind the reply is
 * left in the socket for the relay.  The state holds one message at most
 * (SOCKS5_AUTH_MAX bytes) and is freed once the flow relays.
 */
#ifndef TUNSPLIT_FLOW_SOCKS5_H
#define TUNSPLIT_FLOW_SOCKS5_H

#include <stddef.h>
#include <stdint.h>

struct conf_outbound;
struct outer;
struct proto_dest;
struct flow_socks5;

/* Credentials are read from co (its username, password) when
 * the proxy asks for them.  NULL on allocation failure. */
struct flow_socks5 *flow_socks5_new(const struct conf_outbound *co,
    const struct proto_dest *dst);
/*
 * Drives the negotiation on o as far as it goes without blocking.
 * 1: the target is connected, relay now.  0: in progress, call again when
 * outer_events(o) fires.  -1: failed; *why is a short static reason
 * ("socks5 authentication failed"), *detail a longer one for the log (the
 * reply code's meaning), *rep the proxy's reply code (0 when there was no
 * reply, e.g. the proxy closed or the authentication failed).
 */
int  flow_socks5_step(struct flow_socks5 *s, struct outer *o,
    const char **why, char *detail, size_t detail_len, uint8_t *rep);
/* Which step it is at: "greeting", "auth", "connect". */
const char *flow_socks5_state(const struct flow_socks5 *s);
void flow_socks5_free(struct flow_socks5 *s);	/* wipes; accepts NULL */

#endif
