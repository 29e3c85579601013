/*
 * What the configuration tests share (see conftest.h).
 */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "conf/conf.h"
#include "tests/unit/conf/conftest.h"

char	errbuf[1024];

struct conf *
load(const char *yaml)
{
	return conf_load_buf("t.yaml", yaml, strlen(yaml), errbuf,
	    sizeof(errbuf));
}

struct conf *
load_ok(const char *yaml)
{
	struct conf	*c = load(yaml);

	if (c == NULL)
		fail_msg("%s", errbuf);
	return c;
}

void
expect_err(const char *yaml, const char *where, const char *msg)
{
	struct conf	*c = load(yaml);

	if (c != NULL) {
		conf_free(c);
		fail_msg("loaded, expected \"%s%s\"\n--\n%s--", where, msg, yaml);
	}
	if (strncmp(errbuf, where, strlen(where)) != 0 ||
	    strstr(errbuf, msg) == NULL)
		fail_msg("got \"%s\", expected \"%s...%s\"\n--\n%s--",
		    errbuf, where, msg, yaml);
	assert_null(strchr(errbuf, '\n'));
}
