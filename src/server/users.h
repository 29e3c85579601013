/*
 * The server's user table and replay cache: the only place on the server
 * that holds users' keys (wiped with sodium_memzero on free).
 */
#ifndef TUNSPLIT_USERS_H
#define TUNSPLIT_USERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/proto.h"

struct conf;

enum users_result {
	USERS_OK = 0,
	USERS_UNKNOWN = -1,
	USERS_BAD_MAC = -2,
	USERS_STALE = -3,
	USERS_REPLAY = -4,
	USERS_V1 = -5,		/* version 1 header, server.accept_v1 off */
};

struct users;
struct users *users_new(const struct conf *c);	/* server users */
void users_free(struct users *a);
/* Checks a complete header (hdr/len, already parsed into r) that came on
 * the TLS connection whose exporter value (PROTO_BIND_LABEL) is
 * bind[PROTO_BIND_LEN] (NULL: none, only a version 1 header can pass).
 * A version 1 header is refused unless server.accept_v1.  On USERS_OK,
 * *user is the index of the user in conf->server.users. */
int  users_check(struct users *a, const uint8_t *hdr, size_t len,
    const struct proto_req *r, const uint8_t *bind, uint64_t now_s,
    size_t *user);
/* The same, also copying the user's name into name[namelen] under the
 * table's lock: another thread's reload cannot come in between. */
int  users_check_name(struct users *a, const uint8_t *hdr, size_t len,
    const struct proto_req *r, const uint8_t *bind, uint64_t now_s,
    size_t *user, char *name, size_t namelen);
/* Replaces the user table (keys), the time window and accept_v1 with c's; the replay
 * cache is kept.  Until the next reload, user indices (users_check's
 * *user) refer to c->server.users.  0, or -1 (logged; nothing changed). */
int  users_reload(struct users *a, const struct conf *c);
/* Name of user index user of the current table ("?" if out of range). */
const char *users_name(const struct users *a, size_t user);
size_t users_count(const struct users *a);
const char *users_result_str(int res);

/* A user's limits (0: none): users[idx] when idx names that user in c
 * (a reload may have changed the table), or with trojan the password's
 * entry trojan_passwords[idx]; what they leave unset (or an idx out of
 * range) comes from server.max_conns_per_user and max_udp_per_user. */
void users_limits(const struct conf *c, bool trojan, size_t idx,
    const char *name, unsigned *max_conns, unsigned *max_udp);

#endif
