/*
 * conns: many short connections, the cost of a new flow (issue 18).
 *
 *   conns seq ADDR PORT COUNT [MAX-SECONDS]
 *   conns burst ADDR PORT COUNT BYTES [MAX-SECONDS]
 *
 * seq: COUNT new connections one after another, each an HTTP/1.0 GET of
 * /1k read to its Content-Length (as a browser reads it, not to the close:
 * how soon a proxy passes a half-close on is not what is measured), then
 * closed.  Every body must equal the first one byte for byte and be as
 * long as its Content-Length, or that GET counts as failed.
 *
 * burst: COUNT connections opened at once (non-blocking connects issued
 * back to back) to an echo server (rrlat -s); each writes BYTES and reads
 * them back, checked byte by byte against what it wrote (a pattern unique
 * to the connection), then closes.  The result is the time from the
 * first connect to the last byte of the last connection, and the median
 * and maximum of the connections' own completion times.
 *
 * Both stop at MAX-SECONDS (default 120); what did not finish by then
 * counts as failed.  The result is one line of JSON; connections only go
 * to ADDR, an address of the bench's own namespaces.  Standalone (libc
 * only), like linkem and rrlat; errors go through err(3).
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* memmem() */
#endif

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define NSEC		1000000000ULL
#define CN_RESP_MAX	(64 * 1024)	/* one answer: headers and body */
#define CN_IO_TIMEOUT_S	10
#define CN_MAX_COUNT	100000
#define CN_MAX_BYTES	(16u << 20)
#define CN_MAXEV	256

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
}

static struct addrinfo *
resolve(const char *host, const char *port)
{
	struct addrinfo hints, *res;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0)
		errx(2, "%s port %s: %s", host, port, gai_strerror(rc));
	return res;
}

static long
arg_num(const char *s, long lo, long hi, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		errx(2, "%s: \"%s\" is not a number from %ld to %ld", what, s,
		    lo, hi);
	return v;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank quantile of the sorted samples, in milliseconds. */
static double
q_ms(const uint64_t *v, size_t n, double p)
{
	size_t i;

	if (n == 0)
		return 0;
	i = (size_t)(p * (double)n + 0.999999);
	i = i == 0 ? 0 : i - 1;
	if (i >= n)
		i = n - 1;
	return (double)v[i] / 1e6;
}

/* ---- seq ------------------------------------------------------------- */

/* The body of one answer in buf[0..len), or NULL: a 200 with a
 * Content-Length, complete. */
static const char *
http_body(const char *buf, size_t len, size_t *blen, bool *complete)
{
	const char *end = memmem(buf, len, "\r\n\r\n", 4), *p;
	long clen = -1;

	*complete = false;
	if (end == NULL)
		return NULL;
	if (len < 12 || memcmp(buf + 8, " 200 ", 5) != 0)
		return NULL;
	for (p = buf; p < end; p++) {
		if (p[0] == '\n' && strncasecmp(p + 1, "content-length:", 15) == 0) {
			clen = strtol(p + 16, NULL, 10);
			break;
		}
	}
	if (clen < 0)
		return NULL;
	end += 4;
	*blen = len - (size_t)(end - buf);
	*complete = *blen >= (size_t)clen;
	if (*blen > (size_t)clen)
		return NULL;	/* more than announced */
	return end;
}

/* One GET; 0 with the body in *body (malloc'd on the first call only). */
static int
seq_one(const struct addrinfo *ai, char *buf, char **first, size_t *flen)
{
	static const char req[] = "GET /1k HTTP/1.0\r\nHost: t\r\n\r\n";
	struct timeval tv = { CN_IO_TIMEOUT_S, 0 };
	const char *body = NULL;
	size_t len = 0, blen = 0;
	bool complete = false;
	ssize_t n;
	int fd, one = 1, rc = -1;

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1)
		err(1, "socket");
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == -1 ||
	    write(fd, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1))
		goto out;
	while (!complete && len < CN_RESP_MAX) {
		n = read(fd, buf + len, CN_RESP_MAX - len);
		if (n <= 0)
			goto out;
		len += (size_t)n;
		body = http_body(buf, len, &blen, &complete);
	}
	if (!complete || body == NULL)
		goto out;
	if (*first == NULL) {
		*first = malloc(blen ? blen : 1);
		if (*first == NULL)
			err(1, "malloc");
		memcpy(*first, body, blen);
		*flen = blen;
	}
	rc = blen == *flen && memcmp(body, *first, blen) == 0 ? 0 : -1;
out:
	close(fd);
	return rc;
}

static int
run_seq(const char *addr, const char *port, long count, long max_s)
{
	struct addrinfo *ai = resolve(addr, port);
	uint64_t *lat, t0, t, deadline;
	char *buf, *first = NULL;
	size_t flen = 0, ok = 0;
	long i, failed = 0;
	double secs;

	lat = calloc((size_t)count, sizeof(*lat));
	buf = malloc(CN_RESP_MAX);
	if (lat == NULL || buf == NULL)
		err(1, "malloc");
	t0 = now_ns();
	deadline = t0 + (uint64_t)max_s * NSEC;
	for (i = 0; i < count; i++) {
		t = now_ns();
		if (t >= deadline)
			break;
		if (seq_one(ai, buf, &first, &flen) == 0)
			lat[ok++] = now_ns() - t;
		else
			failed++;
	}
	failed += count - i;
	secs = (double)(now_ns() - t0) / 1e9;
	qsort(lat, ok, sizeof(*lat), cmp_u64);
	printf("{\"connections\": %zu, \"failed\": %ld, \"seconds\": %.3f, "
	    "\"per_second\": %.1f, \"body_bytes\": %zu, \"p50_ms\": %.3f, "
	    "\"p99_ms\": %.3f, \"max_ms\": %.3f}\n", ok, failed, secs,
	    secs > 0 ? (double)ok / secs : 0.0, flen, q_ms(lat, ok, 0.5),
	    q_ms(lat, ok, 0.99), ok ? q_ms(lat, ok, 1.0) : 0.0);
	freeaddrinfo(ai);
	free(lat);
	free(buf);
	free(first);
	return failed ? 1 : 0;
}

/* ---- burst ----------------------------------------------------------- */

struct cn_conn {
	int		fd;
	uint32_t	id;
	size_t		sent;
	size_t		got;
	bool		done;
	bool		bad;
};

/* The byte at offset off of connection id's stream. */
static unsigned char
pat(uint32_t id, size_t off)
{
	uint32_t x = (uint32_t)off * 2654435761u ^ (id * 40503u + 1u);

	return (unsigned char)(x >> 13);
}

static void
burst_end(int ep, struct cn_conn *c, bool bad)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	c->done = true;
	c->bad = bad;
}

/* Write what the kernel takes, read what has come; false on an error. */
static bool
burst_io(struct cn_conn *c, size_t bytes, unsigned char *buf, size_t bsz)
{
	ssize_t n;
	size_t k, want;

	while (c->sent < bytes) {
		want = bytes - c->sent < bsz ? bytes - c->sent : bsz;
		for (k = 0; k < want; k++)
			buf[k] = pat(c->id, c->sent + k);
		n = write(c->fd, buf, want);
		if (n == -1)
			return errno == EAGAIN || errno == EINTR;
		c->sent += (size_t)n;
		if ((size_t)n < want)
			break;
	}
	for (;;) {
		n = read(c->fd, buf, bsz);
		if (n == 0)
			return c->got == bytes;
		if (n == -1)
			return errno == EAGAIN || errno == EINTR;
		if (c->got + (size_t)n > bytes)
			return false;
		for (k = 0; k < (size_t)n; k++)
			if (buf[k] != pat(c->id, c->got + k))
				return false;
		c->got += (size_t)n;
		if (c->got == bytes)
			return true;
	}
}

static int
run_burst(const char *addr, const char *port, long count, long bytes,
    long max_s)
{
	struct addrinfo *ai = resolve(addr, port);
	struct epoll_event ev, evs[CN_MAXEV];
	struct cn_conn *cs;
	uint64_t *fin, t0, deadline, last = 0;
	unsigned char buf[16384];
	long i, left = count, failed = 0, errs = 0;
	size_t ok = 0;
	int ep, n, k, one = 1, e;
	socklen_t el;

	cs = calloc((size_t)count, sizeof(*cs));
	fin = calloc((size_t)count, sizeof(*fin));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (cs == NULL || fin == NULL || ep == -1)
		err(1, "setup");
	t0 = now_ns();
	deadline = t0 + (uint64_t)max_s * NSEC;
	for (i = 0; i < count; i++) {
		struct cn_conn *c = &cs[i];

		c->id = (uint32_t)i;
		c->fd = socket(ai->ai_family,
		    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (c->fd == -1)
			err(1, "socket (connection %ld)", i + 1);
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) == -1 &&
		    errno != EINPROGRESS) {
			close(c->fd);
			c->fd = -1;
			c->done = c->bad = true;
			errs++;
			left--;
			continue;
		}
		ev.events = EPOLLIN | EPOLLOUT;
		ev.data.ptr = c;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) == -1)
			err(1, "epoll_ctl");
	}
	while (left > 0) {
		uint64_t now = now_ns();
		int wait_ms;

		if (now >= deadline)
			break;
		wait_ms = (int)((deadline - now) / 1000000) + 1;
		n = epoll_wait(ep, evs, CN_MAXEV, wait_ms);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			err(1, "epoll_wait");
		}
		for (k = 0; k < n; k++) {
			struct cn_conn *c = evs[k].data.ptr;
			bool fine;

			if (c->done)
				continue;
			e = 0;
			el = sizeof(e);
			if ((evs[k].events & (EPOLLERR | EPOLLHUP)) &&
			    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0
			    && e != 0)
				fine = false;
			else
				fine = burst_io(c, (size_t)bytes, buf,
				    sizeof(buf));
			if (fine && c->got < (size_t)bytes) {
				ev.events = EPOLLIN |
				    (c->sent < (size_t)bytes ? EPOLLOUT : 0);
				ev.data.ptr = c;
				epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
				continue;
			}
			burst_end(ep, c, !fine);
			left--;
			if (fine) {
				last = now_ns() - t0;
				fin[ok++] = last;
			}
		}
	}
	for (i = 0; i < count; i++) {
		if (!cs[i].done)
			burst_end(ep, &cs[i], true);
		if (cs[i].bad)
			failed++;
	}
	qsort(fin, ok, sizeof(*fin), cmp_u64);
	printf("{\"connections\": %zu, \"failed\": %ld, \"connect_errors\": %ld, "
	    "\"bytes_each_way\": %ld, \"seconds\": %.3f, \"p50_ms\": %.3f, "
	    "\"max_ms\": %.3f}\n", ok, failed, errs, bytes,
	    (double)last / 1e9, q_ms(fin, ok, 0.5),
	    ok ? q_ms(fin, ok, 1.0) : 0.0);
	close(ep);
	freeaddrinfo(ai);
	free(cs);
	free(fin);
	return failed ? 1 : 0;
}

int
main(int argc, char **argv)
{
	if (argc >= 5 && argc <= 6 && strcmp(argv[1], "seq") == 0)
		return run_seq(argv[2], argv[3],
		    arg_num(argv[4], 1, CN_MAX_COUNT, "COUNT"),
		    argc == 6 ? arg_num(argv[5], 1, 3600, "MAX-SECONDS") : 120);
	if (argc >= 6 && argc <= 7 && strcmp(argv[1], "burst") == 0)
		return run_burst(argv[2], argv[3],
		    arg_num(argv[4], 1, CN_MAX_COUNT, "COUNT"),
		    arg_num(argv[5], 1, CN_MAX_BYTES, "BYTES"),
		    argc == 7 ? arg_num(argv[6], 1, 3600, "MAX-SECONDS") : 120);
	fprintf(stderr, "usage: conns seq ADDR PORT COUNT [MAX-SECONDS]\n"
	    "       conns burst ADDR PORT COUNT BYTES [MAX-SECONDS]\n");
	return 2;
}
