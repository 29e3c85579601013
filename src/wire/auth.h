/*
 * The only module that sees keys: key encoding, user ids, the server's user
 * table and replay cache.  Keys are wiped with sodium_memzero on free.
 */
#ifndef TUNSPLIT_AUTH_H
#define TUNSPLIT_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "wire/proto.h"

struct conf;

#define AUTH_KEY_B64_LEN	45	/* base64 of 32 bytes + NUL */

/* Base64 (standard, padded) key -> 32 bytes.  0 or -1. */
int  auth_key_parse(const char *b64, uint8_t key[PROTO_KEY_LEN]);
/* New random key, base64, into out[AUTH_KEY_B64_LEN]. */
void auth_key_generate(char out[AUTH_KEY_B64_LEN]);
/* user id = first 8 bytes of keyed BLAKE2b("tunsplit user id") under key. */
void auth_user_id(const uint8_t key[PROTO_KEY_LEN], uint8_t id[PROTO_USER_ID_LEN]);

enum auth_result {
	AUTH_OK = 0,
	AUTH_UNKNOWN_USER = -1,
	AUTH_BAD_MAC = -2,
	AUTH_STALE = -3,
	AUTH_REPLAY = -4,
};

struct auth;
struct auth *auth_new(const struct conf *c);	/* server users */
void auth_free(struct auth *a);
/* Checks a complete header (hdr/len, already parsed into r).  On AUTH_OK,
 * *user is the index of the user in conf->server.users. */
int  auth_check(struct auth *a, const uint8_t *hdr, size_t len,
    const struct proto_req *r, uint64_t now_s, size_t *user);
/* Replaces the user table (keys) and the time window with c's; the replay
 * cache is kept.  Until the next reload, user indices (auth_check's
 * *user) refer to c->server.users.  0, or -1 (logged; nothing changed). */
int  auth_reload(struct auth *a, const struct conf *c);
/* Name of user index user of the current table ("?" if out of range). */
const char *auth_user_name(const struct auth *a, size_t user);
size_t auth_nusers(const struct auth *a);
const char *auth_result_str(int res);

#endif
