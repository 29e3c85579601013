/*
 * HTTP/1.x header lines, for the parsers that read them from hostile
 * peers (dnsstream.c, a DoH server's answers; the server's httpframe.c,
 * a prober's requests and the cover site's answers).  Pure, no I/O.
 */
#ifndef TUNSPLIT_HTTPHDR_H
#define TUNSPLIT_HTTPHDR_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the line l[0..n) (no CRLF) is the field name (any case): then
 * its value, without the blanks around it, is *v[0..*vn). */
bool httphdr_field(const char *l, size_t n, const char *name,
    const char **v, size_t *vn);

#endif
