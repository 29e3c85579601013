/*
 * A test-only QUIC client Initial encoder (RFC 9000 17.2.2, RFC 9001 5),
 * built on the same derivations as src/wire/sniff_quic.c (sniff.h), so
 * the unit tests and fuzz_sniff can hand the sniffer real, protected
 * packets with chosen frames inside.
 */
#ifndef TUNSPLIT_TEST_QUICENC_H
#define TUNSPLIT_TEST_QUICENC_H

#include <stddef.h>
#include <stdint.h>

/* Frames (plaintext, padded by the caller) into one protected Initial
 * at out; the packet number is 2 bytes on the wire.  Returns its length,
 * or 0 when out (outlen) is too small or the frames too short to be
 * sampled (pn + frames + tag < 20). */
size_t	quicenc_initial(uint32_t version, const uint8_t *dcid, size_t dcidlen,
	    uint32_t pn, const uint8_t *frames, size_t flen, uint8_t *out,
	    size_t outlen);

/* A CRYPTO frame at out: type, offset, length (2-byte varints), data. */
size_t	quicenc_crypto(uint8_t *out, uint32_t off, const uint8_t *data,
	    size_t n);

#endif
