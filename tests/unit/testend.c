/*
 * A test's end of a byte stream (see testend.h).
 */
#include "config.h"

#include "testend.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "tls/outer.h"

uint8_t
testend_pat(unsigned seed, size_t off)
{
	uint32_t x = (uint32_t)off * 2654435761u + seed * 40503u;

	return (uint8_t)(x >> 24 ^ x >> 13 ^ x);
}

void
testend_init(struct testend *e, unsigned seed, size_t tx_len, size_t rx_cap)
{
	memset(e, 0, sizeof(*e));
	e->seed = seed;
	e->tx_len = tx_len;
	e->rx_cap = rx_cap;
	assert_non_null(e->rx = malloc(rx_cap > 0 ? rx_cap : 1));
}

void
testend_free(struct testend *e)
{
	outer_free(e->o);
	e->o = NULL;
	free(e->rx);
	e->rx = NULL;
}

static void
testend_write(struct testend *e)
{
	uint8_t	 b[16384];
	size_t	 lim = e->tx_hold != 0 && e->tx_hold < e->tx_len ? e->tx_hold :
		    e->tx_len, total = e->pre_len + lim, off, n, i;
	ssize_t	 w;

	if (e->paused)
		return;
	while (!e->shut && e->tx_off < total) {
		off = e->tx_off;
		if (off < e->pre_len) {
			n = e->pre_len - off;
			memcpy(b, e->pre + off, n);
		} else {
			n = total - off < sizeof(b) ? total - off : sizeof(b);
			for (i = 0; i < n; i++)
				b[i] = testend_pat(e->seed, off - e->pre_len + i);
		}
		if ((w = outer_write(e->o, b, n)) < 0) {
			assert_int_equal(errno, EAGAIN);
			return;
		}
		e->tx_off += (size_t)w;
		if (e->eof && off >= e->pre_len)
			e->tx_after_eof += (size_t)w;
	}
	if (e->shut_when_sent && !e->shut &&
	    e->tx_off == e->pre_len + e->tx_len) {
		if (outer_shutdown_write(e->o) == 0)
			e->shut = true;
		else
			assert_int_equal(errno, EAGAIN);
	}
}

static void
testend_read(struct testend *e)
{
	uint8_t	 b[16384];
	ssize_t	 n;

	while (!e->eof && e->err == 0) {
		n = outer_read(e->o, b, sizeof(b));
		if (n < 0) {
			if (errno != EAGAIN)
				e->err = errno;
			return;
		}
		if (n == 0) {
			e->eof = true;
			return;
		}
		if (e->rx_len + (size_t)n > e->rx_cap)
			fail_msg("%zu bytes more than the %zu expected",
			    e->rx_len + (size_t)n - e->rx_cap, e->rx_cap);
		memcpy(e->rx + e->rx_len, b, (size_t)n);
		e->rx_len += (size_t)n;
		if (e->shut)
			e->rx_after_shut += (size_t)n;
	}
}

void
testend_step(struct testend *e)
{
	if (e->o == NULL)
		return;
	if (e->hs != 1) {
		e->hs = outer_handshake(e->o);
		assert_int_not_equal(e->hs, -1);
		if (e->hs != 1)
			return;
		if (e->on_hs != NULL)
			e->on_hs(e);
	}
	testend_read(e);
	testend_write(e);
}

void
testend_accept(struct testend *e, int lfd, struct ssl_ctx_st *ctx,
    unsigned *accepted)
{
	int	 fd;

	if (e->o != NULL)
		return;
	if ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) < 0)
		return;
	(*accepted)++;
	assert_non_null(e->o = outer_new(ctx, fd, false, NULL));
}

void
testend_expect(const struct testend *e, size_t off0, unsigned seed, size_t n)
{
	unsigned char	 got[crypto_hash_sha256_BYTES];
	unsigned char	 want[crypto_hash_sha256_BYTES];
	uint8_t		*x;
	size_t		 i;

	assert_int_equal(e->rx_len, off0 + n);
	assert_non_null(x = malloc(n > 0 ? n : 1));
	for (i = 0; i < n; i++)
		x[i] = testend_pat(seed, i);
	crypto_hash_sha256(want, x, n);
	crypto_hash_sha256(got, e->rx + off0, n);
	free(x);
	assert_memory_equal(got, want, sizeof(got));
}

int
testend_listener(uint16_t *port)
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
