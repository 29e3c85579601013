/*
 * relay: a real TLS outer stream (server side relayed, client side played
 * by the test) and a plain TCP pair for the fd side, all on loopback.
 * Checks queued bytes going first, data intact both ways, half-close each
 * way, bounded buffers with interest dropped while full, the answer-only
 * mode (no fd side) and resets on either side.
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "core/buf.h"
#include "core/limit.h"
#include "tls/outer.h"
#include "server/relay.h"
#include "core/sock.h"
#include "tests/unit/testcert.h"

#define BIG	(2 * 1024 * 1024)

static struct testcert	 tc;

struct pair {
	struct relay	 r;
	struct outer	*so;		/* relayed (server) side */
	struct outer	*co;		/* the test's client */
	int		 fd;		/* relayed fd side */
	int		 peer;		/* the test's target */
};

/* ---- fixtures ---------------------------------------------------------- */

static int
setup_group(void **state)
{
	(void)state;
	testcert_make(&tc, "test_relay", "relay.test");
	return 0;
}

static int
teardown_group(void **state)
{
	(void)state;
	testcert_remove(&tc);
	return 0;
}

/* Small kernel buffers, so that a few MiB are enough to fill them all and
 * make backpressure reach the relay. */
static void
small_buffers(int fd)
{
	int	 sz = 16 * 1024;

	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz,
	    sizeof(sz)), 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz,
	    sizeof(sz)), 0);
}

/* A connected non-blocking loopback TCP pair. */
static void
tcp_pair(int *a, int *b)
{
	struct sockaddr_in	 sin = { .sin_family = AF_INET };
	socklen_t		 len = sizeof(sin);
	int			 l;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true((l = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	small_buffers(l);
	assert_int_equal(bind(l, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sin, &len), 0);
	assert_true((*a = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	small_buffers(*a);
	assert_int_equal(connect(*a, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_true((*b = accept(l, NULL, NULL)) >= 0);
	close(l);
	assert_int_equal(sock_set_nonblock(*a), 0);
	assert_int_equal(sock_set_nonblock(*b), 0);
}

static void
wait_fds(int a, int b)
{
	struct pollfd	 p[2] = { { a, POLLIN | POLLOUT, 0 },
			    { b, POLLIN | POLLOUT, 0 } };

	(void)poll(p, 2, 10);
}

static void
pair_open(struct pair *p, int fd_side)
{
	int	 s, c, done_s = 0, done_c = 0, i;

	memset(p, 0, sizeof(*p));
	tcp_pair(&c, &s);
	assert_non_null(p->co = outer_new(tc.cctx, c, true, "relay.test"));
	assert_non_null(p->so = outer_new(tc.sctx, s, false, NULL));
	for (i = 0; i < 500 && (done_s != 1 || done_c != 1); i++) {
		if (done_c != 1)
			done_c = outer_handshake(p->co);
		if (done_s != 1)
			done_s = outer_handshake(p->so);
		assert_true(done_c != -1 && done_s != -1);
		wait_fds(c, s);
	}
	assert_int_equal(done_c, 1);
	assert_int_equal(done_s, 1);
	p->fd = p->peer = -1;
	if (fd_side)
		tcp_pair(&p->fd, &p->peer);
	relay_init(&p->r, RELAY_BUF_SIZE);
}

static void
pair_close(struct pair *p)
{
	relay_free(&p->r);
	outer_free(p->so);
	outer_free(p->co);
	if (p->fd != -1)
		close(p->fd);
	if (p->peer != -1)
		close(p->peer);
}

/* ---- the test's ends ----------------------------------------------------- */

/* Runs the relay once and waits briefly for any fd to move (either side
 * may be gone: reset by the test). */
static enum relay_state
pump(struct pair *p)
{
	/* The relay's fds are not watched here: both may have news. */
	enum relay_state	 st = relay_run(&p->r, EPOLLIN, EPOLLIN);
	int			 ofd;

	ofd = p->co != NULL ? outer_fd(p->co) : p->peer;
	wait_fds(ofd, p->peer != -1 ? p->peer : ofd);
	return st;
}

/* Pumps until the relay ends (200 rounds at most); its last state. */
static enum relay_state
pump_to_end(struct pair *p)
{
	enum relay_state	 st = RELAY_RUNNING;
	int			 i;

	for (i = 0; i < 200 && st == RELAY_RUNNING; i++)
		st = pump(p);
	return st;
}

/* Reads the client side: > 0 bytes, 0 EOF, -1 nothing yet. */
static ssize_t
client_read(struct pair *p, uint8_t *b, size_t n)
{
	ssize_t	 r = outer_read(p->co, b, n);

	if (r == -1)
		assert_true(errno == EAGAIN);
	return r;
}

static ssize_t
peer_read(struct pair *p, uint8_t *b, size_t n)
{
	ssize_t	 r = recv(p->peer, b, n, 0);

	if (r == -1)
		assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	return r;
}

static void
fill_pattern(uint8_t *b, size_t n, uint8_t seed)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 7 + seed + (i >> 12));
}

/* ---- tests --------------------------------------------------------------- */

static void
test_queued_first_then_both_ways(void **state)
{
	struct pair	 p;
	uint8_t		*up, *down, *got_up, *got_down, status = 0;
	size_t		 sent_up = 0, sent_down = 0, n_up = 0, n_down = 0;
	ssize_t		 n;
	int		 i;

	(void)state;
	pair_open(&p, 1);
	up = malloc(BIG);
	down = malloc(BIG);
	got_up = malloc(BIG + 16);
	got_down = malloc(BIG + 16);
	fill_pattern(up, BIG, 1);
	fill_pattern(down, BIG, 2);
	/* Queued before start: a status byte and early data. */
	assert_int_equal(buf_append(&p.r.to_outer, &status, 1), 1);
	assert_int_equal(buf_append(&p.r.to_fd, "early", 5), 5);
	relay_start(&p.r, p.so, p.fd);
	for (i = 0; i < 20000 && (n_up < BIG + 5 || n_down < BIG + 1); i++) {
		if (sent_up < BIG && (n = outer_write(p.co, up + sent_up,
		    BIG - sent_up)) > 0)
			sent_up += (size_t)n;
		if (sent_down < BIG && (n = send(p.peer, down + sent_down,
		    BIG - sent_down, MSG_NOSIGNAL)) > 0)
			sent_down += (size_t)n;
		if ((n = peer_read(&p, got_up + n_up, BIG + 16 - n_up)) > 0)
			n_up += (size_t)n;
		if ((n = client_read(&p, got_down + n_down,
		    BIG + 16 - n_down)) > 0)
			n_down += (size_t)n;
		assert_int_equal(pump(&p), RELAY_RUNNING);
	}
	assert_int_equal(n_up, BIG + 5);
	assert_int_equal(n_down, BIG + 1);
	assert_memory_equal(got_up, "early", 5);
	assert_memory_equal(got_up + 5, up, BIG);
	assert_int_equal(got_down[0], 0);
	assert_memory_equal(got_down + 1, down, BIG);
	assert_int_equal(p.r.bytes_to_fd, BIG + 5);
	assert_int_equal(p.r.bytes_to_outer, BIG + 1);
	/* Everything flushed: the buffers are given back. */
	assert_null(p.r.to_fd.data);
	assert_null(p.r.to_outer.data);
	free(up);
	free(down);
	free(got_up);
	free(got_down);
	pair_close(&p);
}

/* Reads the client side until something comes (bounded); that read. */
static ssize_t
client_read_wait(struct pair *p, uint8_t *b, size_t n)
{
	ssize_t	 r = -1;
	int	 i;

	for (i = 0; i < 1000 && r == -1; i++) {
		(void)pump(p);
		if ((r = client_read(p, b, n)) == -1)
			usleep(2000);
	}
	return r;
}

/*
 * A side whose read would have blocked is read again only once its fd
 * reports something: bytes that arrive meanwhile wait for relay_run to
 * be told (level-triggered epoll reports them), and then all arrive.
 */
static void
readable(int fd)
{
	struct pollfd	 pfd = { fd, POLLIN, 0 };

	assert_int_equal(poll(&pfd, 1, 10000), 1);
}

static void
test_idle_waits_for_event(void **state)
{
	struct pair	 p;
	uint8_t		 b[16];

	(void)state;
	pair_open(&p, 1);
	relay_start(&p.r, p.so, p.fd);
	assert_int_equal(relay_run(&p.r, EPOLLIN, EPOLLIN), RELAY_RUNNING);
	assert_true(p.r.fd_rd_idle && p.r.outer_rd_idle);
	/* the target's bytes: not read without news of the fd */
	assert_int_equal(send(p.peer, "tgt", 3, MSG_NOSIGNAL), 3);
	readable(p.fd);
	assert_int_equal(relay_run(&p.r, EPOLLOUT, EPOLLOUT), RELAY_RUNNING);
	assert_int_equal(p.r.bytes_to_outer, 0);
	assert_true(relay_fd_events(&p.r) & EPOLLIN);	/* still asked */
	assert_int_equal(relay_run(&p.r, 0, EPOLLIN), RELAY_RUNNING);
	assert_int_equal(p.r.bytes_to_outer, 3);
	assert_int_equal(client_read_wait(&p, b, sizeof(b)), 3);
	assert_memory_equal(b, "tgt", 3);
	/* the client's bytes: the same on the outer side */
	assert_int_equal(outer_write(p.co, "cli", 3), 3);
	readable(outer_fd(p.so));
	assert_int_equal(relay_run(&p.r, 0, EPOLLOUT), RELAY_RUNNING);
	assert_int_equal(p.r.bytes_to_fd, 0);
	assert_int_equal(relay_run(&p.r, EPOLLIN, 0), RELAY_RUNNING);
	assert_int_equal(p.r.bytes_to_fd, 3);
	pair_close(&p);
}

/*
 * A held status byte: nothing reaches the client, and the relay asks for
 * no write event, until the target's first bytes come -- then both arrive
 * in one record (one TLS read returns them together) -- or the target's
 * end of stream, or the owner's release.
 */
static void
test_hold_outer(void **state)
{
	struct pair	 p;
	uint8_t		 b[64], status = 0;
	int		 how, i;

	(void)state;
	for (how = 0; how < 3; how++) {
		pair_open(&p, 1);
		assert_int_equal(buf_append(&p.r.to_outer, &status, 1), 1);
		relay_hold_outer(&p.r);
		assert_true(relay_outer_held(&p.r));
		relay_start(&p.r, p.so, p.fd);
		for (i = 0; i < 20; i++) {
			assert_int_equal(pump(&p), RELAY_RUNNING);
			assert_int_equal(client_read(&p, b, sizeof(b)), -1);
		}
		assert_false(relay_outer_events(&p.r) & EPOLLOUT);
		assert_true(relay_outer_held(&p.r));
		switch (how) {
		case 0:		/* the target answers */
			assert_int_equal(send(p.peer, "reply", 5, 0), 5);
			assert_int_equal(client_read_wait(&p, b, sizeof(b)), 6);
			assert_memory_equal(b, "\0reply", 6);
			break;
		case 1:		/* the target closes */
			assert_int_equal(shutdown(p.peer, SHUT_WR), 0);
			assert_int_equal(client_read_wait(&p, b, sizeof(b)), 1);
			assert_int_equal(b[0], 0);
			assert_int_equal(client_read_wait(&p, b, sizeof(b)), 0);
			break;
		default:	/* the owner's deadline */
			relay_release_outer(&p.r);
			assert_int_equal(client_read_wait(&p, b, sizeof(b)), 1);
			assert_int_equal(b[0], 0);
			break;
		}
		assert_false(relay_outer_held(&p.r));
		pair_close(&p);
	}
}

static void
test_half_close_both_ways(void **state)
{
	struct pair		 p;
	uint8_t			 b[64];
	ssize_t			 n = -1;
	int			 i;

	(void)state;
	pair_open(&p, 1);
	relay_start(&p.r, p.so, p.fd);
	/* Client sends, then ends its direction. */
	assert_int_equal(outer_write(p.co, "bye", 3), 3);
	for (i = 0; i < 200 && outer_shutdown_write(p.co) == -1; i++)
		wait_fds(outer_fd(p.co), outer_fd(p.co));
	for (i = 0; i < 200 && (n = peer_read(&p, b, sizeof(b))) != 3; i++)
		assert_int_equal(pump(&p), RELAY_RUNNING);
	assert_int_equal(n, 3);
	for (i = 0; i < 200 && (n = peer_read(&p, b, sizeof(b))) != 0; i++)
		assert_int_equal(pump(&p), RELAY_RUNNING);
	assert_int_equal(n, 0);		/* the FIN reached the target */
	/* The other direction still works ... */
	assert_int_equal(send(p.peer, "late", 4, 0), 4);
	for (i = 0; i < 200 && (n = client_read(&p, b, sizeof(b))) != 4; i++)
		assert_int_equal(pump(&p), RELAY_RUNNING);
	assert_int_equal(n, 4);
	assert_memory_equal(b, "late", 4);
	/* ... until the target ends it too. */
	assert_int_equal(shutdown(p.peer, SHUT_WR), 0);
	assert_int_equal(pump_to_end(&p), RELAY_DONE);
	for (i = 0; i < 200 && (n = client_read(&p, b, sizeof(b))) == -1; i++)
		wait_fds(outer_fd(p.co), outer_fd(p.co));
	assert_int_equal(n, 0);
	pair_close(&p);
}

static void
test_backpressure_bounded(void **state)
{
	struct pair	 p;
	uint8_t		*up, *got;
	size_t		 sent = 0, n_got = 0;
	ssize_t		 n;
	int		 i;

	(void)state;
	pair_open(&p, 1);
	up = malloc(BIG);
	got = malloc(BIG);
	fill_pattern(up, BIG, 3);
	relay_start(&p.r, p.so, p.fd);
	/* The target reads nothing: the client side must stall, not the
	 * relay's memory grow. */
	for (i = 0; i < 2000; i++) {
		if ((n = outer_write(p.co, up + sent, BIG - sent)) > 0)
			sent += (size_t)n;
		assert_int_equal(pump(&p), RELAY_RUNNING);
		assert_true(buf_len(&p.r.to_fd) <= RELAY_BUF_SIZE);
	}
	assert_true(sent < BIG);
	assert_int_equal(buf_room(&p.r.to_fd), 0);
	assert_int_equal(relay_outer_events(&p.r) & EPOLLIN, 0);
	assert_true(relay_fd_events(&p.r) & EPOLLOUT);
	/* The target drains: everything arrives, in order. */
	for (i = 0; i < 20000 && n_got < BIG; i++) {
		if (sent < BIG && (n = outer_write(p.co, up + sent,
		    BIG - sent)) > 0)
			sent += (size_t)n;
		if ((n = peer_read(&p, got + n_got, BIG - n_got)) > 0)
			n_got += (size_t)n;
		assert_int_equal(pump(&p), RELAY_RUNNING);
	}
	assert_int_equal(n_got, BIG);
	assert_memory_equal(got, up, BIG);
	assert_true(relay_outer_events(&p.r) & EPOLLIN);
	free(up);
	free(got);
	pair_close(&p);
}

/*
 * A memory budget of one buffer for a relay that moves BIG bytes both ways
 * while the client reads slowly: the budget never goes over, the side it
 * refuses is paused (not read: no read interest), and once the other
 * buffer drains the paused side goes on -- every byte arrives, in order.
 */
static void
test_budget_pauses_never_loses(void **state)
{
	struct pair		 p;
	struct limit_mem	 m;
	uint8_t			*up, *down, *got_up, *got_down;
	size_t			 sent_up = 0, sent_down = 0, n_up = 0, n_down = 0;
	ssize_t			 n;
	bool			 was_starved = false;
	int			 i;

	(void)state;
	pair_open(&p, 1);
	limit_mem_init(&m, RELAY_BUF_SIZE, RELAY_BUF_SIZE);
	up = malloc(BIG);
	down = malloc(BIG);
	got_up = malloc(BIG);
	got_down = malloc(BIG);
	fill_pattern(up, BIG, 4);
	fill_pattern(down, BIG, 5);
	relay_start(&p.r, p.so, p.fd);
	relay_set_budget(&p.r, &m);
	for (i = 0; i < 40000 && (n_up < BIG || n_down < BIG); i++) {
		if (sent_up < BIG && (n = outer_write(p.co, up + sent_up,
		    BIG - sent_up)) > 0)
			sent_up += (size_t)n;
		if (sent_down < BIG && (n = send(p.peer, down + sent_down,
		    BIG - sent_down, MSG_NOSIGNAL)) > 0)
			sent_down += (size_t)n;
		if ((n = peer_read(&p, got_up + n_up, BIG - n_up)) > 0)
			n_up += (size_t)n;
		/* The client reads only every 8th turn: downstream backs up
		 * and holds its buffer, starving upstream for a while. */
		if (i % 8 == 0 && (n = client_read(&p, got_down + n_down,
		    BIG - n_down)) > 0)
			n_down += (size_t)n;
		assert_int_equal(pump(&p), RELAY_RUNNING);
		assert_true(m.used <= m.max);
		if (relay_starved(&p.r)) {
			was_starved = true;
			if (p.r.to_fd.denied)
				assert_int_equal(relay_outer_events(&p.r) &
				    EPOLLIN, 0);
			if (p.r.to_outer.denied)
				assert_int_equal(relay_fd_events(&p.r) &
				    EPOLLIN, 0);
		}
	}
	assert_true(was_starved);
	assert_true(m.denied > 0);
	assert_int_equal(m.peak, RELAY_BUF_SIZE);
	assert_int_equal(n_up, BIG);
	assert_int_equal(n_down, BIG);
	assert_memory_equal(got_up, up, BIG);
	assert_memory_equal(got_down, down, BIG);
	relay_free(&p.r);
	assert_int_equal(m.used, 0);
	free(up);
	free(down);
	free(got_up);
	free(got_down);
	pair_close(&p);
}

static void
test_answer_only(void **state)
{
	struct pair		 p;
	uint8_t			 b[64], status = 2;
	ssize_t			 n = -1;
	int			 i;

	(void)state;
	pair_open(&p, 0);
	assert_int_equal(buf_append(&p.r.to_outer, &status, 1), 1);
	assert_int_equal(buf_append(&p.r.to_fd, "early", 5), 5);
	relay_start(&p.r, p.so, -1);
	assert_int_equal(relay_fd_events(&p.r), 0);
	/* Status, then end of stream. */
	for (i = 0; i < 200 && (n = client_read(&p, b, sizeof(b))) == -1; i++)
		assert_int_equal(pump(&p), RELAY_RUNNING);
	assert_int_equal(n, 1);
	assert_int_equal(b[0], 2);
	for (i = 0; i < 200 && (n = client_read(&p, b, sizeof(b))) == -1; i++)
		assert_int_equal(pump(&p), RELAY_RUNNING);
	assert_int_equal(n, 0);
	/* What the client still sends is discarded; its close ends it. */
	assert_int_equal(outer_write(p.co, "ignored", 7), 7);
	for (i = 0; i < 200 && outer_shutdown_write(p.co) == -1; i++)
		wait_fds(outer_fd(p.co), outer_fd(p.co));
	assert_int_equal(pump_to_end(&p), RELAY_DONE);
	assert_int_equal(p.r.bytes_to_fd, 0);
	assert_int_equal(p.r.bytes_to_outer, 1);
	pair_close(&p);
}

/* One side reset mid-relay (the target's, or the client's outer stream):
 * the relay ends in want with ECONNRESET. */
static void
reset_case(bool outer_side, enum relay_state want)
{
	struct pair	 p;

	pair_open(&p, 1);
	relay_start(&p.r, p.so, p.fd);
	assert_int_equal(pump(&p), RELAY_RUNNING);
	if (outer_side) {
		outer_abort(p.co);
		p.co = NULL;
	} else {
		sock_close_rst(p.peer);
		p.peer = -1;
	}
	assert_int_equal(pump_to_end(&p), want);
	assert_int_equal(p.r.err, ECONNRESET);
	pair_close(&p);
}

static void
test_fd_reset(void **state)
{
	(void)state;
	reset_case(false, RELAY_FD_FAILED);
}

static void
test_outer_reset(void **state)
{
	(void)state;
	reset_case(true, RELAY_OUTER_FAILED);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queued_first_then_both_ways),
		cmocka_unit_test(test_hold_outer),
		cmocka_unit_test(test_idle_waits_for_event),
		cmocka_unit_test(test_half_close_both_ways),
		cmocka_unit_test(test_backpressure_bounded),
		cmocka_unit_test(test_budget_pauses_never_loses),
		cmocka_unit_test(test_answer_only),
		cmocka_unit_test(test_fd_reset),
		cmocka_unit_test(test_outer_reset),
	};

	return cmocka_run_group_tests(tests, setup_group, teardown_group);
}
