/*
 * One end of a byte stream played by a unit test, over an outer stream
 * (TLS with testcert.h's contexts, or plain): it sends a prefix, then a
 * pseudo-random pattern, optionally held back at some offset, shuts its
 * write side when told, and keeps everything it reads.  Stepped between
 * loop iterations, never blocking: no threads.  Used by test_sess (the
 * client, the target, the cover site) and test_flow_tcp_states (the
 * server).
 */
#ifndef TUNSPLIT_TESTEND_H
#define TUNSPLIT_TESTEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct outer;
struct ssl_ctx_st;

struct testend {
	struct outer	*o;		/* NULL: not connected (or aborted) */
	int		 hs;		/* 1: handshake done */
	const uint8_t	*pre;		/* sent before the pattern */
	size_t		 pre_len;
	unsigned	 seed;		/* which pattern (testend_pat) */
	size_t		 tx_len;	/* pattern bytes to send */
	size_t		 tx_off;	/* sent so far, pre included */
	size_t		 tx_hold;	/* non-zero: no pattern past this */
	bool		 paused;	/* nothing at all is sent */
	bool		 shut_when_sent, shut;
	uint8_t		*rx;		/* everything read */
	size_t		 rx_cap, rx_len;
	bool		 eof;		/* the peer's end of stream */
	int		 err;		/* errno of a failed read */
	size_t		 rx_after_shut;	/* read after our own end */
	size_t		 tx_after_eof;	/* pattern sent after the peer's end */
	/* Called once the handshake is done, before anything is sent (a
	 * request header bound to the connection is made there). */
	void		(*on_hs)(struct testend *e);
};

/* Byte off of pattern seed. */
uint8_t	testend_pat(unsigned seed, size_t off);
/* Zeroed, with tx_len pattern bytes to send and room for rx_cap. */
void	testend_init(struct testend *e, unsigned seed, size_t tx_len,
	    size_t rx_cap);
void	testend_free(struct testend *e);	/* outer_free, buffers */
/* Handshake, then read what there is, then write what may go. */
void	testend_step(struct testend *e);
/* Accepts one connection on the non-blocking lfd into e (ctx NULL:
 * plain), if e has none yet; counts it in *accepted. */
void	testend_accept(struct testend *e, int lfd, struct ssl_ctx_st *ctx,
	    unsigned *accepted);
/* What e read from off0 on is exactly n bytes of pattern seed (SHA-256). */
void	testend_expect(const struct testend *e, size_t off0, unsigned seed,
	    size_t n);
/* A non-blocking loopback listener; its port in *port. */
int	testend_listener(uint16_t *port);

#endif
