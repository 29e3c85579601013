/*
 * The cover site (probe resistance): a connection that does not
 * authenticate is relayed to an ordinary website, so that a prober gets
 * that site's real answers instead of a telltale close.  See "Probe
 * resistance" in doc/PROTOCOL.md for the model.
 *
 * The server owns one struct cover for its loop.  cover_configure() takes
 * server.fallback (and fallback_tls, fallback_plain) from a configuration, resolving the
 * host name once, at start and on each reload, never in the loop.  A
 * session then asks cover_dial() for a plain stream socket to the site and
 * relays to it like to any target.
 *
 * A cover site that speaks TLS itself (fallback_tls) is reached through a
 * bridge: cover_dial() returns one end of a socketpair, and the bridge,
 * owned by this module, relays the other end over a TLS connection to the
 * site.  The bridge verifies nothing (it carries nothing but a prober's
 * bytes) and ends by itself when either side is done.
 */
#ifndef TUNSPLIT_COVER_H
#define TUNSPLIT_COVER_H

#include <stdbool.h>
#include <stdint.h>

struct conf;
struct limit_mem;
struct loop;
struct cover;

/* Counters, for the status and metrics. */
struct cover_stats {
	uint64_t	 dialed;	/* sockets handed out */
	uint64_t	 failed;	/* site unreachable, or its TLS failed */
	uint64_t	 bridges;	/* TLS bridges now open */
};

/* No cover site until cover_configure() sets one. */
struct cover *cover_new(struct loop *l);
/* Everything, open bridges included; accepts NULL. */
void cover_free(struct cover *cv);

/* Takes server.fallback, fallback_tls, mark, congestion and
 * connect_timeout from c.  No fallback in c: no cover site.  0, or -1
 * (logged) when the site cannot be resolved or its TLS context made; the
 * previous setting then stays. */
int  cover_configure(struct cover *cv, const struct conf *c);
bool cover_enabled(const struct cover *cv);
/* "host:port" as configured, for logs ("-" without a cover site). */
const char *cover_name(const struct cover *cv);

/* A non-blocking stream socket to the cover site whose connect may still
 * be in progress (EPOLLOUT, then sock_connect_error()), or -1 with errno.
 * The caller owns and closes it. */
int  cover_dial(struct cover *cv);
/* fallback_plain: where a connection whose first byte cannot start a TLS
 * handshake goes, raw, to be answered as the cover's own HTTPS port
 * answers plain HTTP (nginx: its 400 "plain HTTP request was sent to
 * HTTPS port" page); by default, for a TLS cover site, the site itself.
 * cover_dial_plain() is cover_dial() for it. */
bool cover_has_plain(const struct cover *cv);
int  cover_dial_plain(struct cover *cv);

/* The TLS bridges' relay buffers are charged to m (the server's
 * cover_buffer_memory, with the sessions' cover relays); a bridge the
 * budget refuses pauses until memory is free.  NULL: not charged. */
void cover_set_budget(struct cover *cv, struct limit_mem *m);

const struct cover_stats *cover_stats_get(const struct cover *cv);

#endif
