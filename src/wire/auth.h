/*
 * Keys of the native protocol: encoding and user ids.  The server's user
 * table and replay cache are server/users.h.
 */
#ifndef TUNSPLIT_AUTH_H
#define TUNSPLIT_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "wire/proto.h"

#define AUTH_KEY_B64_LEN	45	/* base64 of 32 bytes + NUL */

/* Base64 (standard, padded) key -> 32 bytes.  0 or -1. */
int  auth_key_parse(const char *b64, uint8_t key[PROTO_KEY_LEN]);
/* New random key, base64, into out[AUTH_KEY_B64_LEN]. */
void auth_key_generate(char out[AUTH_KEY_B64_LEN]);
/* user id = first 8 bytes of keyed BLAKE2b("tunsplit user id") under key. */
void auth_user_id(const uint8_t key[PROTO_KEY_LEN], uint8_t id[PROTO_USER_ID_LEN]);

#endif
