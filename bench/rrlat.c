/*
 * rrlat: request/response latency on one open TCP connection.
 *
 *   rrlat -s [-l ADDR] [-p PORT]                      echo server
 *   rrlat -c ADDR [-p PORT] [-b BYTES] [-d SECONDS] [-r RATE] [-w N]
 *
 * The client opens one connection, does N warm-up round trips (not
 * counted), then sends BYTES-byte requests; the server echoes every byte,
 * so each response is as long as its request and responses come back in
 * order.
 *
 * Closed loop (-r 0, the default): the next request leaves when the previous
 * response has arrived; the latency is the round trip of one request.
 *
 * Open loop (-r RATE): request i is due at start + i / RATE whatever
 * happened to the ones before.  Its latency is measured from that due time,
 * not from when it could actually be written: if the connection stalls (a
 * retransmission, a full window), the requests queued behind the stall carry
 * the wait in their latency instead of hiding it (no coordinated omission).
 * Requests are never dropped; what cannot be written waits in a buffer.
 * When the run ends the client waits up to 5 s for the rest; a request
 * without a response by then counts as unanswered.
 *
 * Each request carries its sequence number and the response must carry the
 * same one, so a tunnel that loses, duplicates or reorders bytes fails the
 * run instead of producing a number.  The result is one line of JSON.
 *
 * Standalone (libc only), like linkem; errors go through err(3).
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* ppoll() */
#endif

#include <sys/epoll.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NSEC		1000000000ULL
#define RR_MAX_BYTES	65536
#define RR_MAX_SAMPLES	(8u << 20)	/* 64 MiB of samples at most */
#define RR_DRAIN_NS	(5 * NSEC)
#define RR_SRV_BUF	65536
#define RR_SRV_MAXEV	64

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
}

static void
set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1)
		err(1, "fcntl");
}

static void
set_nodelay(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == -1)
		err(1, "TCP_NODELAY");
}

static struct addrinfo *
resolve(const char *host, const char *port, bool passive)
{
	struct addrinfo hints, *res;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV |
	    (passive ? AI_PASSIVE : 0);
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0)
		errx(2, "%s port %s: %s", host ? host : "*", port,
		    gai_strerror(rc));
	return res;
}

/* ---- server ------------------------------------------------------------ */

struct rr_conn {
	int	fd;
	size_t	len;		/* bytes waiting to be echoed */
	size_t	off;
	char	buf[RR_SRV_BUF];
};

static void
srv_close(int ep, struct rr_conn *c)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c);
}

/* Level-triggered: a connection waits for input while its buffer is empty
 * and for output while it is not, so one slow reader never makes us buffer
 * more than RR_SRV_BUF for it. */
static void
srv_conn_event(int ep, struct rr_conn *c)
{
	struct epoll_event ev;
	ssize_t n;

	if (c->len == 0) {
		n = read(c->fd, c->buf, sizeof(c->buf));
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR)) {
			srv_close(ep, c);
			return;
		}
		if (n < 0)
			return;
		c->len = (size_t)n;
		c->off = 0;
	}
	while (c->off < c->len) {
		n = write(c->fd, c->buf + c->off, c->len - c->off);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN) {
				srv_close(ep, c);
				return;
			}
			break;
		}
		c->off += (size_t)n;
	}
	if (c->off == c->len)
		c->len = c->off = 0;
	ev.events = c->len ? EPOLLOUT : EPOLLIN;
	ev.data.ptr = c;
	if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) == -1)
		err(1, "epoll_ctl");
}

static int
run_server(const char *addr, const char *port)
{
	struct addrinfo *ai = resolve(addr, port, true);
	struct epoll_event ev, evs[RR_SRV_MAXEV];
	int lfd, ep, one = 1, i, n, fd;

	lfd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (lfd == -1)
		err(1, "socket");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, ai->ai_addr, ai->ai_addrlen) == -1)
		err(1, "bind %s port %s", addr ? addr : "*", port);
	freeaddrinfo(ai);
	if (listen(lfd, SOMAXCONN) == -1)
		err(1, "listen");
	set_nonblock(lfd);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep == -1)
		err(1, "epoll_create1");
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;	/* NULL marks the listener */
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) == -1)
		err(1, "epoll_ctl");
	for (;;) {
		n = epoll_wait(ep, evs, RR_SRV_MAXEV, -1);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			err(1, "epoll_wait");
		}
		for (i = 0; i < n; i++) {
			struct rr_conn *c = evs[i].data.ptr;

			if (c) {
				srv_conn_event(ep, c);
				continue;
			}
			fd = accept4(lfd, NULL, NULL,
			    SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (fd == -1)
				continue;
			set_nodelay(fd);
			c = calloc(1, sizeof(*c));
			if (!c) {
				close(fd);
				continue;
			}
			c->fd = fd;
			ev.events = EPOLLIN;
			ev.data.ptr = c;
			if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == -1) {
				close(fd);
				free(c);
			}
		}
	}
}

/* ---- client ------------------------------------------------------------ */

struct rr_client {
	int		fd;
	size_t		bytes;		/* request = response size */
	/* due[k] is request k's due time; lat[k] its latency once answered */
	uint64_t	*due;
	uint64_t	*lat;
	uint64_t	cap;		/* entries of due[] and lat[] */
	uint64_t	queued;		/* requests made (due times set) */
	uint64_t	written;	/* requests wholly written */
	size_t		wpart;		/* bytes of request [written] out */
	uint64_t	answered;
	size_t		rpart;		/* bytes of response [answered] in */
	char		*wbuf;
	char		*rbuf;
};

static void
seq_fill(char *p, size_t len, uint64_t seq)
{
	memset(p, 'r', len);
	memcpy(p, &seq, len < sizeof(seq) ? len : sizeof(seq));
}

static void
rr_grow(struct rr_client *c)
{
	uint64_t cap = c->cap ? c->cap * 2 : 4096;

	if (cap > RR_MAX_SAMPLES)
		errx(1, "more than %u requests: lower -r or -d", RR_MAX_SAMPLES);
	c->due = realloc(c->due, cap * sizeof(*c->due));
	c->lat = realloc(c->lat, cap * sizeof(*c->lat));
	if (!c->due || !c->lat)
		err(1, "realloc");
	c->cap = cap;
}

static void
rr_queue(struct rr_client *c, uint64_t due)
{
	if (c->queued == c->cap)
		rr_grow(c);
	c->due[c->queued++] = due;
}

/* Writes whatever queued requests the socket takes. */
static void
rr_write(struct rr_client *c)
{
	ssize_t n;

	while (c->written < c->queued) {
		if (c->wpart == 0)
			seq_fill(c->wbuf, c->bytes, c->written);
		n = write(c->fd, c->wbuf + c->wpart, c->bytes - c->wpart);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			err(1, "write");
		}
		c->wpart += (size_t)n;
		if (c->wpart == c->bytes) {
			c->wpart = 0;
			c->written++;
		}
	}
}

/* Reads responses; each completed one gets its latency from its due time. */
static void
rr_read(struct rr_client *c)
{
	uint64_t seq;
	ssize_t n;

	for (;;) {
		n = read(c->fd, c->rbuf + c->rpart, c->bytes - c->rpart);
		if (n == 0)
			errx(1, "connection closed by the peer after %" PRIu64
			    " responses", c->answered);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			err(1, "read");
		}
		c->rpart += (size_t)n;
		if (c->rpart < c->bytes)
			continue;
		if (c->answered >= c->written)
			errx(1, "response without a request");
		seq = 0;
		memcpy(&seq, c->rbuf,
		    c->bytes < sizeof(seq) ? c->bytes : sizeof(seq));
		if (c->bytes >= sizeof(seq) && seq != c->answered)
			errx(1, "response %" PRIu64 " carries sequence %" PRIu64,
			    c->answered, seq);
		c->lat[c->answered] = now_ns() - c->due[c->answered];
		c->answered++;
		c->rpart = 0;
	}
}

/* Waits for the socket or until @deadline (0: no deadline). */
static void
rr_wait(struct rr_client *c, uint64_t deadline)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	struct timespec ts, *tsp = NULL;
	uint64_t now;

	if (c->written < c->queued)
		pfd.events |= POLLOUT;
	if (deadline) {
		now = now_ns();
		if (deadline <= now)
			return;
		ts.tv_sec = (time_t)((deadline - now) / NSEC);
		ts.tv_nsec = (long)((deadline - now) % NSEC);
		tsp = &ts;
	}
	if (ppoll(&pfd, 1, tsp, NULL) == -1 && errno != EINTR)
		err(1, "ppoll");
	if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL) &&
	    !(pfd.revents & POLLIN))
		errx(1, "connection failed");
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest rank, as bench/report.py does. */
static double
quantile_us(const uint64_t *sorted, uint64_t n, double p)
{
	uint64_t k;

	if (n == 0)
		return 0;
	k = (uint64_t)(p * (double)n + 0.999999);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return (double)sorted[k - 1] / 1e3;
}

static int
run_client(const char *host, const char *port, size_t bytes, double secs,
    double rate, unsigned warmup)
{
	struct addrinfo *ai = resolve(host, port, false);
	struct rr_client c;
	uint64_t start, end, next, period = 0, i, sum = 0;
	unsigned w;

	memset(&c, 0, sizeof(c));
	c.bytes = bytes;
	c.wbuf = malloc(bytes);
	c.rbuf = malloc(bytes);
	if (!c.wbuf || !c.rbuf)
		err(1, "malloc");
	c.fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (c.fd == -1)
		err(1, "socket");
	set_nodelay(c.fd);
	if (connect(c.fd, ai->ai_addr, ai->ai_addrlen) == -1)
		err(1, "connect %s port %s", host, port);
	freeaddrinfo(ai);
	set_nonblock(c.fd);

	/* Warm-up round trips, closed loop; then forget them. */
	for (w = 0; w < warmup; w++) {
		rr_queue(&c, now_ns());
		while (c.answered < c.queued) {
			rr_write(&c);
			rr_wait(&c, now_ns() + 10 * NSEC);
			rr_read(&c);
		}
	}
	c.queued = c.written = c.answered = 0;

	start = now_ns();
	end = start + (uint64_t)(secs * NSEC);
	if (rate > 0)
		period = (uint64_t)(NSEC / rate);
	next = start;
	for (;;) {
		uint64_t now = now_ns();

		if (rate > 0) {
			/* Every request due by now is made, written or not. */
			while (next <= now && next < end) {
				rr_queue(&c, next);
				next += period;
			}
		} else if (c.answered == c.queued && now < end) {
			rr_queue(&c, now);
		}
		/* Done: every request made is answered and no more are due. */
		if (c.answered == c.queued && (rate > 0 ? next >= end :
		    now >= end))
			break;
		if (now >= end + RR_DRAIN_NS)
			break;
		rr_write(&c);
		rr_read(&c);
		if (rate <= 0 && c.answered == c.queued)
			continue;	/* closed loop: the next one at once */
		if (rate > 0 && next < end)
			rr_wait(&c, next);
		else if (rate <= 0 && now < end)
			rr_wait(&c, end);
		else
			rr_wait(&c, end + RR_DRAIN_NS);
	}
	close(c.fd);

	for (i = 0; i < c.answered; i++)
		sum += c.lat[i];
	qsort(c.lat, c.answered, sizeof(*c.lat), cmp_u64);
	printf("{\"mode\": \"%s\", \"rate\": %g, \"bytes\": %zu, "
	    "\"seconds\": %g, \"sent\": %" PRIu64 ", \"answered\": %" PRIu64
	    ", \"unanswered\": %" PRIu64 ", \"mean_us\": %.1f, "
	    "\"p50_us\": %.1f, \"p90_us\": %.1f, \"p99_us\": %.1f, "
	    "\"p999_us\": %.1f, \"max_us\": %.1f}\n",
	    rate > 0 ? "open" : "closed", rate > 0 ? rate : 0, bytes, secs,
	    c.queued, c.answered, c.queued - c.answered,
	    c.answered ? (double)sum / (double)c.answered / 1e3 : 0,
	    quantile_us(c.lat, c.answered, 0.50),
	    quantile_us(c.lat, c.answered, 0.90),
	    quantile_us(c.lat, c.answered, 0.99),
	    quantile_us(c.lat, c.answered, 0.999),
	    c.answered ? (double)c.lat[c.answered - 1] / 1e3 : 0);
	free(c.due);
	free(c.lat);
	free(c.wbuf);
	free(c.rbuf);
	return c.answered == c.queued ? 0 : 3;
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr,
	    "usage: rrlat -s [-l ADDR] [-p PORT]\n"
	    "       rrlat -c ADDR [-p PORT] [-b BYTES] [-d SECONDS] "
	    "[-r RATE] [-w WARMUP]\n"
	    "  -r 0: closed loop (default); -r N: open loop, N requests/s\n");
	exit(2);
}

static double
num_arg(const char *s, const char *what, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < lo || v > hi)
		errx(2, "%s: \"%s\" is not a number from %g to %g", what, s,
		    lo, hi);
	return v;
}

int
main(int argc, char **argv)
{
	const char *host = NULL, *laddr = NULL, *port = "7001";
	double secs = 3, rate = 0;
	size_t bytes = 64;
	unsigned warmup = 5;
	bool server = false;
	int ch;

	signal(SIGPIPE, SIG_IGN);
	while ((ch = getopt(argc, argv, "sc:l:p:b:d:r:w:")) != -1) {
		switch (ch) {
		case 's': server = true; break;
		case 'c': host = optarg; break;
		case 'l': laddr = optarg; break;
		case 'p': port = optarg; break;
		case 'b': bytes = (size_t)num_arg(optarg, "-b", 1,
			      RR_MAX_BYTES); break;
		case 'd': secs = num_arg(optarg, "-d", 0.1, 3600); break;
		case 'r': rate = num_arg(optarg, "-r", 0, 1e6); break;
		case 'w': warmup = (unsigned)num_arg(optarg, "-w", 0, 1e6);
			  break;
		default: usage();
		}
	}
	if (optind != argc || server == (host != NULL))
		usage();
	if (server)
		return run_server(laddr, port);
	return run_client(host, port, bytes, secs, rate, warmup);
}
