/*
 * The outer stream: TLS 1.3 over a non-blocking TCP socket (OpenSSL), or
 * plain TCP with the same interface, opaque to its users.  Partial writes are on; a call that returns -1 with
 * errno EAGAIN must be retried later with the same arguments (for writes:
 * the same bytes, the buffer may move) once outer_events() is ready.
 *
 * Half-close: outer_shutdown_write() sends close_notify and shuts the TCP
 * write side; the peer's outer_read() then returns 0 while it can still
 * write back.  Abortive close: outer_abort() (RST on the wire).
 *
 * Writes use send(MSG_NOSIGNAL): a dead peer is EPIPE, never SIGPIPE.
 */
#ifndef TUNSPLIT_OUTER_H
#define TUNSPLIT_OUTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ssl_ctx_st;
struct outer;

/* Client context: the ClientHello of curl (OUTER_FP_CURL below), but a
 * handshake that does not end in TLS 1.3 fails; verification against
 * ca_file (NULL: the system store) unless insecure, client session cache
 * for resumption.  NULL on error (logged). */
struct ssl_ctx_st *outer_ctx_client(const char *ca_file, bool insecure);
/* Which ClientHello a client context sends (client.fingerprint):
 * byte for byte curl's on Debian 12 (the default), or the closest to
 * Chrome that OpenSSL allows.  Either way only TLS 1.3 is accepted.
 * Call at most once, on a context fresh from outer_ctx_client() (which
 * sends curl's already: OUTER_FP_CURL then changes nothing), before the
 * first outer_new() on it.  0 or -1 (logged). */
enum outer_fp {
	OUTER_FP_CURL,
	OUTER_FP_BROWSER
};
int outer_ctx_fingerprint(struct ssl_ctx_st *ctx, enum outer_fp fp);
/* Public-key pinning for a client context: the server's leaf certificate
 * must have a SubjectPublicKeyInfo whose SHA-256 is spki_sha256, checked
 * during the handshake in addition to the chain and name (or instead of
 * them for an insecure context, which the pin then authenticates).  Call
 * before the first outer_new() on ctx.  0 or -1 (logged). */
int outer_ctx_pin(struct ssl_ctx_st *ctx, const uint8_t spki_sha256[32]);
/* Replaces the ALPN list a client context offers ("http/1.1", or several
 * separated by commas, most preferred first).  0 or -1 (logged). */
int outer_ctx_alpn(struct ssl_ctx_st *ctx, const char *protos);
/* Gives a new server context the session-ticket keys of the one it
 * replaces (a reload), so that clients' tickets stay valid.  0 or -1. */
int outer_ctx_share_tickets(struct ssl_ctx_st *dst, struct ssl_ctx_st *src);
/* Lets a client context complete TLS 1.2 handshakes (1.2 and 1.3): for
 * talking to other servers (a cover site), never for tunsplit's own outer
 * streams.  0/-1. */
int outer_ctx_allow_tls12(struct ssl_ctx_st *ctx);
/* SHA-256 of the SubjectPublicKeyInfo of the first certificate in a PEM
 * file (what outer_ctx_pin takes).  0 or -1 (logged). */
int outer_pin_from_file(const char *cert_file, uint8_t spki_sha256[32]);

/* Server context from certificate chain and key files, with the TLS layer
 * of a stock nginx (outer_ctx.c): TLS 1.2 and 1.3, nginx's ciphers, ALPN,
 * SNI and tickets.  NULL on error. */
struct ssl_ctx_st *outer_ctx_server(const char *cert_file, const char *key_file);
/* Random TLS 1.3 record padding (1..max bytes) on the first `records`
 * application records of each stream made from ctx in either direction;
 * 0 turns it off.  0 or -1. */
#define OUTER_PAD_MAX	1024
int  outer_ctx_padding(struct ssl_ctx_st *ctx, unsigned records, unsigned max);
/* One more reference (the server's workers share one context, so that
 * a ticket issued by one resumes on any); outer_ctx_free drops one. */
struct ssl_ctx_st *outer_ctx_ref(struct ssl_ctx_st *ctx);
void outer_ctx_free(struct ssl_ctx_st *ctx);

/* Wraps a connected (or connecting) non-blocking fd; takes ownership of fd
 * even on failure.  sni: server name for the client side (also verified
 * against the certificate), NULL on the server side.  ctx NULL: a plain
 * TCP stream (socks5, direct): the handshake is done at once, reads and
 * writes are recv()/send(), a FIN reads as the end of the stream,
 * outer_pending() is 0, the abort is an RST. */
struct outer *outer_new(struct ssl_ctx_st *ctx, int fd, bool client,
    const char *sni);
int  outer_fd(const struct outer *o);

/* 1 when the handshake is done, 0 in progress (see outer_events), -1 error. */
int  outer_handshake(struct outer *o);
bool outer_handshake_done(const struct outer *o);
/* Server side: the peer has authenticated.  Until then a server stream
 * behaves as nginx's would (its answers may be a cover site's): no record
 * padding, and a FIN without close_notify reads as an end of stream with
 * no alert.  From then on it pads (outer_ctx_padding) and reports such a
 * FIN as a truncation (ECONNRESET), as client streams always do. */
void outer_trust(struct outer *o);
/* Server side, before the handshake has read a byte: the peer does not
 * speak TLS (its first byte cannot start a ClientHello), so the stream
 * becomes plain TCP on the same socket (as outer_new without a context).
 * 0, or -1 with EINVAL. */
int  outer_untls(struct outer *o);
bool outer_session_reused(const struct outer *o);
/* The handshake is done and negotiated TLS 1.3 (false for plain TCP). */
bool outer_tls13(const struct outer *o);
/* The TLS exporter (RFC 8446 section 7.5, RFC 5705 for TLS 1.2) of a
 * completed handshake: len bytes for label, no context.  Both ends of one
 * connection get the same bytes, any other connection different ones.
 * 0, or -1 (plain TCP, handshake not done) with EINVAL. */
int  outer_export(const struct outer *o, const char *label, uint8_t *out,
    size_t len);

/* > 0 bytes read; 0 end of stream (close_notify); -1 with errno
 * EAGAIN (retry when outer_events() fires), ECONNRESET or EPROTO (also for
 * a TCP FIN without close_notify: a truncated stream). */
ssize_t outer_read(struct outer *o, void *buf, size_t len);
/* > 0 bytes written (may be short); -1 with errno EAGAIN, EPIPE, ... */
ssize_t outer_write(struct outer *o, const void *buf, size_t len);
/* outer_write() of a side's last bytes, outer_shutdown_write() to follow:
 * on a framed flow the end marker leaves in the record of the last chunk
 * when all of buf goes in this call and that record has room for it
 * (a 2-byte marker record of its own would
 * mark every flow's end on the wire), and outer_shutdown_write() then
 * has nothing left to send.  Otherwise as outer_write(). */
ssize_t outer_write_last(struct outer *o, const void *buf, size_t len);
/* outer_write() (last: outer_write_last()) of bytes that may change
 * during the call, with OUTER_HEADROOM writable bytes in front of them;
 * all are as they were when it returns.  A framed flow then builds each
 * chunk's record around the bytes themselves instead of a copy of them
 * (outer_frame.c). */
#define OUTER_HEADROOM	2
ssize_t outer_write_inplace(struct outer *o, void *buf, size_t len,
    bool last);
/* lean: no read-ahead and a one-record read buffer (a connection not
 * authenticated yet); false: the context's settings again. */
void outer_set_lean(struct outer *o, bool lean);
/* Bytes decrypted and buffered inside TLS: readable without an fd event. */
size_t outer_pending(const struct outer *o);
/* 0 done, -1 EAGAIN (retry), -1 other errno. */
int  outer_shutdown_write(struct outer *o);

/*
 * Flow framing (the native protocol's version 3, doc/PROTOCOL.md
 * "Reusable connections"): while a flow is framed, outer_write() sends
 * up to OUTER_WRITE_CHUNKS chunks of the bytes given (2-byte length,
 * 1..OUTER_CHUNK_MAX, then the bytes; each chunk one TLS record), outer_shutdown_write() sends the end marker (length 0) instead
 * of close_notify and leaves TCP open, and outer_read() returns the
 * chunks' bytes, 0 at the peer's end marker (and from then on, without
 * reading further), -1 EPROTO when the stream ends (close_notify, FIN)
 * inside a chunk or before the marker, or a length is over the limit.
 *
 * outer_frame_begin() starts a flow: the first raw_out bytes written and
 * raw_in bytes read pass unframed (the request header, the status byte),
 * early[0..n) are framed bytes already read (behind the header), read
 * first; record padding restarts.  0, or -1 ENOMEM.  Once both markers
 * have crossed (and no early byte is left behind the peer's marker: those
 * were sent past the flow), outer_frame_idle() is true and
 * outer_frame_end() turns framing off: the stream is between flows
 * (PROTOCOL.md's offer).
 */
#define OUTER_CHUNK_MAX		16382	/* + its length: one TLS record */
#define OUTER_WRITE_CHUNKS	4	/* per outer_write() */
#define OUTER_FRAME_OFFER	0xffff	/* server -> client, between flows */
int  outer_frame_begin(struct outer *o, size_t raw_out, size_t raw_in,
    const void *early, size_t n);
bool outer_framed(const struct outer *o);
/* Server: this flow's end marker carries the offer (OUTER_FRAME_OFFER,
 * raw) right behind it, in its record, when it leaves before the peer's
 * marker came: the client has it as soon as it read the marker, no round
 * trip after its own.  outer_frame_offered() says whether it went out
 * (until outer_frame_end()). */
void outer_frame_offer(struct outer *o);
bool outer_frame_offered(const struct outer *o);
bool outer_frame_idle(const struct outer *o);
void outer_frame_end(struct outer *o);
/* Flows begun on the stream (outer_frame_begin), and its age. */
unsigned outer_flows(const struct outer *o);
uint64_t outer_age_ms(const struct outer *o);
/* The exporter with a context (the flow's index, for version 3). */
int  outer_export_ctx(const struct outer *o, const char *label,
    const uint8_t *ctx, size_t ctxlen, uint8_t *out, size_t len);

/* EPOLLIN/EPOLLOUT that the last blocked operation waits for (0 if none). */
uint32_t outer_events(const struct outer *o);

void outer_abort(struct outer *o);	/* RST, free; accepts NULL */
void outer_free(struct outer *o);	/* close, free; accepts NULL */

#endif
