/* HTTP/1.x header lines (see httphdr.h). */
#include "config.h"

#include "wire/httphdr.h"

#include <string.h>
#include <strings.h>

bool
httphdr_field(const char *l, size_t n, const char *name, const char **v,
    size_t *vn)
{
	size_t	k = strlen(name);

	if (n <= k || l[k] != ':' || strncasecmp(l, name, k) != 0)
		return false;
	l += k + 1;
	n -= k + 1;
	while (n > 0 && (*l == ' ' || *l == '\t')) {
		l++;
		n--;
	}
	while (n > 0 && (l[n - 1] == ' ' || l[n - 1] == '\t'))
		n--;
	*v = l;
	*vn = n;
	return true;
}
