/*
 * cover: the cover-site setting (resolution, refusing the server's own
 * listeners, keeping the previous site when a reload fails), plain dials,
 * and the TLS bridge on a real loop against a TLS server in this test --
 * bytes both ways, half-close passed on, the bridge gone afterwards -- and
 * against a site that is not TLS (failure counted, the session's end sees
 * the close).
 */
#include "config.h"

#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/addr.h"
#include "conf/conf.h"
#include "server/cover.h"
#include "core/log.h"
#include "core/loop.h"
#include "tls/outer.h"
#include "tests/unit/testcert.h"

#define DEADLINE_MS	10000

static struct testcert	 tc;

static long long
now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A self-signed certificate: the bridge verifies nothing. */
static int
setup_cert(void **state)
{
	(void)state;
	testcert_make(&tc, "test_cover", "cover.test");
	return 0;
}

static int
teardown_cert(void **state)
{
	(void)state;
	testcert_remove(&tc);
	return 0;
}

/* Non-blocking loopback listener; its port in *port. */
static int
listener(uint16_t *port)
{
	struct sockaddr_in	sin = { .sin_family = AF_INET };
	socklen_t		len = sizeof(sin);
	int			fd;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	*port = ntohs(sin.sin_port);
	return fd;
}

/* A server conf with one listener and an optional cover site. */
static void
conf_init(struct conf *c, const char *listen, const char *host,
    uint16_t port, bool tls)
{
	memset(c, 0, sizeof(*c));
	c->role = CONF_ROLE_SERVER;
	if (listen != NULL) {
		assert_int_equal(addr_parse(&c->server.listen[0], listen), 0);
		c->server.nlisten = 1;
	}
	c->server.fallback_host = (char *)(uintptr_t)host;
	c->server.fallback_port = port;
	c->server.fallback_tls = tls;
	c->server.connect_timeout_ms = 2000;
	c->server.idle_timeout_ms = 5000;
}

/*
 * A loop and a cover (in *l and *cv) whose site is a fresh loopback
 * listener (its fd in *lfd; tls: the site is to speak TLS), and one session
 * dialed to it: our end of that is returned.
 */
static int
dial_site(struct loop **l, struct cover **cv, int *lfd, bool tls)
{
	struct conf	 c;
	uint16_t	 port;
	int		 fd;

	*lfd = listener(&port);
	assert_non_null(*l = loop_new());
	assert_non_null(*cv = cover_new(*l));
	conf_init(&c, "10.0.0.1:443", "127.0.0.1", port, tls);
	assert_int_equal(cover_configure(*cv, &c), 0);
	assert_true((fd = cover_dial(*cv)) >= 0);
	return fd;
}

static void
test_configure(void **state)
{
	struct loop	*l;
	struct cover	*cv;
	struct conf	 c;
	char		 name[64];

	(void)state;
	assert_non_null(l = loop_new());
	assert_non_null(cv = cover_new(l));
	assert_false(cover_enabled(cv));
	assert_false(cover_enabled(NULL));
	assert_string_equal(cover_name(cv), "-");
	errno = 0;
	assert_int_equal(cover_dial(cv), -1);
	assert_int_equal(errno, ENOENT);

	conf_init(&c, "10.0.0.1:443", NULL, 0, false);
	assert_int_equal(cover_configure(cv, &c), 0);
	assert_false(cover_enabled(cv));

	conf_init(&c, "10.0.0.1:443", "127.0.0.1", 8080, false);
	assert_int_equal(cover_configure(cv, &c), 0);
	assert_true(cover_enabled(cv));
	assert_string_equal(cover_name(cv), "127.0.0.1:8080");

	/* A reload that cannot be applied keeps the previous site. */
	conf_init(&c, "10.0.0.1:443", "nonexistent.invalid", 80, false);
	assert_int_equal(cover_configure(cv, &c), -1);
	assert_true(cover_enabled(cv));
	assert_string_equal(cover_name(cv), "127.0.0.1:8080");

	/* Never the server's own listener: probes would loop forever. */
	conf_init(&c, "127.0.0.1:443", "127.0.0.1", 443, false);
	assert_int_equal(cover_configure(cv, &c), -1);
	conf_init(&c, "0.0.0.0:443", "127.0.0.1", 443, false);
	assert_int_equal(cover_configure(cv, &c), -1);
	conf_init(&c, "0.0.0.0:443", "0.0.0.0", 443, false);
	assert_int_equal(cover_configure(cv, &c), -1);
	conf_init(&c, "[::]:443", "::1", 443, false);
	assert_int_equal(cover_configure(cv, &c), -1);
	conf_init(&c, "10.0.0.1:443", "10.0.0.1", 443, false);
	assert_int_equal(cover_configure(cv, &c), -1);
	assert_string_equal(cover_name(cv), "127.0.0.1:8080");
	/* Same port elsewhere, or another port here, is fine. */
	conf_init(&c, "10.0.0.1:443", "127.0.0.1", 443, false);
	assert_int_equal(cover_configure(cv, &c), 0);
	conf_init(&c, "0.0.0.0:443", "127.0.0.1", 8443, true);
	assert_int_equal(cover_configure(cv, &c), 0);
	conf_init(&c, "[::]:443", "::1", 8080, false);
	assert_int_equal(cover_configure(cv, &c), 0);
	snprintf(name, sizeof(name), "%s", cover_name(cv));
	assert_string_equal(name, "[::1]:8080");

	/* Dropped by a reload: closing again. */
	conf_init(&c, "10.0.0.1:443", NULL, 0, false);
	assert_int_equal(cover_configure(cv, &c), 0);
	assert_false(cover_enabled(cv));
	assert_string_equal(cover_name(cv), "-");
	cover_free(cv);
	cover_free(NULL);
	loop_free(l);
}

static void
test_dial_plain(void **state)
{
	struct loop	*l;
	struct cover	*cv;
	long long	 deadline = now_ms() + DEADLINE_MS;
	char		 buf[8];
	int		 lfd, fd, afd = -1;

	(void)state;
	fd = dial_site(&l, &cv, &lfd, false);
	assert_int_equal(cover_stats_get(cv)->dialed, 1);
	assert_int_equal(cover_stats_get(cv)->bridges, 0);
	while (afd == -1) {
		assert_true(now_ms() < deadline);
		afd = accept(lfd, NULL, NULL);
	}
	while (send(fd, "ping", 4, MSG_NOSIGNAL) != 4)
		assert_true(now_ms() < deadline);
	assert_int_equal(recv(afd, buf, sizeof(buf), 0), 4);
	assert_memory_equal(buf, "ping", 4);
	close(afd);
	close(fd);
	close(lfd);
	cover_free(cv);
	loop_free(l);
}

/* The TLS side of the cover site, driven between loop iterations. */
struct site {
	int		 lfd;
	struct outer	*o;
	int		 hs;
	char		 req[256];
	size_t		 reqlen;
	bool		 eof, answered;
};

static void
site_step(struct site *s, struct ssl_ctx_st *sctx)
{
	static const char	 answer[] = "HTTP/1.1 200 OK\r\n\r\ncover page";
	ssize_t			 n;
	int			 fd;

	if (s->o == NULL) {
		if ((fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK)) == -1)
			return;
		assert_non_null(s->o = outer_new(sctx, fd, false, NULL));
	}
	if (s->hs != 1 && (s->hs = outer_handshake(s->o)) != 1) {
		assert_int_equal(s->hs, 0);
		return;
	}
	while (!s->eof && (n = outer_read(s->o, s->req + s->reqlen,
	    sizeof(s->req) - 1 - s->reqlen)) >= 0) {
		if (n == 0)
			s->eof = true;
		s->reqlen += (size_t)n;
	}
	if (!s->answered && strstr(s->req, "\r\n\r\n") != NULL) {
		assert_int_equal(outer_write(s->o, answer, sizeof(answer) - 1),
		    (ssize_t)sizeof(answer) - 1);
		assert_int_equal(outer_shutdown_write(s->o), 0);
		s->answered = true;
	}
}

static void
test_bridge(void **state)
{
	static const char	 req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	struct site		 site = { .hs = 0 };
	struct loop		*l;
	struct cover		*cv;
	long long		 deadline = now_ms() + DEADLINE_MS;
	char			 got[256];
	size_t			 gotlen = 0;
	ssize_t			 n;
	bool			 closed = false;
	int			 fd;

	(void)state;
	fd = dial_site(&l, &cv, &site.lfd, true);
	assert_int_equal(cover_stats_get(cv)->bridges, 1);
	/* Written before the bridge is up: it waits in the socketpair. */
	assert_int_equal(send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL),
	    (ssize_t)sizeof(req) - 1);
	for (;;) {
		assert_true(now_ms() < deadline);
		assert_int_equal(loop_run_once(l, 5), 0);
		site_step(&site, tc.sctx);
		while ((n = recv(fd, got + gotlen, sizeof(got) - 1 - gotlen,
		    MSG_DONTWAIT)) > 0)
			gotlen += (size_t)n;
		if (n == 0 && !closed) {
			/* The site's answer and its close came through; now
			 * our side is done too. */
			assert_int_equal(shutdown(fd, SHUT_WR), 0);
			closed = true;
		}
		if (closed && site.eof && cover_stats_get(cv)->bridges == 0)
			break;
	}
	got[gotlen] = '\0';
	assert_string_equal(got, "HTTP/1.1 200 OK\r\n\r\ncover page");
	site.req[site.reqlen] = '\0';
	assert_string_equal(site.req, req);
	assert_int_equal(cover_stats_get(cv)->failed, 0);
	close(fd);
	outer_free(site.o);
	close(site.lfd);
	cover_free(cv);
	loop_free(l);
}

/* A "TLS" site that answers in plain text: the bridge fails, counts it,
 * and the session's end sees the close. */
static void
test_bridge_not_tls(void **state)
{
	static const char	 junk[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
	struct loop		*l;
	struct cover		*cv;
	long long		 deadline = now_ms() + DEADLINE_MS;
	char			 buf[64];
	ssize_t			 n = -1;
	int			 lfd, fd, afd = -1;

	(void)state;
	fd = dial_site(&l, &cv, &lfd, true);
	while (n != 0) {
		assert_true(now_ms() < deadline);
		assert_int_equal(loop_run_once(l, 5), 0);
		if (afd == -1 && (afd = accept(lfd, NULL, NULL)) != -1)
			(void)send(afd, junk, sizeof(junk) - 1, MSG_NOSIGNAL);
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		assert_true(n == 0 || (n == -1 && errno == EAGAIN));
	}
	assert_int_equal(loop_run_once(l, 0), 0);	/* reap */
	assert_int_equal(cover_stats_get(cv)->failed, 1);
	assert_int_equal(cover_stats_get(cv)->bridges, 0);
	close(fd);
	close(afd);
	close(lfd);
	cover_free(cv);
	loop_free(l);
}

/* Bridges still open when the cover goes (server shutdown) are closed. */
static void
test_free_with_bridges(void **state)
{
	struct loop	*l;
	struct cover	*cv;
	char		 b;
	int		 lfd, fd;

	(void)state;
	fd = dial_site(&l, &cv, &lfd, true);
	cover_free(cv);
	/* Our end sees the bridge's end closed. */
	assert_int_equal(recv(fd, &b, 1, MSG_DONTWAIT), 0);
	close(fd);
	close(lfd);
	loop_free(l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_configure),
		cmocka_unit_test(test_dial_plain),
		cmocka_unit_test(test_bridge),
		cmocka_unit_test(test_bridge_not_tls),
		cmocka_unit_test(test_free_with_bridges),
	};

	log_init(getenv("TEST_DEBUG") != NULL ? LOG_LVL_DEBUG : LOG_LVL_ERROR,
	    false, "test_cover");
	return cmocka_run_group_tests(tests, setup_cert, teardown_cert);
}
