/*
 * What the configuration tests share: loading a YAML text as "t.yaml"
 * and checking the error it gives.
 */
#ifndef TUNSPLIT_TESTS_CONFTEST_H
#define TUNSPLIT_TESTS_CONFTEST_H

struct conf;

/* The last load's error message. */
extern char	errbuf[1024];

/* yaml loaded as the file "t.yaml"; NULL with errbuf set. */
struct conf	*load(const char *yaml);

/* yaml, which must load: a failure shows the error. */
struct conf	*load_ok(const char *yaml);

/* yaml must fail with an error that starts with where and contains msg,
 * on one line. */
void		 expect_err(const char *yaml, const char *where,
		    const char *msg);

#endif
