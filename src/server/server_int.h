/*
 * Private to src/server/: what server.c shares with server_status.c.
 */
#ifndef TUNSPLIT_SERVER_INT_H
#define TUNSPLIT_SERVER_INT_H

struct conf;
struct sess_env;
struct status_fill;

/* The server's part of a snapshot (control_role.fill). */
void server_status_fill(struct sess_env *env, const struct conf *c,
    struct status_fill *sf);

#endif
