/*
 * The fake app of the client TCP flow tests (see tcp_app.h).
 */
#include "config.h"

#include "tcp_app.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "stack/tsnetif.h"
#include "tests/unit/netbytes.h"

const uint8_t TCP_APP4[4] = { 198, 18, 0, 1 }, TCP_DST4[4] = { 192, 0, 2, 7 };
const uint8_t TCP_APP6[16] = { 0xfd, 0xfe, [15] = 1 };
const uint8_t TCP_DST6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 7 };

/* ---- bytes ------------------------------------------------------------ */

/* a after b, in sequence space */
static bool
seq_gt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/* ---- the app ------------------------------------------------------------ */

void
tcp_app_init(struct tcp_app *a, int v6, unsigned mss, unsigned mtu, int tun,
    size_t cap)
{
	memset(a, 0, sizeof(*a));
	a->v6 = v6;
	a->mss = mss;
	a->mtu = mtu;
	a->tun = tun;
	a->iss = a->snd_nxt = a->snd_una = a->snd_max = 1000;
	a->cap = cap;
	assert_non_null(a->data = malloc(cap > 0 ? cap : 1));
}

void
tcp_app_send(struct tcp_app *a, uint8_t flags, bool mss_opt,
    const uint8_t *pl, size_t plen)
{
	uint8_t	 b[1600], ph[40];
	size_t	 ihl = a->v6 ? 40 : 20, thl = mss_opt ? 24 : 20;
	uint8_t	*t = b + ihl;
	uint32_t sum;

	memset(b, 0, ihl + thl);
	if (a->v6) {
		b[0] = 0x60;
		put16(b + 4, (uint16_t)(thl + plen));
		b[6] = 6;
		b[7] = 64;
		memcpy(b + 8, TCP_APP6, 16);
		memcpy(b + 24, TCP_DST6, 16);
		memcpy(ph, TCP_APP6, 16);
		memcpy(ph + 16, TCP_DST6, 16);
		put32(ph + 32, (uint32_t)(thl + plen));
		ph[36] = ph[37] = ph[38] = 0;
		ph[39] = 6;
		sum = sum_add(0, ph, 40);
	} else {
		b[0] = 0x45;
		put16(b + 2, (uint16_t)(ihl + thl + plen));
		b[8] = 64;
		b[9] = 6;
		memcpy(b + 12, TCP_APP4, 4);
		memcpy(b + 16, TCP_DST4, 4);
		put16(b + 10, (uint16_t)~sum_fold(sum_add(0, b, 20)));
		memcpy(ph, TCP_APP4, 4);
		memcpy(ph + 4, TCP_DST4, 4);
		ph[8] = 0;
		ph[9] = 6;
		put16(ph + 10, (uint16_t)(thl + plen));
		sum = sum_add(0, ph, 12);
	}
	put16(t, TCP_APP_PORT);
	put16(t + 2, TCP_APP_DST_PORT);
	put32(t + 4, a->snd_nxt);
	put32(t + 8, a->rcv_nxt);
	t[12] = (uint8_t)(thl / 4) << 4;
	t[13] = flags;
	put16(t + 14, TCP_APP_WND);
	if (mss_opt) {
		t[20] = 2;
		t[21] = 4;
		put16(t + 22, (uint16_t)a->mss);
	}
	assert_true(plen <= sizeof(b) - ihl - thl);
	if (plen > 0)
		memcpy(t + thl, pl, plen);
	sum = sum_add(sum, t, thl + plen);
	put16(t + 16, (uint16_t)~sum_fold(sum));
	tsnetif_input(b, ihl + thl + plen);
	if (flags & (TCP_APP_SYN | TCP_APP_FIN))
		a->snd_nxt++;
	a->snd_nxt += (uint32_t)plen;
	if (seq_gt(a->snd_nxt, a->snd_max))
		a->snd_max = a->snd_nxt;
}

/* lwIP's ACK: what it has of ours, and its window. */
static void
tcp_app_acked(struct tcp_app *a, const uint8_t *t)
{
	uint32_t ack = get32(t + 8);

	if (seq_gt(ack, a->snd_max))
		fail_msg("lwIP acks %u, beyond the %u sent", ack, a->snd_max);
	if (seq_gt(ack, a->snd_una))
		a->snd_una = ack;
	if (seq_gt(ack, a->snd_nxt))
		a->snd_nxt = ack;	/* rewound too far */
	a->snd_wnd = get16(t + 14);
	if (ack == a->snd_max && a->fin_out)
		a->fin_acked = true;
}

bool
tcp_app_take(struct tcp_app *a, const uint8_t *p, size_t n)
{
	size_t ihl, tl, thl, plen;
	uint32_t sum, seq;
	uint8_t ph[40], flags;
	const uint8_t *t;

	assert_true(n <= a->mtu);
	if (a->v6) {
		assert_int_equal(p[0] >> 4, 6);
		assert_int_equal(p[6], 6);
		ihl = 40;
		tl = 40 + get16(p + 4);
		assert_int_equal(tl, n);
		memcpy(ph, p + 8, 32);
		put32(ph + 32, (uint32_t)(tl - ihl));
		ph[36] = ph[37] = ph[38] = 0;
		ph[39] = 6;
		sum = sum_add(0, ph, 40);
	} else {
		assert_int_equal(p[0], 0x45);
		assert_int_equal(p[9], 6);
		ihl = 20;
		tl = get16(p + 2);
		assert_int_equal(tl, n);
		assert_int_equal(sum_fold(sum_add(0, p, 20)), 0xffff);
		memcpy(ph, p + 12, 8);
		ph[8] = 0;
		ph[9] = 6;
		put16(ph + 10, (uint16_t)(tl - ihl));
		sum = sum_add(0, ph, 12);
	}
	t = p + ihl;
	assert_int_equal(sum_fold(sum_add(sum, t, tl - ihl)), 0xffff);
	assert_int_equal(get16(t), TCP_APP_DST_PORT);
	assert_int_equal(get16(t + 2), TCP_APP_PORT);
	thl = (size_t)(t[12] >> 4) * 4;
	assert_true(thl >= 20 && ihl + thl <= tl);
	plen = tl - ihl - thl;
	flags = t[13];
	seq = get32(t + 4);
	if (flags & TCP_APP_RST) {
		if (!a->rst_ok)
			fail_msg("RST from lwIP after %zu of %zu bytes (MSS %u)",
			    a->got, a->cap, a->mss);
		a->rst_in = true;
		return false;
	}
	if (flags & TCP_APP_SYN) {			/* SYN-ACK */
		assert_true(flags & TCP_APP_ACK);
		a->rcv_nxt = seq + 1;
		a->synced = true;
		tcp_app_acked(a, t);
		return true;
	}
	if (flags & TCP_APP_ACK)
		tcp_app_acked(a, t);
	if (plen > 0) {
		if (plen > a->mss)
			fail_msg("segment of %zu bytes, MSS %u", plen, a->mss);
		if (plen > a->max_seg)
			a->max_seg = (unsigned)plen;
		a->segs++;
		if (seq == a->rcv_nxt) {	/* in order: take it */
			if (a->fin_in)
				fail_msg("%zu bytes after lwIP's FIN", plen);
			assert_true(a->got + plen <= a->cap);
			memcpy(a->data + a->got, t + thl, plen);
			a->got += plen;
			if (a->fin_out)
				a->got_after_fin += plen;
			a->rcv_nxt += (uint32_t)plen;
		}
	}
	if ((flags & TCP_APP_FIN) && seq + plen == a->rcv_nxt && !a->fin_in) {
		a->fin_in = true;
		a->rcv_nxt++;
	}
	return plen > 0 || (flags & TCP_APP_FIN);
}

bool
tcp_app_input(struct tcp_app *a)
{
	uint8_t p[65536];
	ssize_t n;
	bool want = false;

	while ((n = recv(a->tun, p, sizeof(p), MSG_DONTWAIT)) > 0)
		want |= tcp_app_take(a, p, (size_t)n);
	return want;
}

void
tcp_app_upload(struct tcp_app *a, const uint8_t *up, size_t len, bool fin)
{
	size_t off, n, room;

	for (;;) {
		off = a->snd_nxt - a->iss - 1;
		room = a->snd_wnd - (a->snd_nxt - a->snd_una);
		if (a->snd_nxt - a->snd_una >= a->snd_wnd || off > len)
			return;
		if (off == len) {
			if (fin && !a->fin_out) {
				tcp_app_send(a, TCP_APP_FIN | TCP_APP_ACK,
				    false, NULL, 0);
				a->fin_out = true;
			}
			return;
		}
		n = len - off;
		if (n > a->mss)
			n = a->mss;
		if (n > room)
			n = room;
		tcp_app_send(a, TCP_APP_ACK, false, up + off, n);
	}
}

void
tcp_app_rewind(struct tcp_app *a)
{
	a->snd_nxt = a->snd_una;
	if (a->fin_out && !a->fin_acked)
		a->fin_out = false;	/* the FIN goes again too */
}
