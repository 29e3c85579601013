/*
 * HKDF (RFC 5869) over OpenSSL's KDF, and TLS 1.3's HKDF-Expand-Label
 * (RFC 8446 7.1) with an empty context: QUIC's initial keys
 * (wire/sniff_quic.c) and the next keys of a KeyUpdate on a stream whose
 * records we seal (tls/outer_seal.c).  digest is OpenSSL's name of the
 * hash ("SHA256", or EVP_MD_get0_name's).  Each returns 0, or -1.
 */
#ifndef TUNSPLIT_CORE_HKDF_H
#define TUNSPLIT_CORE_HKDF_H

#include <stddef.h>
#include <stdint.h>

int hkdf_extract(const char *digest, const uint8_t *salt, size_t saltlen,
    const uint8_t *key, size_t keylen, uint8_t *out, size_t outlen);
int hkdf_expand_label(const char *digest, const uint8_t *secret,
    size_t secretlen, const char *label, uint8_t *out, size_t outlen);

#endif
