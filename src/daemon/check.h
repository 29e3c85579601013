/*
 * The files a configuration names, opened and verified before anything
 * runs (tunsplit check, and run before it starts): the server's
 * certificate chain and key (the key must match the certificate), the
 * client's CA file.  One line on stderr per file, "WHO: KEY PATH: ...":
 * "ok, ..." (not when quiet), "warning: ..." (a certificate that expires
 * within 30 days, or has), or the error.
 */
#ifndef TUNSPLIT_CHECK_H
#define TUNSPLIT_CHECK_H

#include <stdbool.h>

struct conf;

/* 0, or -1 when a file cannot be used (reported). */
int check_files(const struct conf *c, const char *who, bool quiet);

#endif
