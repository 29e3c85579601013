/*
 * Private to the outer module: outer.c (streams) and outer_ctx.c (TLS
 * contexts: verification, pinning, ALPN, padding, session tickets).
 */
#ifndef TUNSPLIT_OUTER_INT_H
#define TUNSPLIT_OUTER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <openssl/ssl.h>

/* A stream.  ssl == NULL: plain TCP (outer_new with no context). */
struct outer {
	SSL		*ssl;
	int		 fd;
	bool		 client;
	bool		 hs_done;
	bool		 shut_sent;	/* close_notify written */
	bool		 wr_closed;	/* TCP write side shut too */
	bool		 eof;		/* recv() returned 0 */
	bool		 ticket_more;	/* server: one more ticket asked */
	uint32_t	 want_hs, want_rd, want_wr, want_shut;
	unsigned	 pad_left;	/* records still to pad */
	char		*sni;		/* client: name to verify; cache key */
	unsigned	 pad_max;
	unsigned	 pad_records;	/* server: pad_left once trusted */
	unsigned	 flows;		/* framed flows begun on it */
	int		 wq_ret;	/* the batch's last SSL_write_ex */
	struct outer_frame *fr;		/* flow framing (outer_frame.c) */
	uint64_t	 born_ms;	/* CLOCK_MONOTONIC at outer_new */
	/* Records of one outer_write, sent together (outer_io_write);
	 * wq_ret above. */
	uint8_t		*wq;
	size_t		 wq_len, wq_off;
	size_t		 wq_plain;	/* the caller's bytes they hold */
	bool		 wq_batch;	/* the BIO appends to wq */
	bool		 wq_release;	/* RELEASE_BUFFERS back at its end */
	bool		 wq_ctl;	/* wq: OpenSSL's own, no caller's */
	bool		 seal_want;	/* SSL_OP_ENABLE_KTLS was set */
	size_t		 wq_cap;	/* wq's size (sealed records: more) */
	struct outer_seal *seal;	/* records sealed by us (or NULL) */
};

/* The stream an SSL of outer_new belongs to, or NULL (another SSL of
 * the same context: tlsmem's).  Its BIO, of type outer_bio_type (set
 * once by outer.c, 0 before), holds the stream. */
extern int outer_bio_type;
struct outer *outer_of_ssl(const SSL *ssl);

/* The unframed stream, which outer_read/outer_write/outer_shutdown_write
 * are unless flow framing is on (outer.c). */
ssize_t outer_io_read(struct outer *o, void *buf, size_t len);
ssize_t outer_io_write(struct outer *o, const void *buf, size_t len);
/* A batch of records sent with one call: outer_batch_begin (len: the
 * caller's bytes, which size a sealed stream's queue; -1: no memory for
 * the queue), then outer_batch_rec for each (one SSL_write of
 * up to a record's plaintext: the bytes taken, 0 when the queue has no
 * room for another record, -1 when it failed), then outer_batch_end with
 * the caller's bytes they stand for: that count once all left, or -1
 * (EAGAIN: outer_io_write's repeat sends the rest and returns it; with
 * none, the last record's failure). */
int  outer_batch_begin(struct outer *o, size_t len);
ssize_t outer_batch_rec(struct outer *o, const void *p, size_t len);
ssize_t outer_batch_end(struct outer *o, size_t plain);
/* outer_frame.c: the same calls on a framed flow; outer_frame_free at
 * release. */
ssize_t outer_frame_read(struct outer *o, void *buf, size_t len);
ssize_t outer_frame_write(struct outer *o, const void *buf, size_t len,
    bool last);
ssize_t outer_frame_write_inplace(struct outer *o, uint8_t *buf,
    size_t len, bool last);
int  outer_frame_shutdown(struct outer *o);
size_t outer_frame_pending(const struct outer *o);
void outer_frame_free(struct outer *o);
uint64_t outer_now_ms(void);
/* outer_seal.c: a server stream's records sealed from the caller's
 * bytes (where OpenSSL hands the key to the BIO). */
bool outer_seal_supported(void);
void outer_seal_keylog(const SSL *ssl, const char *line);
/* Whether a sealed stream can follow a KeyUpdate (it has the secret). */
bool outer_seal_follows(const struct outer *o);
int  outer_seal_start(struct outer *o, const void *crypto_info);
void outer_seal_type(struct outer *o, uint8_t type);
uint8_t outer_seal_next(struct outer *o);
void outer_seal_idle(struct outer *o);
void outer_seal_free(struct outer *o);
size_t outer_seal_size(size_t len, size_t pad);
ssize_t outer_seal_record(struct outer *o, uint8_t type, const void *p,
    size_t len, size_t pad, uint8_t *out);

/* Record padding of a context's streams (outer_ctx_padding). */
struct outer_pad {
	unsigned	 records;
	unsigned	 max;
};

/* The context ex-data slots; 0 or -1 (logged). */
int  outer_ctx_init(void);
/* Newest usable ticket for host, removed from the context's cache. */
SSL_SESSION *outer_cache_take(SSL_CTX *ctx, const char *host);
/* A client stream of ctx ends: once no ticket was taken for a few
 * seconds, the cache shrinks to the few that dials one at a time use. */
void outer_cache_settle(SSL_CTX *ctx);
/* False only for a context that outer_ctx_allow_tls12() relaxed. */
bool outer_ctx_needs_tls13(SSL_CTX *ctx);
/* The padding set on ctx, or NULL. */
const struct outer_pad *outer_ctx_get_pad(SSL_CTX *ctx);

#endif
