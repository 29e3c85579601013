/*
 * Private to src/client/: what client.c shares with client_status.c.
 */
#ifndef TUNSPLIT_CLIENT_INT_H
#define TUNSPLIT_CLIENT_INT_H

#include "core/stats.h"

struct conf;
struct flow_env;
struct flow_udp;
struct status_fill;
struct status_rule;
struct status_outbound;

/* What a status snapshot reads of the client. */
struct client_status {
	const struct conf	*conf;
	struct flow_env		*env;
	struct flow_udp		*udp;		/* NULL until set up */
	struct stats_hist	 handshake;	/* flows' and pool's, merged */
	struct status_rule	*rules;		/* the snapshot's, reused */
	size_t			 rules_cap;
	struct status_outbound	*obs;		/* the snapshot's, reused */
	size_t			 obs_cap;
};

/* The client's part of a snapshot (control_role.fill). */
void client_status_fill(struct client_status *cs, struct status_fill *sf);
void client_status_free(struct client_status *cs);

#endif
