/*
 * Readiness for systemd (sd_notify(3)'s protocol, without libsystemd):
 * one datagram to the AF_UNIX socket $NOTIFY_SOCKET names, which systemd
 * sets for a Type=notify service.  Without it every call does nothing.
 *
 *   daemon_up        -> notify_ready       READY=1: flows can pass
 *   SIGHUP           -> notify_reloading   RELOADING=1, MONOTONIC_USEC=
 *   reload done      -> notify_ready       (failed or not)
 *   SIGTERM / exit   -> notify_stopping    STOPPING=1, once
 */
#ifndef TUNSPLIT_NOTIFY_H
#define TUNSPLIT_NOTIFY_H

/* Sends state ("KEY=VALUE" lines).  1: no $NOTIFY_SOCKET, nothing sent;
 * 0: sent; -1: an address we cannot use or a failed send (logged). */
int  notify_send(const char *state);
void notify_ready(void);
void notify_reloading(void);
void notify_stopping(void);

#endif
