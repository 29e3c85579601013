/*
 * DNS over streams, the framing only (no I/O, hostile input):
 *
 *   TCP and TLS (RFC 7766, RFC 7858): each message behind a 2-byte
 *   big-endian length.
 *   HTTPS (RFC 8484), HTTP/1.1: the query as the body of
 *     POST <path> HTTP/1.1 / Host / Content-Type and Accept
 *     application/dns-message / Content-Length
 *   and the reply a 200 with a Content-Length body (no chunked transfer
 *   coding: a server that sends one is answered SERVFAIL, see
 *   tunsplit.yaml(5)).
 *
 * The parsers say how many bytes of the input the next message took (0:
 * not whole yet, read more) and refuse what no honest server sends: a
 * message shorter than a DNS header or longer than DNSSTREAM_MSG_MAX, a
 * response head past DNSSTREAM_HEAD_MAX, a bad status line or length.
 */
#ifndef TUNSPLIT_DNSSTREAM_H
#define TUNSPLIT_DNSSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DNSSTREAM_MSG_MAX	16384	/* bigger replies: refused */
#define DNSSTREAM_HEAD_MAX	4096	/* HTTP response line and headers */

/* The next length-prefixed message: its bytes at *msg, *len of them.
 * > 0: the bytes taken (2 + *len); 0: not whole; -1: a length below a
 * DNS header or above DNSSTREAM_MSG_MAX. */
ssize_t dnsstream_tcp_parse(const uint8_t *in, size_t inlen,
    const uint8_t **msg, size_t *len);
/* The 2-byte prefix for a message of len bytes into out[2]. */
void dnsstream_tcp_prefix(uint8_t out[2], size_t len);

/* The head of a POST of a len-byte query to host and path into out
 * (the body follows it): its length, or -1 when out is too small or
 * host or path hold a byte that does not belong there. */
ssize_t dnsstream_http_request(char *out, size_t outlen, const char *host,
    const char *path, size_t len);
/*
 * The next HTTP/1.1 response: *status its code, its body at *msg, *len
 * bytes.  > 0: the bytes taken (head and body); 0: not whole; -1: not
 * HTTP/1.x, a head too long, no Content-Length (or two, or a bad one),
 * chunked, or a body above DNSSTREAM_MSG_MAX.  *close: the server said
 * Connection: close (or spoke HTTP/1.0 without keep-alive).
 */
ssize_t dnsstream_http_parse(const uint8_t *in, size_t inlen, int *status,
    const uint8_t **msg, size_t *len, int *close);

/*
 * A reply too long for the asker's UDP size cut to its header, question
 * and answer section (the authority and additional records dropped,
 * NSCOUNT and ARCOUNT 0; RFC 2181 section 9: no TC for that): a prefix
 * of msg, so every compression pointer in it stays valid.  Its new
 * length, or -1 when msg is malformed (bounds-checked walk, one
 * question).
 */
ssize_t dnsstream_strip(uint8_t *msg, size_t len);

#endif
