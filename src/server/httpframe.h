/*
 * Where nginx would end its TLS records in a cover site's answers.
 *
 * nginx (ssl_buffer_size 16k) copies a response -- status line, headers
 * and body alike -- into one 16 KiB buffer and writes a TLS record each
 * time the buffer fills and once more at the end of the response: every
 * record of a response is 16,384 bytes but its last, and two pipelined
 * responses never share a record.  The cover relay sees only a byte
 * stream (TCP keeps no write boundaries), so it follows the HTTP/1.x
 * messages both ways to find the same ends: the requests for which ones
 * are HEAD (their answer has no body), the responses for their status
 * line, Content-Length or chunked body.  Whatever it cannot follow (not
 * HTTP, a body that lasts until the close, an upgrade, requests it lost
 * track of) ends framing for the rest of the connection: the relay then
 * writes what it reads, as before.
 */
#ifndef TUNSPLIT_HTTPFRAME_H
#define TUNSPLIT_HTTPFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTPFRAME_RECORD	16384	/* nginx's ssl_buffer_size */

struct httpframe;

struct httpframe *httpframe_new(void);	/* NULL: out of memory */
void httpframe_free(struct httpframe *);
/* The prober's bytes, in order, as they go to the cover site. */
void httpframe_requests(struct httpframe *, const uint8_t *p, size_t n);
/*
 * The length of the next record out of the cover's unsent bytes p[0..n):
 * at most HTTPFRAME_RECORD, ending where a response ends if one ends
 * within.  0: the bytes wait, as nginx's buffer would (a response is
 * unfinished and the cover owes the rest of it: its header, its
 * Content-Length, its chunks up to the last one), unless eof (the cover
 * has closed).  Out of framing it is min(n, HTTPFRAME_RECORD).
 */
size_t httpframe_record(struct httpframe *, const uint8_t *p, size_t n,
    bool eof);
/* The first n of those bytes have been written. */
void httpframe_sent(struct httpframe *, size_t n);
/*
 * The prober is in the middle of a request (its line, headers or body):
 * a cover that closes now has given up waiting for the rest (nginx's
 * client_header_timeout, or the lingering close after an answer sent
 * before the body), and nginx closes those without close_notify.
 */
bool httpframe_request_open(const struct httpframe *);
/* Still framing (tests). */
bool httpframe_active(const struct httpframe *);

#endif
