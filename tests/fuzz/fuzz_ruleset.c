/*
 * Fuzz target: rule-set files (src/rules/rules_set.c).  The first byte
 * picks the set's type, the rest is the file's text.  Whatever loads is
 * asked about every line of the input as a name and as an address.
 *
 * Oracles besides ASan/UBSan: a rejected set comes with a one-line
 * message "f.txt:LINE:COL: ..." whose line exists in the input; in a
 * loaded set of type domain, every line that is a valid name matches.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "rules/rules_set.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
ask(const struct rules_set *s, const char *line, enum rules_set_type type)
{
	char	norm[RULES_NAME_MAX + 1];
	uint8_t	ip[16];

	if (rules_domain_norm(line, norm) &&
	    !rules_domain_match(s->domains, norm) && type == RULES_SET_DOMAIN &&
	    strncmp(line, "keyword:", 8) != 0)
		abort();	/* a name of a domain set that does not match */
	if (inet_pton(AF_INET, line, ip) == 1)
		(void)rules_trie_match(s->cidrs, AF_INET, ip);
	if (inet_pton(AF_INET6, line, ip) == 1)
		(void)rules_trie_match(s->cidrs, AF_INET6, ip);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum rules_set_type	 type;
	struct rules_set	*s;
	char			 err[512], *text, *line, *next;
	unsigned long		 ln;
	size_t			 nlines = 1, i;

	if (size < 1)
		return 0;
	type = (enum rules_set_type)(data[0] % 5);
	memset(err, 0x55, sizeof(err));
	s = rules_set_load_buf("fuzz", "f.txt", (const char *)data + 1,
	    size - 1, type, err, sizeof(err));
	for (i = 1; i < size; i++)
		nlines += data[i] == '\n';
	if (s == NULL) {
		if (memchr(err, '\0', sizeof(err)) == NULL ||
		    strchr(err, '\n') != NULL ||
		    sscanf(err, "f.txt:%lu:", &ln) != 1 || ln < 1 ||
		    ln > nlines)
			abort();
		return 0;
	}
	if ((text = malloc(size)) == NULL)
		abort();
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	for (line = text; line != NULL; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		/* Only whole, plain lines: no comment, no blank, no prefix. */
		if (strpbrk(line, "# \t\r:+") == NULL)
			ask(s, line, type);
	}
	free(text);
	rules_set_free(s);
	return 0;
}
