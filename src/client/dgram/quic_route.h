/*
 * The domain a QUIC conversation is routed by (client.sniff on UDP/443).
 * Datagrams are routed one by one (assoc_get), by their destination; a
 * QUIC connection names its domain only in its first Initial packets, so
 * the name found there is remembered for the conversation -- the app's
 * endpoint and the destination -- and every later datagram of it takes
 * the same outbound.  A ClientHello that spans two datagrams (browsers'
 * with a post-quantum key share do) holds the conversation's datagrams
 * back until it is whole -- then all go, in order, routed by its name --
 * or, at most hold_ms later, by address (its name, read on, is then only
 * reported).
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

#define QUIC_ROUTE_HOLD	4	/* datagrams held per conversation */
#define QUIC_ROUTE_HOLD_LEN 1500	/* a larger one is never held */

/* Sends one datagram of conversation c, routed by domain (NULL: none). */
typedef void (*quic_route_send_fn)(void *arg, const struct quic_conv *c,
    const uint8_t *data, size_t len, const char *domain);

/*
 * The datagram data (len) of conversation c at now_ms.  0: send it now,
 * routed by *domain (NULL: none) -- after the datagrams held before it,
 * which go out through send first; 1: held (copied), the caller sends
 * nothing.  *found is a name read only now (the log's: the first time
 * a conversation's name is known), else NULL.
 */
int		 quic_route_datagram(struct quic_route *, const struct quic_conv *c,
		    const uint8_t *data, size_t len, uint64_t now_ms,
		    uint64_t idle_ms, uint64_t hold_ms, const char **domain,
		    const char **found, quic_route_send_fn send, void *arg);
/* Conversations held until now_ms or longer go by address (send);
 * returns the next deadline, 0 if none holds. */
uint64_t	 quic_route_expire(struct quic_route *, uint64_t now_ms,
		    quic_route_send_fn send, void *arg);

#endif
