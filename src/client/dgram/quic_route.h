/*
 * The domain a QUIC conversation is routed by (client.sniff on UDP/443).
 * Datagrams are routed one by one (assoc_get), by their destination; a
 * QUIC connection names its domain only in its first Initial packets, so
 * the name found there is remembered for the conversation -- the app's
 * endpoint and the destination -- and every later datagram of it takes
 * the same outbound.  The decision is made on the conversation's first
 * datagram: a ClientHello that spans two datagrams (Chrome's, with a
 * post-quantum key share) routes by address, as the datagram cannot wait
 * for the next, and its name, read from the next ones, is logged only.
 *
 * A bounded table (QUIC_ROUTE_MAX conversations, the least recently used
 * one replaced); a conversation idle for longer than the timeout given
 * is new again.  Owned by flow_udp, one thread.
 */
#ifndef TUNSPLIT_QUIC_ROUTE_H
#define TUNSPLIT_QUIC_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#define QUIC_ROUTE_MAX	1024

struct quic_route;

struct quic_route	*quic_route_new(void);
void			 quic_route_free(struct quic_route *);	/* NULL ok */

/* One conversation: the app's endpoint and the destination (addresses
 * of family's length, unused bytes ignored). */
struct quic_conv {
	int		 family;
	const uint8_t	*src, *dst;
	uint16_t	 sport, dport;
};

/*
 * The datagram data (len) of conversation c at now_ms: the domain to
 * route it by, or NULL.  *found is set to a name read only now (for the
 * log: the first time a conversation's name is known), else NULL.
 */
const char	*quic_route_domain(struct quic_route *, const struct quic_conv *c,
		    const uint8_t *data, size_t len, uint64_t now_ms,
		    uint64_t idle_ms, const char **found);

#endif
