/*
 * A fake app for the client TCP flow tests: it speaks TCP to lwIP through
 * tsnetif_input() and reads what lwIP writes to the TUN (one end of a
 * SOCK_SEQPACKET socketpair), from APP4/APP6 port TCP_APP_PORT to
 * DST4/DST6 port TCP_APP_DST_PORT.  Every packet lwIP sends is checked:
 * length, IP and TCP checksums, within the TUN MTU and the app's MSS.
 * No window scaling, no SACK, no timestamps; the app's window is
 * TCP_APP_WND.
 */
#ifndef TUNSPLIT_TCP_APP_H
#define TUNSPLIT_TCP_APP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TCP_APP_PORT		40000
#define TCP_APP_DST_PORT	443
#define TCP_APP_WND		65535

/* TCP flags */
#define TCP_APP_FIN	0x01
#define TCP_APP_SYN	0x02
#define TCP_APP_RST	0x04
#define TCP_APP_ACK	0x10

extern const uint8_t TCP_APP4[4], TCP_DST4[4], TCP_APP6[16], TCP_DST6[16];

struct tcp_app {
	int		 v6;
	unsigned	 mss;		/* announced in the SYN */
	unsigned	 mtu;		/* the TUN's */
	int		 tun;		/* the app's end of the TUN */
	uint32_t	 iss;		/* our initial sequence number */
	uint32_t	 snd_nxt;	/* our next sequence number */
	uint32_t	 snd_una;	/* the oldest lwIP has not acked */
	uint32_t	 snd_max;	/* the highest snd_nxt so far */
	uint32_t	 snd_wnd;	/* lwIP's window, from its last ACK */
	uint32_t	 rcv_nxt;	/* lwIP's next byte we expect */
	bool		 synced, fin_in, fin_out, fin_acked;
	bool		 rst_in;	/* lwIP reset the connection */
	bool		 rst_ok;	/* else an RST fails the test */
	size_t		 got, cap;	/* payload taken in order, into data */
	uint8_t		*data;
	size_t		 got_after_fin;	/* of got: after our FIN went */
	unsigned	 segs, max_seg;
};

/* Zeroed, iss 1000, room for cap bytes from lwIP (freed by the caller:
 * free(a->data)). */
void	tcp_app_init(struct tcp_app *a, int v6, unsigned mss, unsigned mtu,
	    int tun, size_t cap);
/* Sends one segment: flags, the MSS option or not, payload. */
void	tcp_app_send(struct tcp_app *a, uint8_t flags, bool mss_opt,
	    const uint8_t *pl, size_t plen);
/* Checks one packet lwIP wrote and takes its payload in.  true when it
 * carried something that wants an ACK. */
bool	tcp_app_take(struct tcp_app *a, const uint8_t *p, size_t n);
/* Takes every packet waiting on the TUN; whether any wants an ACK. */
bool	tcp_app_input(struct tcp_app *a);
/* Sends up[snd_nxt - iss - 1 ..] as far as lwIP's window allows, in
 * segments of at most the MSS; the FIN after the last byte when fin. */
void	tcp_app_upload(struct tcp_app *a, const uint8_t *up, size_t len,
	    bool fin);
/* Go back to the oldest unacked byte (lwIP dropped a segment). */
void	tcp_app_rewind(struct tcp_app *a);

#endif
