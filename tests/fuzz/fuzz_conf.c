/*
 * Fuzz target: the YAML configuration loader.  The input is a config
 * file's text; whatever loads is dumped (to /dev/null) and freed.
 *
 * Oracles besides ASan/UBSan: a rejected config always comes with a
 * one-line, NUL-terminated message; an accepted one has exactly one role.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "core/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct conf *c;
	char err[512];

	if (null == NULL) {
		/* Warnings about the config are expected by the thousand. */
		log_init(LOG_LVL_ERROR, false, "fuzz_conf");
		if ((null = fopen("/dev/null", "w")) == NULL)
			abort();
	}
	memset(err, 0x55, sizeof(err));
	c = conf_load_buf("fuzz.yaml", (const char *)data, size, err,
	    sizeof(err));
	if (c == NULL) {
		if (memchr(err, '\0', sizeof(err)) == NULL || err[0] == '\0' ||
		    strchr(err, '\n') != NULL)
			abort();
		return 0;
	}
	if (c->role != CONF_ROLE_CLIENT && c->role != CONF_ROLE_SERVER)
		abort();
	conf_dump(c, null);
	conf_free(c);
	return 0;
}
