/*
 * ts_quic: a QUIC client's first flight, for e2e_sniff.sh.  A TLS
 * ClientHello with the given SNI (OpenSSL's client into a memory BIO),
 * carried in QUIC v1 client Initials built by the test encoder
 * (tests/unit/quicenc.c), each padded to 1200 bytes, sent from one UDP
 * socket to HOST PORT; with --split the hello spans two datagrams, as a
 * browser's with a post-quantum key share does.  A UDP echo server must
 * send every datagram back byte for byte (checked), so the datagrams
 * are known to have crossed the tunnel intact.
 *
 *   ts_quic HOST PORT SNI [--split]
 *
 * Exit 0 when every echo matched, 1 otherwise.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/ssl.h>

#include "tests/unit/quicenc.h"
#include "wire/sniff.h"

static size_t
hello(const char *sni, uint8_t *out, size_t outlen)
{
	uint8_t	 rec[8192];
	SSL_CTX	*ctx = SSL_CTX_new(TLS_client_method());
	SSL	*ssl = ctx != NULL ? SSL_new(ctx) : NULL;
	BIO	*rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
	int	 n;
	size_t	 rlen;

	if (ssl == NULL || rb == NULL || wb == NULL)
		exit(1);
	SSL_set_bio(ssl, rb, wb);
	SSL_set_tlsext_host_name(ssl, sni);
	(void)SSL_connect(ssl);
	n = BIO_read(wb, rec, sizeof(rec));
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	if (n < 5 || rec[0] != 22)
		exit(1);
	rlen = (size_t)rec[3] << 8 | rec[4];
	if (rlen + 5 != (size_t)n || rlen > outlen)
		exit(1);
	memcpy(out, rec + 5, rlen);
	return rlen;
}

static size_t
initial(uint32_t pn, uint32_t off, const uint8_t *hs, size_t n, uint8_t *out,
    size_t outlen)
{
	static const uint8_t	dcid[8] = { 0x5a, 0x1f, 2, 3, 4, 5, 6, 7 };
	uint8_t			fr[1400];
	size_t			f;

	memset(fr, 0, sizeof(fr));
	if (n > 1100)
		exit(1);
	f = quicenc_crypto(fr, off, hs, n);
	(void)f;
	/* PADDING (zeros) to 1200 bytes on the wire. */
	return quicenc_initial(SNIFF_QUIC_V1, dcid, sizeof(dcid), pn, fr,
	    1200 - 40, out, outlen);
}

int
main(int argc, char **argv)
{
	uint8_t			hs[4096], dg[2][1500], back[1500];
	size_t			hl, n[2], nd, cut, i;
	struct sockaddr_in	sin;
	struct sockaddr_in6	sin6;
	struct pollfd		pfd;
	ssize_t			r;
	int			fd, af;

	if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "--split"))) {
		fprintf(stderr, "usage: ts_quic HOST PORT SNI [--split]\n");
		return 2;
	}
	hl = hello(argv[3], hs, sizeof(hs));
	if (argc == 5) {
		cut = hl / 3;
		n[0] = initial(0, 0, hs, cut, dg[0], sizeof(dg[0]));
		n[1] = initial(1, (uint32_t)cut, hs + cut, hl - cut, dg[1],
		    sizeof(dg[1]));
		nd = 2;
	} else {
		n[0] = initial(0, 0, hs, hl, dg[0], sizeof(dg[0]));
		nd = 1;
	}
	memset(&sin, 0, sizeof(sin));
	memset(&sin6, 0, sizeof(sin6));
	if (inet_pton(AF_INET, argv[1], &sin.sin_addr) == 1) {
		af = AF_INET;
		sin.sin_family = AF_INET;
		sin.sin_port = htons((uint16_t)atoi(argv[2]));
	} else if (inet_pton(AF_INET6, argv[1], &sin6.sin6_addr) == 1) {
		af = AF_INET6;
		sin6.sin6_family = AF_INET6;
		sin6.sin6_port = htons((uint16_t)atoi(argv[2]));
	} else
		return 2;
	if ((fd = socket(af, SOCK_DGRAM, 0)) < 0 ||
	    connect(fd, af == AF_INET ? (struct sockaddr *)&sin :
	    (struct sockaddr *)&sin6, af == AF_INET ? sizeof(sin) :
	    sizeof(sin6)) < 0) {
		perror("ts_quic: socket");
		return 1;
	}
	for (i = 0; i < nd; i++) {
		if (n[i] == 0 || send(fd, dg[i], n[i], 0) != (ssize_t)n[i]) {
			perror("ts_quic: send");
			return 1;
		}
	}
	for (i = 0; i < nd; i++) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 10000) != 1 ||
		    (r = recv(fd, back, sizeof(back), 0)) < 0) {
			fprintf(stderr, "ts_quic: no echo for datagram %zu\n",
			    i + 1);
			return 1;
		}
		if ((size_t)r != n[i] || memcmp(back, dg[i], n[i]) != 0) {
			fprintf(stderr, "ts_quic: echo %zu differs\n", i + 1);
			return 1;
		}
	}
	printf("ts_quic: %zu Initial%s (%zu-byte hello, SNI %s) echoed "
	    "intact\n", nd, nd > 1 ? "s" : "", hl, argv[3]);
	close(fd);
	return 0;
}
