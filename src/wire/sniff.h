/*
 * Domain recovery from a flow's first bytes: the server name of a TLS
 * ClientHello (RFC 8446 4.1.2, RFC 6066 3), the Host header of an
 * HTTP/1.x request (RFC 9112 3.2), and the ClientHello inside a QUIC
 * client Initial (RFC 9000 17.2.2, RFC 9001 5; sniff_quic.c).
 *
 * Pure functions on what has arrived so far, no I/O; every length is
 * checked against both the bytes at hand and the enclosing length, so
 * any input is safe (fuzz_sniff).  Each returns one of enum sniff_res.
 * A name is reported only when it is a host name: letters, digits and
 * hyphens in dot-separated labels of 1..63 bytes, at most 253 bytes in
 * all (one trailing dot dropped), not all-numeric in its last label (an
 * address literal is no domain); it is written lower case,
 * NUL-terminated.  An out buffer smaller than SNIFF_NAME_MAX + 1 is
 * refused (SNIFF_NOT).
 */
#ifndef TUNSPLIT_SNIFF_H
#define TUNSPLIT_SNIFF_H

#include <stddef.h>
#include <stdint.h>

#define SNIFF_NAME_MAX		253
/* Bytes of HTTP request head read for Host before giving up. */
#define SNIFF_HTTP_MAX		4096
/* Bytes of ClientHello read (over records or CRYPTO frames) before
 * giving up on a server name: past any real hello's SNI. */
#define SNIFF_HELLO_MAX		16384

enum sniff_res {
	SNIFF_FOUND	=  1,	/* a name, in out */
	SNIFF_MORE	=  0,	/* could still hold one: wait for more */
	SNIFF_NONE	= -1,	/* this protocol, but no (valid) name */
	SNIFF_NOT	= -2,	/* not this protocol, or malformed */
};

/* TLS records (possibly several, possibly cut short) carrying a
 * ClientHello.  SNIFF_FOUND as soon as the server_name extension has
 * arrived, even if the hello has not ended yet. */
enum sniff_res	sniff_tls_sni(const uint8_t *p, size_t len, char *out,
		    size_t outlen);

/* A ClientHello handshake message (type, length, body) as it arrives,
 * outside any record: what QUIC's CRYPTO frames carry. */
enum sniff_res	sniff_hello_sni(const uint8_t *p, size_t len, char *out,
		    size_t outlen);

/* An HTTP/1.x request head: the first Host header field's name, port
 * stripped; an IP literal (also [v6]) is SNIFF_NONE.  SNIFF_MORE until
 * the Host line ends or the head ends (SNIFF_NONE); SNIFF_NONE past
 * SNIFF_HTTP_MAX bytes. */
enum sniff_res	sniff_http_host(const uint8_t *p, size_t len, char *out,
		    size_t outlen);

/* TLS, then HTTP, on a TCP flow's first bytes: the best of the two
 * verdicts (FOUND > MORE > NONE > NOT); *kind says which found it
 * ("tls", "http") or NULL. */
enum sniff_res	sniff_stream(const uint8_t *p, size_t len, char *out,
		    size_t outlen, const char **kind);

/* True when s (length n) is a host name as above; writes it lower case
 * to out (outlen > SNIFF_NAME_MAX). */
int		sniff_name_ok(const uint8_t *s, size_t n, char *out,
		    size_t outlen);

/*
 * QUIC.  Only client Initial packets of QUIC version 1 (RFC 9000) and
 * version 2 (RFC 9369) are read; any other version (including version
 * negotiation, which only servers send) is SNIFF_NOT.  Coalesced packets
 * in one datagram are walked; CRYPTO frames may come in any order, with
 * PADDING, PING and ACK frames between them.  A ClientHello larger than
 * one datagram (Chrome's, with a post-quantum key share) needs its next
 * Initial: feed it to the same state (same destination connection ID).
 */
struct sniff_quic;

struct sniff_quic	*sniff_quic_new(void);
void			 sniff_quic_free(struct sniff_quic *);
/* One UDP datagram from the client; SNIFF_MORE asks for the next. */
enum sniff_res		 sniff_quic_feed(struct sniff_quic *, const uint8_t *p,
			    size_t len, char *out, size_t outlen);
/* One datagram alone (a state of its own, freed before returning). */
enum sniff_res		 sniff_quic_sni(const uint8_t *p, size_t len,
			    char *out, size_t outlen);

/* The Initial secrets of RFC 9001 5.2 (and RFC 9369 3.3.1 for v2),
 * client side, for the tests: key 16, iv 12, hp 16 bytes.  0 or -1. */
int			 sniff_quic_keys(uint32_t version, const uint8_t *dcid,
			    size_t dcidlen, uint8_t key[16], uint8_t iv[12],
			    uint8_t hp[16]);
/* The header protection mask of RFC 9001 5.4.3 (5 bytes used). */
int			 sniff_quic_hp_mask(const uint8_t hp[16],
			    const uint8_t sample[16], uint8_t mask[16]);

#define SNIFF_QUIC_V1		0x00000001u
#define SNIFF_QUIC_V2		0x6b3343cfu

#endif /* TUNSPLIT_SNIFF_H */
